// Whole-step graphs (train.graph; samplers/sampler.h kPrepare, train/step_graph.h): the host part of
// a step (kPrepare: scalars into step-parameter buffers) followed by the device part (gradients, then
// Sampler::launch_prepared, which reads those buffers) is the eager step, bit for bit, for every
// fused sampler; recapture on a change of rules; samplers without a fused step are refused; the
// trainer's captured run equals its eager run. On CUDA (skipped without it) the same run with a real
// at::cuda::CUDAGraph replay reproduces the eager trajectory.
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compat.h"
#include "config/experiment_config.h"
#include "kernels/cuda/copy_async.h"
#include "kernels/update/fused_update.h"
#include "sampler_test_util.h"
#include "samplers/registry.h"
#include "samplers/step_params_buffer.h"
#include "tiny_idx.h"
#include "train/minibatches.h"
#include "train/phase_graph.h"
#include "train/run_setup.h"
#include "train/step_graph.h"
#include "train/step_runner.h"
#include "train/trainer.h"

using namespace sgmcmc;

namespace {

// The steps of `r` as a captured run would take them: the host part, then the body through a
// StepGraph (on the CPU the body runs each call; warm-up, capture and recapture are counted).
void run_prepared_steps(test::TwoGroupRun& r, int steps, StepGraph& graph) {
  r.sampler->set_step_mode(Sampler::StepMode::kPrepare);
  for (int t = 0; t < steps; ++t) {
    EXPECT_FALSE(r.sampler->step(Closure()).defined());  // the closure is not called
    graph.run(
        [&] {
          test::quadratic_grads(r);
          r.sampler->launch_prepared();
        },
        r.sampler->prepared_rules());
  }
}

}  // namespace

TEST(Graph, PreparedStepsEqualEagerSteps) {
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    for (const auto& [name, kv] : test::fused_sampler_configs()) {
      const auto opts = test::options(kv);
      auto eager = test::make_two_group_run(name, opts, true, dt);
      auto prepared = test::make_two_group_run(name, opts, true, dt);
      StepGraph graph(torch::kCPU, compat::make_generator(torch::kCPU, 0));
      test::run_quadratic_steps(eager, 25);
      run_prepared_steps(prepared, 25, graph);
      for (size_t k = 0; k < eager.params.size(); ++k)
        EXPECT_TRUE(torch::equal(eager.params[k], prepared.params[k]))
            << name << " param " << k << " max |Δ| " << (eager.params[k] - prepared.params[k]).abs().max().item<double>();
      EXPECT_EQ(eager.sampler->steps(), prepared.sampler->steps()) << name;
      for (const auto& [key, value] : eager.sampler->diagnostics())
        EXPECT_EQ(value, prepared.sampler->diagnostics().at(key)) << name << " " << key;
      // the chain moved
      auto start = test::make_two_group_run(name, opts, true, dt);
      EXPECT_FALSE(torch::allclose(prepared.params[0], start.params[0], 1e-6, 1e-7)) << name;
      // 3 warm-up steps, one capture replayed for the other 22 (the rules are fixed per sampler: Santa's
      // stage is a coefficient of its kernel, not a different kernel)
      EXPECT_EQ(graph.warmups(), 3) << name;
      EXPECT_EQ(graph.captures(), 1) << name;
      EXPECT_EQ(graph.replays(), 22) << name;
    }
  }
}

// train.graph_steps at the sampler: a block of k prepared steps (each with its own lr, so each row of
// the step buffers holds other scalars), then their bodies with launch_prepared(j), is the eager run
// bit for bit for every fused sampler and both dtypes: the same noise keys in the same order. A block
// longer than the buffers' rows, a row outside them, or nested blocks are refused.
TEST(Graph, PreparedBlocksEqualEagerSteps) {
  constexpr int kBlock = 6, kBlocks = 4;
  auto lr_at = [](int t) { return 1e-3 / (1.0 + 0.1 * t); };
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    for (const auto& [name, kv] : test::fused_sampler_configs()) {
      const auto opts = test::options(kv);
      auto eager = test::make_two_group_run(name, opts, true, dt);
      auto blocks = test::make_two_group_run(name, opts, true, dt);
      const double lr0 = eager.sampler->lr();
      for (int t = 0; t < kBlock * kBlocks; ++t) {
        eager.sampler->set_lr(lr0 * lr_at(t) / 1e-3);
        test::quadratic_grads(eager);
        eager.sampler->step();
      }
      blocks.sampler->set_step_mode(Sampler::StepMode::kPrepare, kBlock);
      StepGraph graph(torch::kCPU, compat::make_generator(torch::kCPU, 0), /*warmup=*/1);
      for (int b = 0; b < kBlocks; ++b) {
        blocks.sampler->begin_prepared_block();
        for (int j = 0; j < kBlock; ++j) {
          blocks.sampler->set_lr(lr0 * lr_at(b * kBlock + j) / 1e-3);
          EXPECT_FALSE(blocks.sampler->step(Closure()).defined());
        }
        EXPECT_EQ(blocks.sampler->end_prepared_block(), kBlock);
        EXPECT_EQ(blocks.sampler->prepared_rules().size(), kBlock * blocks.sampler->param_groups().size())
            << name;  // one rule per group per row
        graph.run(
            [&] {
              for (int j = 0; j < kBlock; ++j) {
                test::quadratic_grads(blocks);
                blocks.sampler->launch_prepared(j);
              }
            },
            blocks.sampler->prepared_rules());
      }
      for (size_t k = 0; k < eager.params.size(); ++k)
        EXPECT_TRUE(torch::equal(eager.params[k], blocks.params[k]))
            << name << " param " << k << " max |Δ| " << (eager.params[k] - blocks.params[k]).abs().max().item<double>();
      EXPECT_EQ(eager.sampler->steps(), blocks.sampler->steps()) << name;
      EXPECT_EQ(graph.captures(), 1) << name;
      // the same sampler still takes single prepared steps (row 0) between blocks
      blocks.sampler->step(Closure());
      EXPECT_EQ(blocks.sampler->prepared_rules().size(), blocks.sampler->param_groups().size()) << name;
      blocks.sampler->launch_prepared();
      // refused: a 7th step in a block of 6 rows, a row outside them, a block inside a block
      blocks.sampler->begin_prepared_block();
      EXPECT_THROW(blocks.sampler->begin_prepared_block(), std::logic_error);
      for (int j = 0; j < kBlock; ++j) blocks.sampler->step(Closure());
      EXPECT_THROW(blocks.sampler->step(Closure()), std::logic_error) << name;
      (void)blocks.sampler->end_prepared_block();
      EXPECT_THROW(blocks.sampler->launch_prepared(kBlock), std::logic_error);
      EXPECT_THROW(blocks.sampler->end_prepared_block(), std::logic_error);
    }
  }
}

