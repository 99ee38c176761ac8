// The sampler update alone on one flat parameter buffer.
//
// For each sampler: a float32 buffer of P parameters with a fixed gradient, `steps` calls of
// Sampler::step() (after warm-up), timed with the device synchronised. Bytes per step count the
// minimal traffic of a fused update: every state tensor and the parameters read and written once,
// the gradient read once (noise generated in registers costs no traffic):
//   bytes = 2·(P + state elements)·4 + P·4.
// The reference bandwidth is a device-to-device copy of the same buffer (read + write), so
// "% of copy" says how close the update gets to the memory system's practical peak.
//
// `--path reference` times the per-parameter ATen path (Sampler::set_fused(false): the same
// arithmetic and the same Philox noise, materialised as a tensor, as separate ATen ops).
//
//   bench_update [--params 10000000] [--steps 20] [--device cpu|cuda] [--samplers sgld,sghmc,...]
//                [--threads N] [--path fused|reference] [--set key=value ...] [--fold λ] [--evict MB]
//                [--json FILE]
// `--evict MB` (CPU) writes and reads a buffer of MB megabytes before each timed step, outside the
// timing, so that the step's buffers come from DRAM, as they do inside a training step
// (FNN-800's update, 1.28M parameters, takes ~200 µs more there than on warm caches).
// `--fold λ` folds a Gaussian prior's gradient λθ over the whole buffer into every step
// (Sampler::fold_prior_into_next_step): the kernel reads g + λθ.
// `--set` adds a sampler option to every sampler (e.g. --set integrator=ssi).
#include <ATen/Parallel.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <cstring>
#include <vector>

#include <cxxopts.hpp>
#include <torch/torch.h>

#include "compat.h"
#include "core/option_map.h"
#include "samplers/registry.h"

using namespace sgmcmc;

namespace {

void sync(const torch::Device& d) {
#ifdef SGMCMC_WITH_CUDA
  if (d.is_cuda()) torch::cuda::synchronize();
#else
  (void)d;
#endif
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Options per sampler: step sizes small enough that the buffer stays finite over the run.
OptionMap options_for(const std::string& name) {
  OptionMap o("bench");
  o.set("lr", "1e-6");
  if (name == "sghmc" || name == "sghmc-naive" || name == "sgd-momentum") o.set("alpha", "0.01");
  if (name == "santa") o.set("burnin", "1000000");  // stay in the exploration stage (the costlier one)
  return o;
}

// Writes and then reads every cache line of `buf` (on the intra-op threads, as the step's products
// would), so that the caches hold it rather than the sampler's buffers.
void evict_caches(std::vector<unsigned char>& buf, int round) {
  const int64_t n = static_cast<int64_t>(buf.size());
  std::atomic<int64_t> sum{0};
  at::parallel_for(0, n, 1 << 20, [&](int64_t b, int64_t e) {
    std::memset(buf.data() + b, round & 0xff, static_cast<size_t>(e - b));
    int64_t s = 0;
    for (int64_t i = b; i < e; i += 64) s += buf[static_cast<size_t>(i)];
    sum += s;
  });
  static volatile int64_t sink;  // the reads have a use
  sink = sum.load();
}

}  // namespace

int run(int argc, char** argv) {
  cxxopts::Options cli("bench_update", "Sampler update alone on a flat buffer: time per step and GB/s.");
  cli.add_options()
      ("params", "parameters in the buffer", cxxopts::value<int64_t>()->default_value("10000000"))
      ("steps", "timed steps per sampler", cxxopts::value<int>()->default_value("20"))
      ("device", "cpu or cuda", cxxopts::value<std::string>()->default_value("cpu"))
      ("samplers", "comma-separated names", cxxopts::value<std::string>()->default_value("sgld,sghmc,msgnht,santa,sgd"))
      ("threads", "torch intra-op threads (0 = default)", cxxopts::value<int>()->default_value("0"))
      ("path", "fused or reference (ATen ops, same noise)", cxxopts::value<std::string>()->default_value("fused"))
      ("set", "sampler option key=value (repeatable)", cxxopts::value<std::vector<std::string>>()->default_value({}))
      ("fold", "fold the prior's gradient λθ into each step with this λ (0: no fold)", cxxopts::value<double>()->default_value("0"))
      ("evict", "CPU: before each timed step, write and read a buffer of this many MB (untimed), so the step's buffers come from memory as inside a training step (0: none)", cxxopts::value<int>()->default_value("0"))
      ("json", "append one JSON line per sampler to FILE", cxxopts::value<std::string>()->default_value(""))
      ("h,help", "help");
  auto r = cli.parse(argc, argv);
  if (r.count("help")) { std::cout << cli.help() << "\n"; return 0; }
  const int64_t P = r["params"].as<int64_t>();
  const int steps = r["steps"].as<int>();
  const std::string path = r["path"].as<std::string>();
  if (path != "fused" && path != "reference") {
    std::cerr << "bench_update: --path must be fused or reference, got '" << path << "'\n";
    return 2;
  }
  if (r["threads"].as<int>() > 0) torch::set_num_threads(r["threads"].as<int>());
  torch::Device dev(r["device"].as<std::string>());
  torch::NoGradGuard ng;

  auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(dev);
  auto gen = compat::make_generator(dev, 1);

  // Reference: copy bandwidth of the same size.
  auto a = torch::ones({P}, opts), b = torch::empty({P}, opts);
  b.copy_(a); sync(dev);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) b.copy_(a);
  sync(dev);
  const double copy_gbs = 2.0 * 4.0 * P * steps / seconds_since(t0) / 1e9;
  std::cout << "device " << dev << ", " << P << " parameters, " << torch::get_num_threads() << " threads; copy "
            << std::fixed << std::setprecision(1) << copy_gbs << " GB/s\n";

