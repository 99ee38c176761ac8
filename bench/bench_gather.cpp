// The minibatch gather of an image training set (issue 21): index_select on the float32 images
// against ByteRows (data/byte_rows.h: uint8 rows widened in one pass), interleaved rounds, same
// random indices for both, on the training split a config loads (App. H.1: 50,000 Fashion-MNIST
// images, batch 500).
//   bench_gather CONFIG [--set key=value ...] [--threads 2] [--rounds 7] [--reps 400] [--batch 500]
// Prints per round the microseconds per gather of both, then min / median of each and their ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <cxxopts.hpp>
#include <torch/torch.h>

#include "config/experiment_config.h"
#include "data/byte_rows.h"
#include "data/load.h"

int main(int argc, char** argv) {
  using namespace sgmcmc;
  cxxopts::Options cli("bench_gather", "float32 vs uint8 minibatch gather");
  cli.add_options()("config", "config file", cxxopts::value<std::string>())(
      "threads", "intra-op threads", cxxopts::value<int>()->default_value("2"))(
      "rounds", "interleaved rounds", cxxopts::value<int>()->default_value("7"))(
      "reps", "gathers per round and path", cxxopts::value<int>()->default_value("400"))(
      "batch", "rows per gather", cxxopts::value<int64_t>()->default_value("500"))(
      "set", "key=value config override (repeatable)", cxxopts::value<std::vector<std::string>>()->default_value({}));
  cli.parse_positional({"config"});
  const auto a = cli.parse(argc, argv);
  torch::set_num_threads(a["threads"].as<int>());
  const auto config = load_config(a["config"].as<std::string>(), a["set"].as<std::vector<std::string>>());
  const auto data = load_dataset(config.data, config.seed);
  const auto& x = data.train.inputs;
  const auto rows = ByteRows::of(x);
  if (!rows) {
    std::fprintf(stderr, "the training inputs are not pixels (k/255 or k): no ByteRows\n");
    return 1;
  }
  const int64_t n = x.size(0), batch = a["batch"].as<int64_t>();
  const int reps = a["reps"].as<int>();
  std::printf("train %lld rows x %lld values, batch %lld, %d threads\n", static_cast<long long>(n),
              static_cast<long long>(x.numel() / n), static_cast<long long>(batch), torch::get_num_threads());
  std::vector<torch::Tensor> idx;
  for (int i = 0; i < reps; ++i) idx.push_back(torch::randint(0, n, {batch}, torch::kInt64));
  auto time = [&](bool bytes) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& i : idx) {
      auto b = bytes ? rows->index_select(i) : x.index_select(0, i);
      (void)b;
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
  };
  time(false), time(true);  // warm-up
  std::vector<double> f, u;
  for (int r = 0; r < a["rounds"].as<int>(); ++r) {
    f.push_back(time(false));
    u.push_back(time(true));
    std::printf("round %d: float32 %.1f us, uint8 %.1f us\n", r, f.back(), u.back());
  }
  std::sort(f.begin(), f.end()), std::sort(u.begin(), u.end());
  std::printf("float32 min %.1f median %.1f us; uint8 min %.1f median %.1f us; median ratio %.2f\n", f[0],
              f[f.size() / 2], u[0], u[u.size() / 2], f[f.size() / 2] / u[u.size() / 2]);
  return 0;
}