// The step buffers' rows: staged rows reach the device buffer (on the CPU, at once), each row at its
// own stable address; rows and commits outside the buffer are refused.
TEST(Graph, StepParamsBufferRows) {
  StepParamsBuffer buf(torch::kCPU, 3);
  EXPECT_EQ(buf.rows(), 3);
  kernels::FusedScalars s;
  kernels::NoiseStream noise;
  std::set<const void*> addresses;
  for (int64_t r = 0; r < 3; ++r) {
    s.lr = 0.5 * static_cast<double>(r + 1);
    noise.key = static_cast<uint64_t>(r + 7);
    buf.stage(r, kernels::FusedRule::kSgld, s, noise, torch::kFloat64);
    addresses.insert(buf.device_buffer(r).data_ptr());
    EXPECT_EQ(buf.device_buffer(r).numel(), kernels::step_params_bytes());
  }
  buf.commit(3);
  EXPECT_EQ(addresses.size(), 3u);
  // each row holds what write_step_params makes of its scalars
  for (int64_t r = 0; r < 3; ++r) {
    s.lr = 0.5 * static_cast<double>(r + 1);
    noise.key = static_cast<uint64_t>(r + 7);
    auto want = torch::zeros({kernels::step_params_bytes()}, torch::kUInt8);
    kernels::write_step_params(kernels::FusedRule::kSgld, s, noise, torch::kFloat64, want.data_ptr());
    EXPECT_TRUE(torch::equal(buf.device_buffer(r), want)) << "row " << r;
  }
  EXPECT_THROW(buf.stage(3, kernels::FusedRule::kSgld, s, noise, torch::kFloat64), std::out_of_range);
  EXPECT_THROW(buf.device_buffer(-1), std::out_of_range);
  EXPECT_THROW(buf.commit(4), std::out_of_range);
  EXPECT_THROW(StepParamsBuffer(torch::kCPU, 0), std::invalid_argument);
}

// StepGraph's sequencing: warm-up, one capture, replays; a new key captures again (no warm-up), as
// does invalidate(); every call runs the body once (on the CPU, eagerly).
TEST(Graph, StepGraphRecapturesOnANewKey) {
  StepGraph graph(torch::kCPU, compat::make_generator(torch::kCPU, 0), /*warmup=*/2);
  int calls = 0;
  auto body = [&] { ++calls; };
  for (int t = 0; t < 5; ++t) graph.run(body, {1});
  EXPECT_EQ(graph.warmups(), 2);
  EXPECT_EQ(graph.captures(), 1);
  EXPECT_EQ(graph.replays(), 3);
  graph.run(body, {2});
  graph.run(body, {2});
  EXPECT_EQ(graph.captures(), 2);
  graph.invalidate();
  graph.run(body, {2});
  EXPECT_EQ(graph.warmups(), 2);
  EXPECT_EQ(graph.captures(), 3);
  EXPECT_EQ(graph.replays(), 6);
  EXPECT_EQ(calls, 8);
}

TEST(Graph, SamplersWithoutAFusedStepAreRefused) {
  auto p = [] { return std::vector<torch::Tensor>{torch::randn({4, 3}).requires_grad_()}; };
  for (const auto& [name, kv] : std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>{
           {"sgnht", {{"lr", "1e-3"}}},
           {"hmc", {{"lr", "1e-3"}}},
           {"sghmc", {{"lr", "1e-3"}, {"noise_estimate", "fisher"}}},
           {"sghmc-naive", {{"lr", "1e-3"}}},
           {"sgd", {{"lr", "1e-3"}}},
           {"adam", {{"lr", "1e-3"}}}}) {
    auto s = test::make(name, p(), kv);
    EXPECT_FALSE(s->graph_capturable()) << name;
    EXPECT_THROW(s->set_step_mode(Sampler::StepMode::kPrepare), std::invalid_argument) << name;
  }
  auto sgld = test::make("sgld", p(), {{"lr", "1e-3"}});
  EXPECT_TRUE(sgld->graph_capturable());
  sgld->set_fused(false);
  EXPECT_FALSE(sgld->graph_capturable());
  EXPECT_THROW(sgld->set_step_mode(Sampler::StepMode::kPrepare), std::invalid_argument);
  sgld->set_fused(true);
  sgld->set_step_mode(Sampler::StepMode::kPrepare);
  EXPECT_THROW(sgld->launch_prepared(), std::logic_error);  // nothing prepared yet
}