  std::vector<unsigned char> evict(static_cast<size_t>(r["evict"].as<int>()) << 20);
  if (!evict.empty() && !dev.is_cpu()) {
    std::cerr << "bench_update: --evict is for the CPU\n";
    return 2;
  }
  std::ofstream json;
  if (!r["json"].as<std::string>().empty()) json.open(r["json"].as<std::string>(), std::ios::app);
  std::stringstream names(r["samplers"].as<std::string>());
  for (std::string name; std::getline(names, name, ',');) {
    auto theta = torch::zeros({P}, opts);
    theta.mutable_grad() = torch::randn({P}, opts) * 0.01;
    OptionMap sopts = options_for(name);
    for (const auto& kv : r["set"].as<std::vector<std::string>>()) {
      if (kv.empty()) continue;  // cxxopts' empty default
      const auto eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "bench_update: --set expects key=value, got '" << kv << "'\n";
        return 2;
      }
      sopts.set(kv.substr(0, eq), kv.substr(eq + 1));
    }
    auto sampler = make_sampler(name, {ParamGroup({theta})}, sopts, gen);
    sampler->set_fused(path == "fused");
    // State size from the checkpoint archive (its P-sized tensors dominate; round to multiples of P).
    torch::serialize::OutputArchive archive;
    sampler->save(archive);
    std::ostringstream blob;
    archive.save_to(blob);
    const int64_t state_elems = static_cast<int64_t>(std::llround(blob.str().size() / 4.0 / P)) * P;
    const double fold = r["fold"].as<double>();
    const auto one_step = [&] {
      if (fold != 0) sampler->fold_prior_into_next_step({{kernels::PriorFoldSegment{0, P, fold}}});
      sampler->step();
    };
    for (int i = 0; i < 3; ++i) one_step();
    sync(dev);
    double dt = 0;
    if (evict.empty()) {
      t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) one_step();
      sync(dev);
      dt = seconds_since(t0) / steps;
    } else {
      for (int i = 0; i < steps; ++i) {
        evict_caches(evict, i);
        t0 = std::chrono::steady_clock::now();
        one_step();
        dt += seconds_since(t0);
      }
      dt /= steps;
    }
    const double bytes = 2.0 * 4.0 * (P + state_elems) + 4.0 * P;
    const double gbs = bytes / dt / 1e9;
    std::cout << std::left << std::setw(10) << name << std::setw(10) << path << std::right << std::setprecision(3) << " " << dt * 1e3
              << " ms/step  " << std::setprecision(1) << gbs << " GB/s  " << 100.0 * gbs / copy_gbs
              << " % of copy  (state " << state_elems / P << "×P)\n";
    if (json.is_open())
      json << "{\"bench\": \"update\", \"sampler\": \"" << name << "\", \"path\": \"" << path << "\", \"device\": \"" << dev << "\", \"params\": " << P
           << ", \"threads\": " << torch::get_num_threads() << ", \"ms_per_step\": " << dt * 1e3
           << ", \"gb_per_s\": " << gbs << ", \"copy_gb_per_s\": " << copy_gbs << "}\n";
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // one line: LibTorch's messages carry a backtrace after it
    const std::string what = e.what();
    std::cerr << "bench_update: " << what.substr(0, what.find('\n')) << "\n";
    return 1;
  }
}
