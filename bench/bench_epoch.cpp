// What a run does outside its steps, counted: ATen ops and host reads per phase.
//
// Runs `sgmcmc train CONFIG` (run_training, the same code) with a RecordFunction observer on the main
// thread and reports, per phase of the run (train/phase_clock.h: setup, steps, gibbs, samples, eval,
// checkpoint, finish), how many times it was entered, the ATen ops called from our code (top-level:
// what the dispatcher charges its per-call host overhead for), all ATen ops including the nested
// ones (roughly the kernels an accelerator launches), and the host reads: `.item()` (one
// aten::_local_scalar_dense) and metrics/host_reads.h's batched copies (sgmcmc::host_read). A part
// of a phase in an "sgmcmc::part.NAME" scope (the gradient-noise probe) is counted apart, as
// "phase/NAME", and not in its phase's row. "outside/entry" counts the top-level ops outside a phase
// graph's body (train/phase_graph.h): with train.graph_epoch on a GPU the body is one replay, and these
// are what the host still issues per entry (`--ops` lists them apart). On a
// GPU each host read waits for the device's queue to drain, and each op costs a launch; the counts
// are the same on the CPU, which is why this runs anywhere: the per-epoch work's cost on a GPU is
// launches and waits, and this bench counts them.
//
// `--kernel-trace` (a CUDA build with CUPTI, bench/kernel_trace.h) also records the device's timeline of
// the whole run and prints it by graph: with train.graph_epoch each phase's device work is a graph of its
// own, so the table says what a block of steps, an evaluation, a sample's predictions and a Gibbs step
// cost the device per launch, against the phases' host seconds above.
//
//   bench_epoch CONFIG [--set key=value ...] [--threads 1] [--json FILE] [--ops PHASE[,PHASE] [--nested]]
//               [--kernel-trace]
//
// Example (App. H.1, 4 epochs, samples from epoch 2):
//   bench_epoch configs/mnist_bnn_sghmc.yaml --set data.dir=/usr/share/datasets/fashion-mnist \
//     --set train.epochs=4 --set train.burn_in=1 --set output.dir=/tmp/bench_epoch
#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/experiment_config.h"
#include "kernel_trace.h"  // bench/
#include "runtime/cpu.h"
#include "train/phase_graph.h"
#include "train/trainer.h"

using namespace sgmcmc;