// ---------------------------------------------------------------------------------------------
// The trainer: `train.graph: true` runs every step as host part + StepGraph body. On the CPU the
// arithmetic is the eager run's, op for op, so the summaries agree exactly. Santa's run crosses the
// end of its exploration stage; the chains run has a batch of C·n indices.

namespace {

ExperimentConfig graph_config(const std::string& data_dir, const std::string& sampler, std::vector<std::string> extra) {
  std::string text = R"(
name: tiny_graph
seed: 11
data: {dir: DATA, val_size: 100}
model: {name: mlp, hidden: [16], activation: tanh}
prior: {precision: 1, hyperprior: gamma, gibbs_every_epochs: 1}
sampler: SAMPLER
train: {epochs: 6, burn_in: 2, batch_size: 50, eval_every: 2}
output: {progress: false}
)";
  return test_util::config_from(text, {{"DATA", data_dir}, {"SAMPLER", sampler}}, extra, "tiny_graph.yaml");
}

// A fresh temporary directory with tiny IDX data in DIR/data.
std::string tiny_data_dir(const std::string& name) {
  auto dir = test_util::temp_dir(name);
  test_util::write_tiny_idx_dir(dir + "/data");
  return dir;
}

// A run's metrics.csv without its clock columns, row by row.
std::vector<std::vector<std::string>> metrics_rows(const std::string& run) {
  std::vector<std::vector<std::string>> out;
  std::ifstream in(run + "/metrics.csv");
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream l(line);
    std::string c;
    while (std::getline(l, c, ',')) cells.push_back(c);
    if (header.empty()) header = cells;
    std::vector<std::string> kept;
    for (size_t i = 0; i < cells.size() && i < header.size(); ++i)
      if (header[i] != "wall_seconds" && header[i] != "steps_per_second" && header[i].rfind("time.", 0) != 0)
        kept.push_back(cells[i]);
    out.push_back(kept);
  }
  return out;
}

// Run options for a test's runs: quiet, replacing an earlier run's directory when `overwrite`.
RunOptions quiet_options(bool overwrite) {
  RunOptions a;
  a.quiet = true;
  a.overwrite = overwrite;
  return a;
}

}  // namespace

TEST(Graph, TrainerCapturedRunEqualsEagerRun) {
  const std::string dir = tiny_data_dir("graph_trainer");
  RunOptions a = quiet_options(false);
  for (const auto& [sampler, extra] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"{name: sghmc, lr: 1.0e-4, alpha: 0.1}", {}},
           {"{name: santa, lr: 1.0e-6, burnin: 30, data_size: 500}", {}},
           {"{name: msgnht, lr: 1.0e-3, integrator: ssi}", {"chains=2"}}}) {
    a.out_dir = dir + "/eager";
    a.overwrite = true;
    auto extra_e = extra;
    extra_e.push_back("train.graph=false");
    auto eager = run_training(graph_config(dir + "/data", sampler, extra_e), a);
    a.out_dir = dir + "/graph";
    auto extra_g = extra;
    extra_g.push_back("train.graph=true");
    auto blocks = extra_g;  // train.graph_steps: auto, the default
    extra_g.push_back("train.graph_steps=1");
    auto captured = run_training(graph_config(dir + "/data", sampler, extra_g), a);
    for (const char* k : {"test_error", "test_nll", "sample_test_error", "val_nll", "samples", "steps"})
      EXPECT_EQ(eager.values.at(k), captured.values.at(k)) << sampler << " " << k;
    EXPECT_LT(captured.values.at("test_error"), 0.5) << sampler;  // it learned something
    // the captured run went through the graph: 3 warm-up steps, one capture, replays for the rest
    EXPECT_EQ(eager.values.count("graph_replays"), 0u);
    EXPECT_EQ(captured.values.at("graph_warmup_steps"), 3) << sampler;
    EXPECT_EQ(captured.values.at("graph_captures"), 1) << sampler;
    EXPECT_EQ(captured.values.at("graph_replays"), 57) << sampler;  // 60 steps
    // with train.graph_steps' default, an epoch's 10 steps (between its evaluation, sample and Gibbs
    // step) go as blocks: the same run
    a.out_dir = dir + "/blocks";
    auto in_blocks = run_training(graph_config(dir + "/data", sampler, blocks), a);
    for (const char* k : {"test_error", "test_nll", "sample_test_error", "val_nll", "samples", "steps"})
      EXPECT_EQ(eager.values.at(k), in_blocks.values.at(k)) << sampler << " in blocks " << k;
    EXPECT_GT(in_blocks.values.at("graph_block_replays"), 0) << sampler;
  }
  // Interrupted and resumed (the graph is captured again after the resume): the same run again.
  const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1, integrator: ssi}";
  a.out_dir = dir + "/eager";
  auto whole = run_training(graph_config(dir + "/data", sampler, {"train.graph=false"}), a);
  a.out_dir = dir + "/resumed";
  a.stop_after_steps = 25;  // of 60 (10 per epoch): mid-epoch, between two Gibbs steps
  auto part = run_training(graph_config(dir + "/data", sampler, {"train.graph=true", "train.graph_steps=1"}), a);
  EXPECT_FALSE(part.finished);
  a.stop_after_steps = -1;
  a.resume = true;
  a.overwrite = false;
  auto rest = run_training(graph_config(dir + "/data", sampler, {"train.graph=true", "train.graph_steps=1"}), a);
  a.resume = false;
  for (const char* k : {"test_error", "test_nll", "val_nll", "samples", "steps"})
    EXPECT_EQ(whole.values.at(k), rest.values.at(k)) << "resumed " << k;
  EXPECT_EQ(rest.values.at("graph_replays"), 60 - 25 - 3);  // captured again after the resume

  // A sampler without a fused step is refused before anything is written.
  a.out_dir = dir + "/refused";
  try {
    run_training(graph_config(dir + "/data", "{name: sgnht, lr: 1.0e-4}", {"train.graph=true"}), a);
    ADD_FAILURE() << "train.graph with sgnht was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("train.graph: sampler sgnht cannot be captured"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/refused"));
}

