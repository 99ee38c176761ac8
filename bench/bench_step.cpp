// One training step against its floor.
//
// Builds a run exactly as `sgmcmc train CONFIG` does (make_run_setup: data, model, prior, sampler)
// and times the trainer's step (StepRunner: minibatch indices, gather, ∇Ũ by autograd, prior
// gradient, sampler update, loss bookkeeping), without evaluations or Gibbs steps. Next to it, in
// the same process, with the same library and threads, it times the step's floor:
//   mlp:  the matrix products of one step, alone: per layer X·Wᵀ + b, Gᵀ·X (the weight gradient)
//         and, above the first layer, G·W (the input gradient), on preallocated outputs, through
//         kernels/cpu/matmul.h (oneDNN where built, else ATen's BLAS; --matmul aten|onednn picks, for
//         floor and step alike);
//   cnn:  the same for its linear layers, plus each convolution's forward and backward
//         (at::convolution_backward: weight, bias and, above the first layer, input gradients);
//   bpmf: the gathers and scatters of one step: U, V, a, b rows of the batch read (index_select)
//         and their gradients added back (index_add_), reported also as GB/s.
// Rounds alternate step and floor (interleaved), each round `--steps` of each; the output gives
// min / median / max steps/s of both and the ratio of the medians (floor ÷ step time = the share of
// the step's time that is the floor's work).
//
// `--profile` runs `--steps` more steps under LibTorch's (legacy, CPU) profiler and prints every
// ATen op's self time per step, its share of the step and its count per step, and the total number
// of ATen ops per step (top-level and nested calls counted once each); our own kernels are named
// "sgmcmc::…" (the products, the minibatch gather, the prior's seed, the loss and activation
// backward, the fused update), timed alike and counted apart; `--by-parent` keys each op by
// its caller (e.g. "AddmmBackward0 > aten::mm"), to see where an op comes from.
//
// On a GPU (`--set device=cuda`) every timed stretch ends with a device synchronisation, and
// `--graph` runs the step as `train.graph: true` does (one CUDA graph replay per step) and the floor
// captured in a graph of its own, so that the ratio compares the kernels' time without the launches
// of either (on the CPU, --graph runs both eagerly, as StepGraph does there).
//
// `--kernel-trace N` (a CUDA build with CUPTI) takes N more steps after the rounds and prints the device's
// own timeline of each launch (bench/kernel_trace.h): every kernel and copy in order, its duration and the
// gap before it, and the launch's period, span and busy time, medians over the launches.
//
//   bench_step CONFIG [--set key=value ...] [--threads 2] [--rounds 5] [--steps 200] [--warmup 20]
//              [--profile [--by-parent]] [--intra-threads N] [--json FILE] [--label NAME]
//              [--matmul aten|onednn] [--graph [--graph-steps K [--block-gather-bytes B]]] [--kernel-trace N]
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include "config/experiment_config.h"
#include "kernels/cuda_mlp/gemm_lt.h"
#include "kernels/cpu/matmul.h"
#include "runtime/cpu.h"
#include "train/minibatches.h"
#include "train/run_setup.h"
#include "train/step_graph.h"
#include "train/step_runner.h"
#include "kernel_trace.h"  // bench/

using namespace sgmcmc;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Waits for the device's queued work (a no-op on the CPU), so that a host clock times it.
void sync(const torch::Device& d) {
#ifdef SGMCMC_WITH_CUDA
  if (d.is_cuda()) torch::cuda::synchronize(d.index() < 0 ? -1 : d.index());
#else
  (void)d;
#endif
}

struct Floor {
  std::function<void()> run;  // one step's worth of floor work
  double bytes = 0;           // bytes moved per step (bpmf), 0 for the compute-bound floors
  std::string what;
};

// Linear layers: weights [out, in] in `weights`, the input of the first one `x` [n, in].
void add_linear_floor(std::vector<std::function<void()>>& ops, const std::vector<torch::Tensor>& weights,
                      int64_t n, bool first_needs_input_grad) {
  for (size_t l = 0; l < weights.size(); ++l) {
    const auto& w0 = weights[l];
    auto opts = w0.options().requires_grad(false);
    auto w = torch::randn(w0.sizes(), opts), b = torch::randn({w0.size(0)}, opts);
    auto x = torch::rand({n, w0.size(1)}, opts), g = torch::randn({n, w0.size(0)}, opts);
    auto y = torch::empty({n, w0.size(0)}, opts), dw = torch::empty_like(w), dx = torch::empty_like(x);
    const bool input_grad = l > 0 || first_needs_input_grad;
    // the transposed views made once, as the MLP's own backward keeps them (models/mlp.h)
    auto wt = w.t(), gt = g.t();
    ops.push_back([=]() mutable {  // through kernels/cpu/matmul.h: the library the models' products use
      kernels::matmul_out(y, x, wt, b);
      kernels::matmul_out(dw, gt, x);
      if (input_grad) kernels::matmul_out(dx, g, w);
    });
  }
}