namespace {

struct Counts {
  int64_t entries = 0, top_ops = 0, all_ops = 0, item_reads = 0, batched_reads = 0;
  int64_t outside_ops = 0;  // top-level ops outside a phase graph's body: what a replayed phase still issues
};

// The observer's state: main thread only (the callback is thread-local).
std::map<std::string, Counts> g_counts;
std::map<std::string, std::map<std::string, int64_t>> g_names;  // phase -> top-level op -> calls
bool g_nested = false;  // --nested: g_names counts every op, not only the top-level ones
std::string g_phase = "setup";
std::vector<std::string> g_outer;  // the phases around the open "sgmcmc::part." scopes
int g_depth = 0;
int g_body = 0;  // open phase-graph bodies (train/phase_graph.h's kBodyScope)
std::map<std::string, std::map<std::string, int64_t>> g_outside_names;  // phase -> top-level op outside bodies -> calls

constexpr const char* kPhasePrefix = "sgmcmc::phase.";
constexpr const char* kPartPrefix = "sgmcmc::part.";  // a part of a phase counted apart: "eval/noise_probe"

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (std::strncmp(name, kPhasePrefix, std::strlen(kPhasePrefix)) == 0) {
      g_phase = name + std::strlen(kPhasePrefix);
      ++g_counts[g_phase].entries;
    } else if (std::strncmp(name, kPartPrefix, std::strlen(kPartPrefix)) == 0) {
      g_outer.push_back(g_phase);
      g_phase += "/" + std::string(name + std::strlen(kPartPrefix));
      ++g_counts[g_phase].entries;
    } else if (std::strcmp(name, "sgmcmc::host_read") == 0) {
      ++g_counts[g_phase].batched_reads;
    } else if (std::strcmp(name, sgmcmc::kBodyScope) == 0) {
      ++g_body;
    }
    return nullptr;
  }
  Counts& c = g_counts[g_phase];
  if (g_depth == 0) ++c.top_ops;
  if (g_depth == 0 || g_nested) ++g_names[g_phase][name];
  if (g_depth == 0 && g_body == 0) {
    ++c.outside_ops;
    ++g_outside_names[g_phase][name];
  }
  ++c.all_ops;
  if (std::strcmp(name, "aten::_local_scalar_dense") == 0) ++c.item_reads;
  ++g_depth;
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (fn.scope() != at::RecordScope::USER_SCOPE) {
    --g_depth;
  } else if (std::strcmp(fn.name(), sgmcmc::kBodyScope) == 0) {
    --g_body;
  } else if (std::strncmp(fn.name(), kPartPrefix, std::strlen(kPartPrefix)) == 0 && !g_outer.empty()) {
    g_phase = g_outer.back();
    g_outer.pop_back();
  }
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options o("bench_epoch", "ATen ops and host reads per phase of a training run");
  o.add_options()("config", "YAML config", cxxopts::value<std::string>())(
      "set", "key=value override", cxxopts::value<std::vector<std::string>>()->default_value({}))(
      "threads", "intra-op threads", cxxopts::value<int>()->default_value("1"))(
      "json", "write the counts here", cxxopts::value<std::string>()->default_value(""))(
      "ops", "also list the top-level ops of these phases, by calls", cxxopts::value<std::vector<std::string>>()->default_value({}))(
      "nested", "--ops lists every op, nested ones too")(
      "kernel-trace", "the run's device timeline by graph (CUPTI; a CUDA build)");
  o.parse_positional({"config"});
  auto r = o.parse(argc, argv);
  torch::set_num_threads(r["threads"].as<int>());
  g_nested = r.count("nested") > 0;

  std::vector<std::string> sets;
  for (const auto& kv : r["set"].as<std::vector<std::string>>())
    if (!kv.empty()) sets.push_back(kv);  // cxxopts' empty default is one empty string
  sets.push_back("train.threads=" + std::to_string(r["threads"].as<int>()));
  const ExperimentConfig cfg = load_config(r["config"].as<std::string>(), sets);
  RunOptions opts;
  opts.overwrite = true;
  opts.quiet = true;

  const bool trace = r.count("kernel-trace") > 0;
  if (trace && !bench::kernel_trace_available()) {
    std::cerr << "bench_epoch: --kernel-trace: this build has no CUPTI (a CUDA build where CMake finds CUDA::cupti)\n";
    return 2;
  }
  if (trace) bench::kernel_trace_start();
  auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end).scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  const RunSummary summary = run_training(cfg, opts);
  at::removeCallback(handle);

  const auto value = [&](const std::string& k) {
    auto it = summary.values.find(k);
    return it == summary.values.end() ? 0.0 : it->second;
  };
  const double steps = value("steps");
  std::cout << cfg.name << " on " << cfg.device << ": " << steps << " steps, " << summary.run_dir << "\n";
  std::cout << std::left << std::setw(11) << "phase" << std::right << std::setw(8) << "entries" << std::setw(12)
            << "top ops" << std::setw(12) << "all ops" << std::setw(10) << "reads" << std::setw(14) << "top ops/entry"
            << std::setw(14) << "reads/entry" << std::setw(16) << "outside/entry" << std::setw(12) << "seconds" << "\n";
  nlohmann::ordered_json out = {{"config", cfg.name}, {"device", cfg.device}, {"steps", steps}};
  std::vector<std::string> phases = {"setup", "steps", "gibbs", "samples", "eval", "checkpoint", "finish"};
  for (const auto& [name, c] : g_counts)
    if (name.find('/') != std::string::npos) phases.push_back(name);
  for (const auto& phase : phases) {
    const Counts c = g_counts[phase];
    const int64_t reads = c.item_reads + c.batched_reads;
    const double per = c.entries > 0 ? static_cast<double>(c.entries) : 1.0;
    const double seconds = value("time." + phase);  // 0 for a part
    std::cout << std::left << std::setw(11) << phase << std::right << std::setw(8) << c.entries << std::setw(12)
              << c.top_ops << std::setw(12) << c.all_ops << std::setw(10) << reads << std::setw(14) << std::fixed
              << std::setprecision(1) << c.top_ops / per << std::setw(14) << reads / per << std::setw(16)
              << c.outside_ops / per << std::setw(12) << std::setprecision(3) << seconds << "\n";
    out["phases"][phase] = {{"entries", c.entries},      {"top_ops", c.top_ops},
                            {"all_ops", c.all_ops},      {"item_reads", c.item_reads},
                            {"batched_reads", c.batched_reads}, {"outside_ops", c.outside_ops},
                            {"seconds", seconds}};
  }
  // ops by calls, most called first
  const auto print_by_calls = [](const std::map<std::string, int64_t>& names) {
    std::vector<std::pair<int64_t, std::string>> by_calls;
    for (const auto& [name, calls] : names) by_calls.emplace_back(calls, name);
    std::sort(by_calls.rbegin(), by_calls.rend());
    for (const auto& [calls, name] : by_calls) std::cout << std::setw(8) << calls << "  " << name << "\n";
  };
  for (const auto& phase : r["ops"].as<std::vector<std::string>>()) {
    if (phase.empty()) continue;
    std::cout << "\n" << phase << (g_nested ? ": ops" : ": top-level ops") << " by calls (" << g_counts[phase].entries << " entries)\n";
    print_by_calls(g_names[phase]);
    std::cout << phase << ": top-level ops outside a phase graph's body (a replay leaves them to the host)\n";
    print_by_calls(g_outside_names[phase]);
  }
  if (trace) {
    if (torch::cuda::is_available()) torch::cuda::synchronize();
    std::cout << "\ndevice timeline of the run\n";
    out["kernel_trace"] = bench::summarise_by_graph(bench::kernel_trace_stop());
  }
  if (const std::string f = r["json"].as<std::string>(); !f.empty()) std::ofstream(f) << out.dump(2) << "\n";
  return 0;
}