// train.graph_steps: blocks of steps in one graph launch give the single steps' run bit for bit: every
// metrics row, the summary, a resumed run. Blocks of 7 of a 10-step epoch (evaluations every 2 epochs,
// a Gibbs step every epoch) mix blocks and single steps; `epoch` takes each epoch as one block. A
// cyclical schedule with noise-free exploration changes the lr and the temperature inside blocks; parallel
// chains gather C·n rows a step; santa crosses the end of its exploration stage.
TEST(Graph, TrainerStepBlocksEqualSingleSteps) {
  const std::string dir = tiny_data_dir("graph_steps");
  RunOptions a = quiet_options(true);
  for (const auto& [sampler, extra] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"{name: sghmc, lr: 1.0e-4, alpha: 0.1}", {}},
           {"{name: sghmc, lr: 1.0e-4, alpha: 0.1}",
            {"schedule.type=cyclical", "schedule.cycles=2", "schedule.explore_fraction=0.3"}},
           {"{name: santa, lr: 1.0e-6, burnin: 30, data_size: 500}", {}},
           {"{name: msgnht, lr: 1.0e-3, integrator: ssi}", {"chains=2"}}}) {
    auto run = [&](const std::string& steps) {
      auto sets = extra;
      sets.push_back("train.graph=true");
      sets.push_back("train.graph_steps=" + steps);
      a.out_dir = dir + "/k" + steps;
      return run_training(graph_config(dir + "/data", sampler, sets), a);
    };
    auto single = run("1");
    const auto rows_single = metrics_rows(dir + "/k1");
    ASSERT_EQ(rows_single.size(), 4u) << sampler;  // the header and 3 evaluations
    EXPECT_EQ(single.values.count("graph_block_replays"), 0u);
    for (const std::string k : {"7", "epoch"}) {
      auto blocks = run(k);
      for (const char* key : {"test_error", "test_nll", "sample_test_error", "val_nll", "samples", "steps"})
        EXPECT_EQ(single.values.at(key), blocks.values.at(key)) << sampler << " graph_steps " << k << " " << key;
      EXPECT_EQ(metrics_rows(dir + "/k" + k), rows_single) << sampler << " graph_steps " << k;
      EXPECT_EQ(blocks.values.at("graph_block_captures"), 1) << sampler << " " << k;
      // epoch: all 6 epochs as blocks (a warm-up, a capture, replays); 7: 6 blocks of 7, 18 single steps
      const double block_calls = blocks.values.at("graph_block_warmups") + blocks.values.at("graph_block_replays");
      EXPECT_EQ(block_calls, 6) << sampler << " " << k;
      const double single_calls = blocks.values.count("graph_replays")
                                      ? blocks.values.at("graph_warmup_steps") + blocks.values.at("graph_replays")
                                      : 0;
      EXPECT_EQ(single_calls + block_calls * (k == "7" ? 7 : 10), 60) << sampler << " " << k;
    }
  }
  // With a deferred evaluation read (train.eval_lag: 3), whose row falls inside the next epoch's block
  // and is read after it: the rows of the immediate read, epoch by epoch in blocks.
  {
    a.out_dir = dir + "/lag_single";
    const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}";
    auto single = run_training(graph_config(dir + "/data", sampler, {"train.graph=true", "train.eval_every=1"}), a);
    a.out_dir = dir + "/lag_blocks";
    auto blocks = run_training(graph_config(dir + "/data", sampler,
                                            {"train.graph=true", "train.eval_every=1", "train.eval_lag=3",
                                             "train.graph_steps=epoch"}),
                               a);
    EXPECT_EQ(metrics_rows(dir + "/lag_blocks"), metrics_rows(dir + "/lag_single"));
    EXPECT_EQ(single.values.at("test_nll"), blocks.values.at("test_nll"));
    EXPECT_EQ(blocks.values.at("graph_block_warmups") + blocks.values.at("graph_block_replays"), 6);
  }
  // Interrupted mid-epoch and resumed in blocks: the single steps' run.
  const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}";
  a.out_dir = dir + "/whole";
  auto whole = run_training(graph_config(dir + "/data", sampler, {"train.graph=true"}), a);
  a.out_dir = dir + "/resumed";
  a.stop_after_steps = 25;
  auto part = run_training(graph_config(dir + "/data", sampler, {"train.graph=true", "train.graph_steps=epoch"}), a);
  EXPECT_FALSE(part.finished);
  EXPECT_EQ(part.values.at("steps"), 25);
  a.stop_after_steps = -1;
  a.resume = true;
  a.overwrite = false;
  auto rest = run_training(graph_config(dir + "/data", sampler, {"train.graph=true", "train.graph_steps=4"}), a);
  a.resume = false;
  for (const char* k : {"test_error", "test_nll", "val_nll", "samples", "steps"})
    EXPECT_EQ(whole.values.at(k), rest.values.at(k)) << "resumed " << k;
  // 0 and a word other than epoch are refused, naming the key and what it takes
  a.out_dir = dir + "/refused";
  a.overwrite = true;
  for (const std::string bad : {"0", "epochs"}) {
    try {
      run_training(graph_config(dir + "/data", sampler, {"train.graph=true", "train.graph_steps=" + bad}), a);
      ADD_FAILURE() << "train.graph_steps: " << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("train.graph_steps: expected a number of steps >= 1, epoch or auto, got '" + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

// StepRunner's blocks with the block's rows gathered at once, two steps' rows at a time
// (limit_block_gather), one step's at a time, and with each step gathering its own (limit_block_rows(0)),
// against single steps: the same parameters bit for bit after 20 steps.
TEST(Graph, StepBlocksGatherAtOnceOrPerStep) {
  const std::string dir = tiny_data_dir("graph_steps_runner");
  std::vector<std::vector<torch::Tensor>> finals;
  for (const std::string mode : {"single", "at_once", "in_twos", "in_ones", "per_step"}) {
    SCOPED_TRACE(mode);
    const int64_t k = mode == "single" ? 1 : mode == "in_twos" ? 10 : 5;  // steps a block (within an epoch of 10)
    RunSetup s = make_run_setup(graph_config(dir + "/data", "{name: sghmc, lr: 1.0e-4, alpha: 0.1}",
                                             {"train.graph=true", "train.graph_steps=" + std::to_string(k)}));
    Model& model = *s.dm.model;
    LossMeter loss(s.dm.device);
    MinibatchStream batches(s.plan.train_size, s.plan.batch_size, 1, s.dm.device, s.gen_dev);
    StepRunner runner(model, *s.sampler, *s.prior, s.dm.data.train, s.plan.grad_scale(), s.plan.batch_size, loss,
                      /*graph=*/true, s.dm.device, s.gen_dev, s.plan.graph_steps);
    if (mode == "per_step") runner.limit_block_rows(0);
    // a step's rows: its batch of images and labels (what the block's gathers bring)
    const auto& train = s.dm.data.train;
    const int64_t step_bytes =
        s.plan.batch_size * static_cast<int64_t>(train.inputs[0].nbytes() + train.targets[0].nbytes());
    if (mode == "in_twos") runner.limit_block_gather(3 * step_bytes);  // 2 of 10 (the largest divisor within)
    if (mode == "in_ones") runner.limit_block_gather(0);
    EXPECT_EQ(runner.block_steps(), k);
    const int64_t gather_steps = mode == "single" || mode == "per_step" ? 0 : mode == "in_twos" ? 2 : mode == "in_ones" ? 1 : 5;
    EXPECT_EQ(runner.block_gather_steps(), gather_steps);
    int64_t t = 0;
    while (t < 20) {
      if (mode == "single") {
        s.sampler->set_lr(s.schedule->at(t++));
        runner.step(batches.next());
        continue;
      }
      const int64_t first = t;
      runner.step_block(batches.next_block(k), [&](int64_t j) { s.sampler->set_lr(s.schedule->at(first + j)); });
      t += k;
    }
    if (mode == "per_step") EXPECT_THROW(runner.limit_block_rows(0), std::logic_error);
    if (mode == "in_ones") EXPECT_THROW(runner.limit_block_gather(0), std::logic_error);
    EXPECT_EQ(loss.count(), 20);
    std::vector<torch::Tensor> p;
    for (const auto& q : model.parameters()) p.push_back(q.detach().clone());
    finals.push_back(p);
  }
  for (size_t m = 1; m < finals.size(); ++m)
    for (size_t k = 0; k < finals[0].size(); ++k)
      EXPECT_TRUE(torch::equal(finals[0][k], finals[m][k])) << "mode " << m << " parameter " << k;
}

// On CUDA: blocks of an epoch's steps as one CUDA graph give the one-step graph's run bit for bit (the
// same kernels on the same numbers in the same order; the noise offsets drawn on the host per step).
TEST(Graph, CudaStepBlocksEqualSingleSteps) {
  if (!compat::cuda_available() || !kernels::fused_supported(torch::zeros({1}, torch::Device(torch::kCUDA))))
    GTEST_SKIP() << "needs CUDA and a build with -DSGMCMC_CUDA=ON";
  const std::string dir = tiny_data_dir("graph_steps_cuda");
  RunOptions a = quiet_options(true);
  const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}";
  a.out_dir = dir + "/k1";
  auto single = run_training(graph_config(dir + "/data", sampler, {"device=cuda", "train.graph=true"}), a);
  for (const std::string k : {"7", "epoch"}) {
    a.out_dir = dir + "/k" + k;
    auto blocks = run_training(
        graph_config(dir + "/data", sampler, {"device=cuda", "train.graph=true", "train.graph_steps=" + k}), a);
    for (const char* key : {"test_error", "test_nll", "val_nll", "samples", "steps"})
      EXPECT_EQ(single.values.at(key), blocks.values.at(key)) << "graph_steps " << k << " " << key;
    EXPECT_EQ(metrics_rows(dir + "/k" + k), metrics_rows(dir + "/k1")) << "graph_steps " << k;
    EXPECT_GE(blocks.values.at("graph_block_replays"), 1) << k;
  }
}

// On CUDA: the pass's own launches for its products inside a captured, replayed step: the last hidden layer
// with the head (kernels.cuda_mlp_forward: fused), whose row groups' arrival counts must be back at 0 for
// every replay or a head would run early or never, and the hidden layers' ∇W tiled (kernels.cuda_mlp_wgrad:
// fused). Their sums run in another order than cuBLASLt's (MlpForwardHead.CudaEqualsReference and
// WeightGrad.CudaEqualsReferenceBitForBit check the launches against their references), so over 6 epochs of
// SGHMC the metrics agree with the cuBLASLt run far below their resolution (1e-4 on the NLLs), each launch
// alone and both, one step a graph launch and an epoch's steps.
TEST(Graph, CudaOwnProductsRunNearCublasRun) {
  if (!compat::cuda_available() || !kernels::fused_supported(torch::zeros({1}, torch::Device(torch::kCUDA))))
    GTEST_SKIP() << "needs CUDA and a build with -DSGMCMC_CUDA=ON";
  const std::string dir = tiny_data_dir("graph_own_products_cuda");
  RunOptions a = quiet_options(true);
  const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}";
  for (const std::string k : {"1", "epoch"}) {
    std::map<std::string, double> values[4];
    for (int v = 0; v < 4; ++v) {  // bit 0: forward fused, bit 1: wgrad fused
      a.out_dir = dir + "/" + k + "_" + std::to_string(v);
      values[v] = run_training(graph_config(dir + "/data", sampler,
                                            {"device=cuda", "train.graph=true", "train.graph_steps=" + k,
                                             std::string("kernels.cuda_mlp_forward=") + (v & 1 ? "fused" : "cublas"),
                                             std::string("kernels.cuda_mlp_wgrad=") + (v & 2 ? "fused" : "cublas")}),
                               a)
                      .values;
    }
    for (int v = 1; v < 4; ++v) {
      for (const char* key : {"test_nll", "val_nll", "sample_test_nll"})
        EXPECT_NEAR(values[0].at(key), values[v].at(key), 1e-4) << "graph_steps " << k << ", variant " << v << " " << key;
      EXPECT_EQ(values[0].at("steps"), values[v].at("steps")) << k;
    }
  }
}

// On CUDA: the captured run (a real CUDA graph, replayed) against the eager run on the device. The
// noise is the same Philox stream (the graph advances the generator's offset per replay by what
// the eager launches advance it), so the two differ only by GEMM reduction order: far below the
// metrics' resolution over 6 epochs.
TEST(Graph, CudaReplayReproducesEagerRun) {
  if (!compat::cuda_available() || !kernels::fused_supported(torch::zeros({1}, torch::Device(torch::kCUDA))))
    GTEST_SKIP() << "needs CUDA and a build with -DSGMCMC_CUDA=ON";
  const std::string dir = tiny_data_dir("graph_trainer_cuda");
  RunOptions a = quiet_options(false);
  a.out_dir = dir + "/eager";
  const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}";
  auto eager = run_training(graph_config(dir + "/data", sampler, {"device=cuda", "train.graph=false"}), a);
  a.out_dir = dir + "/graph";
  auto captured = run_training(graph_config(dir + "/data", sampler, {"device=cuda", "train.graph=true"}), a);
  EXPECT_NEAR(eager.values.at("test_nll"), captured.values.at("test_nll"), 1e-3);
  EXPECT_NEAR(eager.values.at("test_error"), captured.values.at("test_error"), 0.01);
}

