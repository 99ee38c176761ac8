// What one kernel node costs inside a replayed CUDA graph, measured on the device's own clock (CUPTI,
// bench/kernel_trace.h). Each row captures a graph of --nodes launches of one kind, replays it --reps
// times and reports, as medians over the replays, a node's duration (its first block's start to its last
// block's end), the gap between one node's end and the next one's start, and the graph's span per node:
//   - probe kernels that do nothing (bench/launch_probe.h) at the shapes of the step's own kernels: 1 × 32
//     and 48 or 132 blocks of 512 threads, with 20 KB of dynamic shared memory, with 1.5 or 4 KB of
//     parameters, alternating 20 and 100 KB of shared memory (a carveout change between nodes), and with
//     1, 4 or 16 dependent loads a thread (what a round trip to L2 costs inside a node);
//   - the fused MLP pass's last launch as column blocks (kernels/cuda_mlp/mlp_tail.h) at App. H.1's shape (with the
//     priors' λ and the loss: 4 + 4 column blocks, 39 λ_W W blocks, the nll's; without λ; the output layer
//     alone) and FNN-800's: 8.8 µs of H.1's replayed step (bench_step --kernel-trace).
// The differences between the rows say which part of a launch costs: the launch shape, the parameters,
// the shared memory configuration or the loads.
//
//   bench_launch [--nodes 10] [--reps 50] [--rows NAME,NAME…] [--json FILE]
// A CUDA build with CUPTI (-DSGMCMC_CUDA=ON -DSGMCMC_BENCH=ON, CMake finding CUDA::cupti); elsewhere it says so.
#include <ATen/Context.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "kernels/cuda_mlp/mlp_tail.h"
#include "kernel_trace.h"   // bench/
#include "launch_probe.h"   // bench/

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#if !defined(SGMCMC_LAUNCH_PROBE)
namespace sgmcmc::bench {
bool launch_probe_available() { return false; }
void launch_probe_init() {}
void launch_probe(const ProbeLaunch&) {}
}  // namespace sgmcmc::bench
#endif

using namespace sgmcmc;

#if defined(SGMCMC_WITH_CUDA)
namespace {

struct Row {
  std::string name;
  std::function<void(int node)> launch;  // node i of the graph
};

kernels::MlpLayerTensors layer(int64_t out, int64_t in, const torch::TensorOptions& o, bool priors) {
  kernels::MlpLayerTensors l;
  l.weight = torch::randn({out, in}, o), l.bias = torch::randn({out}, o);
  l.weight_grad = torch::randn({out, in}, o), l.bias_grad = torch::randn({out}, o);
  if (priors) l.weight_lambda = torch::rand({}, o) + 0.5, l.bias_lambda = torch::rand({}, o) + 0.5;
  return l;
}

// The last launch's inputs at a network's shape (n rows, outs outputs, hidden layers (out, in)), on CUDA.
kernels::MlpTailArgs tail_args(int64_t n, int64_t outs, const std::vector<std::pair<int64_t, int64_t>>& hidden,
                               bool priors) {
  const auto o = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA);
  kernels::MlpTailArgs t;
  const int64_t hdim = hidden.empty() ? 100 : hidden.back().first;
  t.g_out = torch::randn({n, outs}, o), t.h_last = torch::rand({n, hdim}, o);
  t.out = layer(outs, hdim, o, priors);
  for (const auto& [out, in] : hidden) {
    t.g_hidden.push_back(torch::randn({n, out}, o));
    t.hidden.push_back(layer(out, in, o, priors));
  }
  t.row_nll = torch::rand({n}, o);
  t.loss_sum = torch::zeros({}, o.dtype(torch::kFloat64)), t.loss_weight = 1.0;
  return t;
}

}  // namespace
#endif