std::vector<torch::Tensor> params_of_dim(Model& m, int64_t dim) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters())
    if (p.dim() == dim) out.push_back(p.detach());
  return out;
}

Floor mlp_floor(Model& model, int64_t n) {
  std::vector<std::function<void()>> ops;
  add_linear_floor(ops, params_of_dim(model, 2), n, false);
  return {[ops] { for (auto& f : ops) f(); }, 0, "matrix products (addmm X·Wᵀ, mm Gᵀ·X, mm G·W)"};
}

// The CNN of models/cnn.h: conv(5) → relu → maxpool 2, twice, then the linear layers.
Floor cnn_floor(Model& model, const Batch& train, int64_t n) {
  torch::NoGradGuard ng;
  std::vector<std::function<void()>> ops;
  auto x = train.inputs.narrow(0, 0, n).clone();
  if (x.dim() == 3) x = x.unsqueeze(1);
  auto convs = params_of_dim(model, 4);
  bool first = true;
  for (const auto& w0 : convs) {
    auto w = w0.clone(), b = torch::randn({w0.size(0)}, w0.options());
    auto xin = x.clone();
    auto y = at::conv2d(xin, w, b);
    auto gy = torch::randn_like(y);
    const bool input_grad = !first;
    ops.push_back([=] {
      at::conv2d(xin, w, b);
      at::convolution_backward(gy, xin, w, c10::IntArrayRef{w.size(0)}, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1,
                               {input_grad, true, true});
    });
    x = torch::max_pool2d(torch::relu(y), 2);
    first = false;
  }
  add_linear_floor(ops, params_of_dim(model, 2), n, true);
  return {[ops] { for (auto& f : ops) f(); }, 0, "convolutions (forward + backward) and matrix products"};
}

Floor bpmf_floor(Model& model, const Batch& train, int64_t n) {
  std::map<std::string, torch::Tensor> p;
  for (const auto& it : model.named_parameters()) p[it.key()] = it.value().detach();
  auto users = train.inputs.narrow(0, 0, n).select(1, 0).contiguous();
  auto items = train.inputs.narrow(0, 0, n).select(1, 1).contiguous();
  struct Pair { torch::Tensor table, index, rows, grad; };
  std::vector<Pair> pairs;
  for (const auto& [name, index] : std::vector<std::pair<std::string, torch::Tensor>>{
           {"U", users}, {"V", items}, {"a", users}, {"b", items}}) {
    auto table = p.at(name);
    auto rows = table.index_select(0, index);
    pairs.push_back({table, index, rows, torch::zeros_like(table)});
  }
  double bytes = 0;  // read the rows and write them, read the rows' gradient and add it into the table
  for (const auto& q : pairs) bytes += 4.0 * q.rows.numel() * 4 + 2.0 * q.index.numel() * 8;
  auto run = [pairs]() mutable {
    for (auto& q : pairs) {
      at::index_select_out(q.rows, q.table, 0, q.index);
      q.grad.index_add_(0, q.index, q.rows);
    }
  };
  return {run, bytes, "gathers and scatters (index_select, index_add_) of U, V, a, b"};
}

Floor make_floor(const ExperimentConfig& cfg, Model& model, const Batch& train, int64_t n) {
  const std::string name = cfg.model.get_string("name", "");
  if (name == "mlp") return mlp_floor(model, n);
  if (name == "cnn") return cnn_floor(model, train, n);
  if (name == "bpmf") return bpmf_floor(model, train, n);
  throw std::invalid_argument("bench_step: no floor for model '" + name + "' (mlp, cnn, bpmf)");
}

struct Stats { double min, median, max; };
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