// PhaseGraph's sequencing per key: a warm-up, a capture, replays, each key on its own; a key beyond
// max_keys takes the place of the least recently used one (whose counts stay in the totals); every call
// returns the body's output (on the CPU, computed again each call); with capture off, no graph at all.
TEST(Graph, PhaseGraphCapturesPerKeyAndEvictsTheLeastRecent) {
  PhaseGraph<int> graph(torch::kCPU, /*capture=*/true, at::Generator(), /*warmup=*/1, /*max_keys=*/2);
  int calls = 0;
  auto body = [&] { return ++calls; };
  for (int t = 0; t < 4; ++t) EXPECT_EQ(graph.run({1}, body), calls);
  EXPECT_EQ(graph.captures(), 1);
  EXPECT_EQ(graph.replays(), 3);  // the capture's own replay, then two
  for (int t = 0; t < 2; ++t) graph.run({2}, body);
  EXPECT_EQ(graph.captures(), 2);
  EXPECT_EQ(graph.replays(), 4);
  graph.run({1}, body);  // key 2 is now the least recent
  graph.run({3}, body);  // evicts key 2: a warm-up
  graph.run({2}, body);  // evicts key 1; warm-up again
  graph.run({2}, body);  // captured again
  EXPECT_EQ(graph.captures(), 3);
  EXPECT_EQ(graph.replays(), 6);
  EXPECT_EQ(calls, 10);
  PhaseGraph<int> off(torch::kCPU, /*capture=*/false);
  EXPECT_EQ(off.run({1}, body), 11);
  EXPECT_EQ(off.run({1}, body), 12);
  EXPECT_EQ(off.captures(), 0);
  EXPECT_EQ(off.replays(), 0);
}

