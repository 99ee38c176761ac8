// Divergence through the real binary: an SGHMC run whose step size is far too large for its friction
// must stop at the first non-finite loss (checked every step on the CPU), exit with status 3, print
// one line naming the step, the sampler, the step size and the likely cause, write summary.json with
// "diverged": true, and leave the last good checkpoint byte-for-byte intact (and resumable).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "proc_util.h"
#include "tiny_idx.h"
#include "core/signals.h"
#include "train/divergence_guard.h"

namespace fs = std::filesystem;
using namespace sgmcmc::test_util;

namespace {

std::string make_config(const std::string& dir) {
  write_tiny_idx_dir(dir + "/data", 200, 50, 4, /*gzip=*/false);
  std::ofstream(dir + "/tiny.yaml") << "seed: 3\n"
                                       "data: {dir: " << dir << "/data, val_size: 0}\n"
                                       "model: {name: mlp, hidden: [8], activation: relu}\n"
                                       "sampler: {name: sghmc, lr: 1.0e-3, alpha: 0.01}\n"
                                       "train: {steps: 200, batch_size: 20, eval_every_steps: 5, threads: 1}\n"
                                       "output: {progress: false}\n";
  return dir + "/tiny.yaml";
}

int run(const std::vector<std::string>& args, const std::string& log) { return wait_child(spawn_sgmcmc(args, log)); }

}  // namespace

TEST(Divergence, HugeStepSizeStopsWithExit3AndKeepsTheLastGoodCheckpoint) {
  const std::string dir = temp_dir("divergence");
  const std::string cfg = make_config(dir);
  const std::string runp = dir + "/run";
  // A good start: 10 steps with a sane step size, checkpoint at step 10.
  ASSERT_EQ(run({"train", cfg, "--out", runp, "--quiet", "--stop-after", "10"}, dir + "/a"), 0) << read_text(dir + "/a.err");
  const std::string good = read_text(runp + "/checkpoint.pt");
  ASSERT_FALSE(good.empty());
  // Continue with lr 1e4: |θ| grows by ~ lr·|∇U| per step, overflowing float32 within a few steps.
  EXPECT_EQ(run({"train", "--resume", runp, "--quiet", "--set", "sampler.lr=1e4"}, dir + "/b"), 3);
  const std::string err = read_text(dir + "/b.err");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("error: run diverged at step "), std::string::npos) << err;
  EXPECT_NE(err.find("(sghmc, lr 10000): non-finite"), std::string::npos) << err;
  EXPECT_NE(err.find("step size too large for the friction alpha=0.01"), std::string::npos) << err;
  EXPECT_NE(err.find("lower sampler.lr or raise sampler.alpha"), std::string::npos) << err;
  EXPECT_NE(err.find("last good checkpoint, step 10"), std::string::npos) << err;
  // Caught early: within a handful of steps of the resume point (and long before the 200 steps).
  const auto at = err.find("at step ");
  ASSERT_NE(at, std::string::npos);
  const int step = std::stoi(err.substr(at + 8));
  EXPECT_GT(step, 10);
  EXPECT_LE(step, 60) << err;
  // summary.json says so; the checkpoint is the good one, byte for byte.
  const std::string summary = read_text(runp + "/summary.json");
  EXPECT_NE(summary.find("\"diverged\": true"), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"diverged_step\": " + std::to_string(step)), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"finished\": false"), std::string::npos) << summary;
  EXPECT_EQ(read_text(runp + "/checkpoint.pt"), good);
  // ... and still resumable with a sane step size (config.yaml records the last session's overrides).
  EXPECT_EQ(run({"train", "--resume", runp, "--quiet", "--set", "sampler.lr=1e-3"}, dir + "/c"), 0) << read_text(dir + "/c.err");
  EXPECT_NE(read_text(runp + "/summary.json").find("\"steps\": 200"), std::string::npos);
}

TEST(Divergence, FromTheStartLeavesNoCheckpoint) {
  const std::string dir = temp_dir("divergence_fresh");
  const std::string cfg = make_config(dir);
  EXPECT_EQ(run({"train", cfg, "--out", dir + "/run", "--quiet", "--set", "sampler.lr=1e4"},
                dir + "/a"),
            3);
  const std::string err = read_text(dir + "/a.err");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("run diverged at step "), std::string::npos) << err;
  EXPECT_NE(err.find("(sghmc, lr 10000)"), std::string::npos) << err;
  EXPECT_NE(err.find("step size too large"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir + "/run/checkpoint.pt"));
  EXPECT_NE(read_text(dir + "/run/summary.json").find("\"diverged\": true"), std::string::npos);
}

// The guard's check in two halves (the evaluation reads Σ 0·θ in its MetricsBatch, one sync): 0 for
// finite parameters, NaN for any NaN or ±∞ (even one element among several tensors), nothing once a
// step is checked; a NaN value diverges naming the step, and check_state does both halves.
TEST(Divergence, StateCheckInTwoHalves) {
  auto a = torch::randn({4, 3}), b = torch::randn({5});
  auto ints = torch::arange(3);  // not floating point: not checked
  int reported = -1;
  sgmcmc::DivergenceGuard guard("sghmc", sgmcmc::OptionMap{}, {a, b, ints}, false, "ckpt.pt",
                                [&](int64_t step, const std::string&) { reported = static_cast<int>(step); });
  auto sum = guard.state_sum(7);
  ASSERT_TRUE(sum.defined());
  EXPECT_EQ(sum.item<double>(), 0.0);
  guard.resolve_state(7, 0.1, sum.item<double>());
  EXPECT_FALSE(guard.state_sum(7).defined());  // checked: no second read for the same step
  for (double bad : {std::nan(""), double{INFINITY}, -double{INFINITY}}) {
    b[2] = bad;
    auto s = guard.state_sum(8);
    ASSERT_TRUE(s.defined());
    EXPECT_TRUE(std::isnan(s.item<double>())) << bad;
    EXPECT_THROW(guard.resolve_state(8, 0.1, s.item<double>()), sgmcmc::RunDiverged);
    EXPECT_EQ(reported, 8);
    EXPECT_THROW(guard.check_state(8, 0.1), sgmcmc::RunDiverged);
  }
  b[2] = 1.0;
  EXPECT_NO_THROW(guard.check_state(9, 0.1));
  EXPECT_FALSE(guard.state_sum(9).defined());
}