int main(int argc, char** argv) {
  cxxopts::Options cli("bench_launch", "What a kernel node costs inside a replayed CUDA graph (CUPTI).");
  cli.add_options()("nodes", "launches in each row's graph", cxxopts::value<int>()->default_value("10"))(
      "reps", "replays of each graph", cxxopts::value<int>()->default_value("50"))(
      "rows", "only these rows (comma-separated names; default: all)", cxxopts::value<std::string>()->default_value(""))(
      "json", "append one JSON line a row to FILE", cxxopts::value<std::string>()->default_value(""))("h,help", "help");
  const auto r = cli.parse(argc, argv);
  if (r.count("help")) {
    std::cout << cli.help() << "\n";
    return 0;
  }
  if (!bench::launch_probe_available() || !bench::kernel_trace_available() || !torch::cuda::is_available()) {
    std::cerr << "bench_launch: needs a CUDA build with CUPTI and a GPU\n";
    return 2;
  }
#if defined(SGMCMC_WITH_CUDA)
  const int nodes = r["nodes"].as<int>(), reps = r["reps"].as<int>();
  std::vector<std::string> only;
  {
    std::stringstream ss(r["rows"].as<std::string>());
    for (std::string s; std::getline(ss, s, ',');)
      if (!s.empty()) only.push_back(s);
  }
  bench::kernel_trace_start();  // before any capture: the graphs' nodes are traced when replayed
  bench::launch_probe_init();
  torch::manual_seed(1);

  using P = bench::ProbeLaunch;
  std::vector<Row> rows;
  const auto probe = [&](const std::string& name, std::vector<P> seq) {
    rows.push_back({name, [seq](int i) { bench::launch_probe(seq[static_cast<size_t>(i) % seq.size()]); }});
  };
  probe("empty 1x32", {P{"", 1, 32}});
  probe("empty 48x512", {P{"", 48, 512}});
  probe("empty 132x512", {P{"", 132, 512}});
  probe("48x512 smem 20KB", {P{"", 48, 512, 20 * 1024}});
  probe("48x512 params 1.5KB", {P{"", 48, 512, 0, 1536}});
  probe("48x512 params 4KB", {P{"", 48, 512, 0, 4000}});
  probe("48x512 smem 20KB/100KB alternating", {P{"", 48, 512, 20 * 1024}, P{"", 48, 512, 100 * 1024}});
  probe("48x512 smem 20KB params 1.5KB", {P{"", 48, 512, 20 * 1024, 1536}});
  probe("48x512 1 load", {P{"", 48, 512, 0, 16, 1}});
  probe("48x512 4 loads", {P{"", 48, 512, 0, 16, 4}});
  probe("48x512 16 loads", {P{"", 48, 512, 0, 16, 16}});
  probe("1x32 16 loads", {P{"", 1, 32, 0, 16, 16}});

  const auto tail = [&](const std::string& name, kernels::MlpTailArgs t) {
    auto args = std::make_shared<kernels::MlpTailArgs>(std::move(t));
    rows.push_back({name, [args](int) {
                      if (!kernels::mlp_tail_cuda(*args).defined())
                        throw std::runtime_error("bench_launch: the column blocks do not take these tensors");
                    }});
  };
  tail("tail H.1", tail_args(500, 10, {{100, 784}}, true));
  tail("tail H.1 no priors", tail_args(500, 10, {{100, 784}}, false));
  tail("tail H.1 output layer only", tail_args(500, 10, {}, true));
  tail("tail FNN-800", tail_args(100, 10, {{800, 784}, {800, 800}}, true));

  std::cout << std::fixed << std::setprecision(2) << "bench_launch: " << nodes << " nodes a graph, " << reps
            << " replays; medians over the replays, us (node: first block's start to last block's end; gap: "
               "a node's end to the next node's start; per node: the graph's span / nodes)\n"
            << "  " << std::left << std::setw(40) << "row" << std::right << std::setw(9) << "node" << std::setw(9)
            << "gap" << std::setw(10) << "per node" << "\n";
  const auto stream = c10::cuda::getStreamFromPool();
  const c10::cuda::CUDAStreamGuard guard(stream);
  for (const auto& row : rows) {
    if (!only.empty() && std::find(only.begin(), only.end(), row.name) == only.end()) continue;
    for (int i = 0; i < 2; ++i) row.launch(i);  // eager once first: allocations, function attributes
    torch::cuda::synchronize();
    at::cuda::CUDAGraph graph;
    graph.capture_begin();
    for (int i = 0; i < nodes; ++i) row.launch(i);
    graph.capture_end();
    for (int i = 0; i < 3; ++i) graph.replay();
    torch::cuda::synchronize();
    (void)bench::kernel_trace_take();
    for (int i = 0; i < reps; ++i) graph.replay();
    torch::cuda::synchronize();
    const auto acts = bench::kernel_trace_take();
    auto j = bench::summarise_kernel_trace(acts, 1, /*print=*/false);
    // the nodes after the first (the first one's gap is to the previous replay)
    std::vector<double> dur, gap;
    if (j.contains("positions"))
      for (size_t p = 1; p < j["positions"].size(); ++p)
        dur.push_back(j["positions"][p]["dur_us"].get<double>()), gap.push_back(j["positions"][p]["gap_us"].get<double>());
    const double per_node = j.value("span_us", 0.0) / std::max(1, nodes);
    std::cout << "  " << std::left << std::setw(40) << row.name << std::right << std::setw(9) << bench::median(dur)
              << std::setw(9) << bench::median(gap) << std::setw(10) << per_node << "\n";
    if (const auto file = r["json"].as<std::string>(); !file.empty()) {
      nlohmann::ordered_json line = {{"bench", "launch"}, {"row", row.name}, {"nodes", nodes}, {"reps", reps},
                                     {"node_us", bench::median(dur)}, {"gap_us", bench::median(gap)}, {"per_node_us", per_node},
                                     {"trace", j}};
      std::ofstream(file, std::ios::app) << line.dump() << "\n";
    }
  }
  (void)bench::kernel_trace_stop();
#endif
  return 0;
}