// train.graph_epoch: the samples' and evaluations' device work through PhaseGraph. On the CPU the
// bodies run at every call, so the runs agree bit for bit, row for row (the split of each phase into
// its device work and its host part is the code that a CUDA replay runs). The CUDA test below replays
// real graphs, the Gibbs steps' draws on the device among them.
TEST(Graph, TrainerEpochGraphsEqualEagerPhases) {
  const std::string dir = tiny_data_dir("graph_epoch");
  RunOptions a = quiet_options(true);
  const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}";
  const std::vector<std::string> sets = {"train.epochs=8", "train.eval_every=1"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), sets.begin(), sets.end());
    return graph_config(dir + "/data", sampler, extra);
  };
  a.out_dir = dir + "/eager";
  auto eager = run_training(with({"train.graph_epoch=false"}), a);
  a.out_dir = dir + "/phases";
  auto phases = run_training(with({"train.graph_epoch=true"}), a);
  const auto re = metrics_rows(dir + "/eager"), rp = metrics_rows(dir + "/phases");
  ASSERT_EQ(re.size(), 9u);  // the header and 8 evaluations
  EXPECT_EQ(re, rp);
  for (const char* k : {"test_error", "test_nll", "test_ece", "val_nll", "sample_test_error", "samples", "rhat_test_loglik"})
    EXPECT_EQ(eager.values.at(k), phases.values.at(k)) << k;
  EXPECT_EQ(eager.values.count("graph_epoch_replays"), 0u);
  // 6 samples (from epoch 3): the first defines the sums (its own key), the next warms up, one capture,
  // three replays; 8 evaluations: the two before any sample under one key (a warm-up, a capture)
  EXPECT_GE(phases.values.at("graph_epoch_captures"), 2);
  EXPECT_GE(phases.values.at("graph_epoch_replays"), 5);
  EXPECT_LT(phases.values.at("test_error"), 0.5);
}