// Self time and count per op name over the profiled steps (nesting from push/pop on each thread).
struct OpStat { double self_us = 0; int64_t count = 0; };
// `by_parent`: key each op by "caller > op" (which autograd node or op called it).
std::map<std::string, OpStat> op_profile(const torch::autograd::profiler::thread_event_lists& lists, bool by_parent,
                                         double* total_us) {
  using torch::autograd::profiler::EventKind;
  std::map<std::string, OpStat> out;
  *total_us = 0;
  for (const auto& events : lists) {
    struct Open { const torch::autograd::profiler::LegacyEvent* ev; double child_us; };
    std::vector<Open> stack;
    for (const auto& e : events) {
      if (e.kind() == EventKind::PushRange) {
        stack.push_back({&e, 0});
      } else if (e.kind() == EventKind::PopRange && !stack.empty()) {
        Open o = stack.back();
        stack.pop_back();
        const double us = o.ev->cpuElapsedUs(e);
        std::string key = o.ev->name();
        if (by_parent) key = std::string(stack.empty() ? "-" : stack.back().ev->name()) + " > " + key;
        auto& s = out[key];
        s.self_us += us - o.child_us;
        ++s.count;
        if (!stack.empty()) stack.back().child_us += us;
        else *total_us += us;
      }
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options cli("bench_step", "A training step against its floor (matrix products / gathers), interleaved.");
  cli.add_options()
      ("config", "experiment config", cxxopts::value<std::string>())
      ("set", "config override key=value (repeatable)", cxxopts::value<std::vector<std::string>>()->default_value({}))
      ("threads", "intra-op and BLAS threads", cxxopts::value<int>()->default_value("2"))
      ("intra-threads", "LibTorch intra-op threads if not --threads (BLAS keeps --threads)", cxxopts::value<int>()->default_value("0"))
      ("rounds", "interleaved rounds", cxxopts::value<int>()->default_value("5"))
      ("steps", "steps per round (each of step and floor)", cxxopts::value<int>()->default_value("200"))
      ("floor-steps", "steps per round of the floor (default: --steps; 0 with perf leaves the step alone)", cxxopts::value<int>()->default_value("-1"))
      ("warmup", "untimed steps first", cxxopts::value<int>()->default_value("20"))
      ("profile", "print the op profile of --steps steps")
      ("by-parent", "with --profile: every op keyed by its caller ('caller > op'), none left out")
      ("json", "append one JSON line to FILE", cxxopts::value<std::string>()->default_value(""))
      ("label", "name of the row", cxxopts::value<std::string>()->default_value(""))
      ("matmul", "the models' matrix products: onednn | aten (default: the build's)", cxxopts::value<std::string>()->default_value(""))
      ("graph", "step and floor each replayed as one CUDA graph (train.graph)")
      ("graph-steps", "with --graph: steps per graph launch (train.graph_steps; the floor stays one a step)", cxxopts::value<int>()->default_value("1"))
      ("block-gather-bytes", "with --graph-steps: a block's rows gathered at most this many bytes at a time (StepRunner::limit_block_gather; default: the whole block at once)", cxxopts::value<int64_t>()->default_value("-1"))
      ("kernel-trace", "after the rounds, N more steps whose device timeline CUPTI records: each launch's kernels and copies, their durations and the gaps between them (a CUDA build with CUPTI; the trace is on from the start, so the rounds run under it too)", cxxopts::value<int>()->default_value("0"))
      ("h,help", "help");
  cli.parse_positional({"config"});
  auto r = cli.parse(argc, argv);
  if (r.count("help") || !r.count("config")) {
    std::cout << cli.help() << "\n";
    return r.count("help") ? 0 : 2;
  }
  const int threads = r["threads"].as<int>(), rounds = r["rounds"].as<int>(), steps = r["steps"].as<int>();
  const int floor_steps = r["floor-steps"].as<int>() < 0 ? steps : r["floor-steps"].as<int>();
  set_cpu_threads(threads);
  if (const auto mm = r["matmul"].as<std::string>(); !mm.empty()) {
    if (mm != "aten" && mm != "onednn") throw std::invalid_argument("--matmul: aten or onednn, not '" + mm + "'");
    kernels::set_matmul_backend(mm == "aten" ? kernels::MatmulBackend::kAten : kernels::MatmulBackend::kOnednn);
  }
  if (r["intra-threads"].as<int>() > 0) torch::set_num_threads(r["intra-threads"].as<int>());
  tune_allocator();

  auto sets = r["set"].as<std::vector<std::string>>();
  // the sampler in its prepare-and-replay mode, or not (train.graph's default, auto, captures on CUDA)
  sets.push_back(r.count("graph") ? "train.graph=true" : "train.graph=false");
  sets.push_back("train.graph_steps=" + std::to_string(r["graph-steps"].as<int>()));
  RunSetup s = make_run_setup(load_config(r["config"].as<std::string>(), sets));
  set_kernel_settings(s.config.kernels);  // as sgmcmc train installs them (--set kernels.KEY=...)
  at::globalContext().setAllowTF32CuBLAS(s.config.train.tf32);  // and train.tf32 (--set train.tf32=true)
  Model& model = *s.dm.model;
  LossMeter loss(s.dm.device);
  MinibatchStream batches(s.plan.train_size, s.plan.batch_size, model.minibatch_chains(), s.dm.device, s.gen_dev);
  const bool graph = s.plan.graph;
  StepRunner runner(model, *s.sampler, *s.prior, s.dm.data.train, s.plan.grad_scale(), s.plan.batch_size, loss,
                    graph, s.dm.device, s.gen_dev, s.plan.graph_steps);
  runner.use_model_backward(s.config.train.backward == "auto");
  if (r["block-gather-bytes"].as<int64_t>() >= 0) runner.limit_block_gather(r["block-gather-bytes"].as<int64_t>());
  int64_t step_no = 0;
  const int64_t block = runner.block_steps();
  // one step, or (--graph-steps K) a block of K steps: the rounds count steps either way
  auto one_step = [&] {
    if (block == 1) {
      s.sampler->set_lr(s.schedule->at(step_no++));
      runner.step(batches.next());
      return int64_t{1};
    }
    const int64_t first = step_no;
    runner.step_block(batches.next_block(block), [&](int64_t j) { s.sampler->set_lr(s.schedule->at(first + j)); });
    step_no += block;
    return block;
  };
  auto run_steps = [&](int64_t n) {
    int64_t done = 0;
    while (done < n) done += one_step();
    return done;
  };
  Floor floor = make_floor(s.config, model, s.dm.data.train, s.plan.batch_size * model.chains());
  if (graph) {  // the floor's work captured too (after StepGraph's warm-up steps), replayed per step
    auto g = std::make_shared<StepGraph>(s.dm.device, s.gen_dev);
    floor.run = [g, body = floor.run] { g->run(body); };
  }
  const torch::Device dev = s.dm.device;
  const int trace_steps = r["kernel-trace"].as<int>();
  if (trace_steps > 0 && !bench::kernel_trace_available()) {
    std::cerr << "bench_step: --kernel-trace: this build has no CUPTI (a CUDA build where CMake finds CUDA::cupti)\n";
    return 2;
  }
  // on before the warm-up: the graphs are captured and instantiated with CUPTI's tracing enabled
  if (trace_steps > 0) bench::kernel_trace_start();

  for (int i = 0; i < r["warmup"].as<int>(); ++i) {
    (void)one_step();
    floor.run();
  }
  sync(dev);
  std::vector<double> step_rate, floor_rate;
  for (int round = 0; round < rounds; ++round) {
    auto t0 = Clock::now();
    const int64_t done = run_steps(steps);
    (void)loss.take_mean();  // the host read the trainer does at an evaluation
    sync(dev);
    step_rate.push_back(static_cast<double>(done) / seconds_since(t0));
    t0 = Clock::now();
    for (int i = 0; i < floor_steps; ++i) floor.run();
    sync(dev);
    floor_rate.push_back(floor_steps / seconds_since(t0));
  }
  const Stats st = stats(step_rate), fl = stats(floor_rate);
  const std::string label = r["label"].as<std::string>().empty() ? s.config.name : r["label"].as<std::string>();
  std::cout << std::fixed << std::setprecision(1) << label << " (" << threads << " threads, batch "
            << s.plan.batch_size << ", " << rounds << " rounds of " << steps << " steps, matmul "
            << kernels::matmul_backend_name() << (graph ? ", graph" : "")
            << (block > 1 ? ", " + std::to_string(block) + " steps a launch" : std::string()) << ", " << dev << ")\n"
            << "  step   steps/s min " << st.min << "  median " << st.median << "  max " << st.max << "\n"
            << "  floor  steps/s min " << fl.min << "  median " << fl.median << "  max " << fl.max << "  ["
            << floor.what << "]\n"
            << std::setprecision(3) << "  step at " << st.median / fl.median << " of the floor's speed\n";
  if (floor.bytes > 0)
    std::cout << std::setprecision(2) << "  floor moves " << floor.bytes / 1e6 << " MB/step = "
              << floor.bytes * fl.median / 1e9 << " GB/s\n";

  nlohmann::ordered_json j = {{"bench", "step"}, {"label", label}, {"config", r["config"].as<std::string>()},
                              {"threads", threads}, {"batch", s.plan.batch_size}, {"rounds", rounds},
                              {"steps", steps}, {"step_steps_per_s", step_rate}, {"floor_steps_per_s", floor_rate},
                              {"step_median", st.median}, {"floor_median", fl.median},
                              {"fraction_of_floor", st.median / fl.median}, {"floor", floor.what},
                              {"matmul", kernels::matmul_backend_name()}, {"graph", graph}, {"graph_steps", block},
                              {"block_gather_steps", runner.block_gather_steps()},
                              {"device", dev.str()}};
  if (floor.bytes > 0) j["floor_gb_per_s"] = floor.bytes * fl.median / 1e9;
  if (trace_steps > 0) {
    (void)loss.take_mean();
    sync(dev);
    const uint64_t from = bench::kernel_trace_now();
    const auto t0 = Clock::now();
    const int64_t done = run_steps(trace_steps);
    (void)loss.take_mean();
    sync(dev);
    const double us = seconds_since(t0) * 1e6 / static_cast<double>(done);
    auto acts = bench::kernel_trace_stop();
    acts.erase(std::remove_if(acts.begin(), acts.end(), [&](const bench::GpuActivity& a) { return a.start < from; }),
               acts.end());
    std::cout << std::setprecision(1) << "  kernel trace: " << done << " steps, " << us << " us a step under the trace\n";
    auto kt = bench::summarise_kernel_trace(acts, block);
    kt["steps"] = done, kt["us_per_step_traced"] = us;
    j["kernel_trace"] = kt;
  }
#if defined(SGMCMC_WITH_CUDA)
  // the cuBLASLt products' measured choices (kernels.cuda_mlp_gemm: cublaslt): which kernel and split-K
  // won, against cuBLASLt's own first choice (a CUDA build's: the CPU build has no CUDA sources)
  for (const auto& ch : kernels::gemm_lt_choices()) {
    std::cout << std::setprecision(1) << "  cublaslt " << ch.shape << ": " << ch.kernel << ", " << ch.us << " us (heuristic "
              << ch.heuristic_us << " us, " << ch.candidates << " candidates" << (ch.cached ? ", cached" : "") << ")\n";
    j["gemm_lt"].push_back({{"shape", ch.shape}, {"kernel", ch.kernel}, {"split_k", ch.split_k}, {"us", ch.us},
                            {"heuristic_us", ch.heuristic_us}, {"candidates", ch.candidates},
                            {"cached", ch.cached}});
  }
#endif

  if (r.count("profile")) {
    using namespace torch::autograd::profiler;
    const bool by_parent = r.count("by-parent") > 0;
    enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU));
    auto t0 = Clock::now();
    (void)run_steps(steps);
    const double wall_us = seconds_since(t0) * 1e6;
    double top_us = 0;
    auto ops = op_profile(disableProfilerLegacy(), by_parent, &top_us);
    std::vector<std::pair<std::string, OpStat>> sorted(ops.begin(), ops.end());
    std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second.self_us > b.second.self_us; });
    // ATen ops, and ours (named "sgmcmc::…" by RECORD_FUNCTION: the products, the gather, the seed,
    // the loss and activation backward, the fused update), counted apart
    int64_t calls = 0, own_calls = 0;
    for (const auto& [name, o] : sorted) (name.rfind("sgmcmc::", 0) == 0 ? own_calls : calls) += o.count;
    std::cout << std::setprecision(1) << "  profile (" << steps << " steps, " << wall_us / steps
              << " us/step under the profiler, ops' total " << top_us / steps << " us/step, "
              << static_cast<double>(calls) / steps << " ATen op calls/step, "
              << static_cast<double>(own_calls) / steps << " of ours)\n"
              << "    self us/step   share   calls/step  op\n";
    nlohmann::ordered_json prof = nlohmann::ordered_json::array();
    for (const auto& [name, o] : sorted) {
      const double us = o.self_us / steps, share = o.self_us / wall_us;
      if (share >= 0.002 || by_parent)
        std::cout << "    " << std::setw(11) << us << "  " << std::setw(5) << 100 * share << " %  " << std::setw(10)
                  << static_cast<double>(o.count) / steps << "  " << name << "\n";
      prof.push_back({{"op", name}, {"self_us_per_step", us}, {"share", share},
                      {"calls_per_step", static_cast<double>(o.count) / steps}});
    }
    std::cout << "    " << std::setw(11) << (wall_us - top_us) / steps << "  " << std::setw(5)
              << 100 * (wall_us - top_us) / wall_us << " %  " << std::setw(10) << "" << "  (outside any named op)\n";
    j["profile"] = {{"us_per_step", wall_us / steps}, {"op_calls_per_step", static_cast<double>(calls) / steps},
                    {"own_calls_per_step", static_cast<double>(own_calls) / steps},
                    {"ops", prof}};
  }
  if (const auto file = r["json"].as<std::string>(); !file.empty()) std::ofstream(file, std::ios::app) << j.dump() << "\n";
  return 0;
}