// train.eval_lag: an evaluation's row read and written steps after it (3, within the epoch of 10 steps;
// 25, past the next Gibbs step, sample and evaluation, which complete it first) gives the rows and the
// run's results of the immediate read, bit for bit: every Gibbs step's λ in its row, the samples, the
// divergence guard's checks, the gradient-noise probe at its evaluations, a checkpoint after every
// evaluation (output.checkpoint_every_seconds: 0) and the final row, with the per-epoch graphs' CPU
// twin on and off.
TEST(Graph, TrainerEvalLagEqualsImmediateRows) {
  const std::string dir = tiny_data_dir("eval_lag");
  RunOptions a = quiet_options(true);
  const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}";
  for (const std::string graph_epoch : {"true", "false"}) {
    const std::vector<std::string> sets = {"train.epochs=8", "train.eval_every=1", "output.checkpoint_every_seconds=0",
                                           "train.graph_epoch=" + graph_epoch};
    auto with = [&](const std::string& lag) {
      std::vector<std::string> extra = sets;
      extra.push_back("train.eval_lag=" + lag);
      return graph_config(dir + "/data", sampler, extra);
    };
    a.out_dir = dir + "/now";
    auto now = run_training(with("0"), a);
    const auto rows_now = metrics_rows(dir + "/now");
    ASSERT_EQ(rows_now.size(), 9u);  // the header and 8 evaluations
    for (const std::string lag : {"3", "25"}) {
      SCOPED_TRACE("train.graph_epoch=" + graph_epoch + ", train.eval_lag=" + lag);
      a.out_dir = dir + "/lag" + lag;
      auto later = run_training(with(lag), a);
      EXPECT_EQ(metrics_rows(dir + "/lag" + lag), rows_now);
      for (const char* k : {"test_error", "test_nll", "test_ece", "val_nll", "sample_test_error", "samples", "steps",
                            "rhat_test_loglik", "lambda.fc1.weight"})
        EXPECT_EQ(now.values.at(k), later.values.at(k)) << k;
      EXPECT_TRUE(std::filesystem::exists(dir + "/lag" + lag + "/checkpoint.pt"));
    }
  }
}

namespace {

// The ops inside the phase bodies (train/phase_graph.h's kBodyScope) of the run under way on this thread,
// and those among them that would wait for the device on a GPU: a body that waits cannot be captured.
struct BodyAudit {
  int depth = 0;
  int64_t ops = 0;
  std::vector<std::string> waits;
};
thread_local BodyAudit* g_audit = nullptr;

std::unique_ptr<at::ObserverContext> audit_start(const at::RecordFunction& fn) {
  if (g_audit == nullptr) return nullptr;
  const std::string name = fn.name();
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (name == kBodyScope) ++g_audit->depth;
    else if (g_audit->depth > 0 && name == "sgmcmc::host_read") g_audit->waits.push_back(name);
    return nullptr;
  }
  if (g_audit->depth == 0) return nullptr;
  ++g_audit->ops;
  // a value to the host (.item(), a tensor's truth value, equal) or an output sized by the data
  static const std::set<std::string> waits = {"aten::_local_scalar_dense", "aten::item",        "aten::is_nonzero",
                                              "aten::equal",               "aten::nonzero",     "aten::masked_select",
                                              "aten::unique_consecutive",  "aten::_unique2",    "aten::unique_dim",
                                              "aten::_unique",             "aten::nonzero_numpy"};
  if (waits.count(name) > 0) g_audit->waits.push_back(name);
  return nullptr;
}

void audit_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (g_audit != nullptr && fn.scope() == at::RecordScope::USER_SCOPE && std::string(fn.name()) == kBodyScope)
    --g_audit->depth;
}

}  // namespace

// What train.graph_epoch captures must not wait for the device: inside every phase body of a run (a
// sample's predictions, an evaluation's metrics), no .item(), no batched host read, no op whose output
// size depends on the data. The CPU runs the very bodies a GPU captures, so the ops seen here are the
// captured ones; a body that waited would fail its capture there (or be replayed without the wait).
TEST(Graph, EpochGraphBodiesWaitForNothing) {
  const std::string dir = tiny_data_dir("graph_epoch_audit");
  RunOptions a = quiet_options(true);
  a.out_dir = dir + "/run";
  for (const std::string& sampler : {std::string("{name: sghmc, lr: 1.0e-4, alpha: 0.1}"), std::string("{name: sgd, lr: 1.0e-3}")}) {
    SCOPED_TRACE(sampler);
    BodyAudit audit;
    g_audit = &audit;
    auto handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(audit_start, audit_end).scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
    auto run = run_training(graph_config(dir + "/data", sampler,
                                         {"train.graph_epoch=true", "train.epochs=6", "train.eval_every=1", "chains=2"}),
                            a);
    at::removeCallback(handle);
    g_audit = nullptr;
    EXPECT_EQ(audit.depth, 0);
    EXPECT_GT(audit.ops, 500);  // the bodies ran, under the observer
    std::string seen;
    for (const auto& w : audit.waits) seen += " " + w;
    EXPECT_TRUE(audit.waits.empty()) << "ops inside a phase body that wait for the device:" << seen;
    EXPECT_GT(run.values.at("graph_epoch_replays"), 0);
  }
}

// On CUDA, real graphs: the run with its samples and evaluations replayed against the same run with
// them eager (both with the step replayed). The same kernels on the same inputs: the metrics agree
// to the last bits that the calibration bins' atomic adds leave free.
TEST(Graph, CudaEpochGraphsReproduceEagerPhases) {
  if (!compat::cuda_available() || !kernels::fused_supported(torch::zeros({1}, torch::Device(torch::kCUDA))))
    GTEST_SKIP() << "needs CUDA and a build with -DSGMCMC_CUDA=ON";
  const std::string dir = tiny_data_dir("graph_epoch_cuda");
  RunOptions a = quiet_options(true);
  const std::string sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}";
  auto config = [&](const std::string& phases) {
    return graph_config(dir + "/data", sampler,
                        {"device=cuda", "train.graph=true", "train.epochs=12", "train.eval_every=1", phases});
  };
  a.out_dir = dir + "/eager";
  auto eager = run_training(config("train.graph_epoch=false"), a);
  a.out_dir = dir + "/phases";
  auto phases = run_training(config("train.graph_epoch=true"), a);
  for (const char* k : {"test_error", "test_nll", "test_brier", "test_entropy", "test_mi", "val_nll", "val_error",
                        "sample_test_error", "sample_test_nll", "samples", "rhat_test_loglik", "ess_test_loglik"})
    EXPECT_NEAR(eager.values.at(k), phases.values.at(k), 1e-12 * (1 + std::abs(eager.values.at(k)))) << k;
  for (const char* k : {"test_ece", "test_mce"}) EXPECT_NEAR(eager.values.at(k), phases.values.at(k), 1e-9) << k;
  // replayed, not eager: 10 samples and 12 evaluations leave several replays of each graph
  EXPECT_GE(phases.values.at("graph_epoch_captures"), 2);
  EXPECT_GE(phases.values.at("graph_epoch_replays"), 8);
}

// train.graph: auto (the default) captures exactly CUDA runs of a capturable sampler and a built-in
// single-chain model outside distributed.mode: data; true and false are kept as given; other values are one-line errors.
TEST(Graph, AutoResolvesByDeviceSamplerAndMode) {
  auto dir = test_util::temp_dir("graph_auto");
  test_util::write_tiny_idx_dir(dir + "/data");
  auto parse = [&](std::vector<std::string> extra) {
    return graph_config(dir + "/data", "{name: sghmc, lr: 1.0e-3}", std::move(extra)).train;
  };
  const TrainConfig by_default = parse({});
  EXPECT_TRUE(by_default.graph_auto);
  EXPECT_FALSE(by_default.graph);
  const torch::Device cpu(torch::kCPU), cuda(torch::kCUDA);
  EXPECT_TRUE(resolve_train_graph(by_default, cuda, true, true, false));
  EXPECT_FALSE(resolve_train_graph(by_default, cpu, true, true, false));
  EXPECT_FALSE(resolve_train_graph(by_default, cuda, false, true, false));  // e.g. sgnht, or train.fused: false
  EXPECT_FALSE(resolve_train_graph(by_default, cuda, true, false, false));  // model: torchscript, or chains > 1
  EXPECT_FALSE(resolve_train_graph(by_default, cuda, true, true, true));    // distributed.mode: data
  const TrainConfig on = parse({"train.graph=true"}), off = parse({"train.graph=off"});
  EXPECT_FALSE(on.graph_auto);
  EXPECT_TRUE(resolve_train_graph(on, cpu, true, true, false));  // explicit: the CPU twin runs it eagerly
  EXPECT_FALSE(resolve_train_graph(off, cuda, true, true, false));
  try {
    parse({"train.graph=sometimes"});
    ADD_FAILURE() << "train.graph: sometimes was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("graph"), std::string::npos) << e.what();
  }
  // On the CPU a run under auto is eager: make_run_setup leaves graph off.
  auto setup = make_run_setup(graph_config(dir + "/data", "{name: sghmc, lr: 1.0e-3}", {}));
  EXPECT_FALSE(setup.plan.graph);
}

// kernels::copy_async (a replayed step's per-step copies): the same values as copy_, on the CPU (its
// fallback) and on CUDA from a pinned host buffer, from device memory and (the fallback) from pageable
// host memory.
TEST(Graph, CopyAsyncEqualsCopy) {
  const auto src = torch::arange(1000, torch::kInt64);
  auto dst = torch::zeros_like(src);
  kernels::copy_async(dst, src);
  EXPECT_TRUE(torch::equal(dst, src));
  if (!compat::cuda_available()) GTEST_SKIP() << "the CUDA cases need a GPU";
  const torch::Device dev(torch::kCUDA);
  for (const auto& from : {src.pin_memory(), src.to(dev), src.clone()}) {
    auto d = torch::zeros({1000}, torch::TensorOptions().dtype(torch::kInt64).device(dev));
    kernels::copy_async(d, from);
    EXPECT_TRUE(torch::equal(d.cpu(), src)) << from.device() << (from.is_cpu() && from.is_pinned() ? " pinned" : "");
  }
}
