#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include "config/experiment_config.h"
#include "data/tensors.h"
#include "tiny_idx.h"
#include "compat.h"
#include "train/phase_clock.h"
#include "train/trainer.h"

using namespace sgmcmc;
namespace fs = std::filesystem;

namespace {
// 4 separable classes of 16x16 blobs (tiny_idx.h): 600 train (100 of them validation), 200 test;
// a 256-20-4 ReLU MLP sampled by SGLD, 10 steps of 50 per epoch.
ExperimentConfig tiny_config(const std::string& data_dir, std::vector<std::string> extra = {}) {
  std::string text = R"(
name: tiny
seed: 5
data: {dir: DATA, val_size: 100}
model: {name: mlp, hidden: [20], activation: relu}
prior: {precision: 1, hyperprior: gamma, gibbs_every_epochs: 1}
sampler: {name: sgld, lr: 1.0e-3}
train: {epochs: 30, burn_in: 10, batch_size: 50, eval_every: 5}
output: {progress: false}
)";
  text.replace(text.find("DATA"), 4, data_dir);
  auto raw = parse_raw_config(text, "tiny.yaml");
  for (auto& a : extra) apply_override(raw, a);
  return build_config(raw);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Options for a quiet run into `out_dir`.
RunOptions quiet_run(const std::string& out_dir) {
  RunOptions ro;
  ro.out_dir = out_dir;
  ro.quiet = true;
  return ro;
}

// metrics.csv as its header's column names and its rows of fields (text).
std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> read_metrics(const fs::path& p) {
  std::ifstream in(p);
  auto split = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    for (std::string v; std::getline(ss, v, ',');) out.push_back(v);
    return out;
  };
  std::string line;
  std::getline(in, line);
  auto cols = split(line);
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) rows.push_back(split(line));
  return {cols, rows};
}

// metrics.csv without the timing columns (wall_seconds, steps_per_second, time.*), for comparing runs.
std::string metrics_without_timing(const fs::path& p) {
  const auto [cols, rows] = read_metrics(p);
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i)
      if (cols[i] != "wall_seconds" && cols[i] != "steps_per_second" && cols[i].rfind("time.", 0) != 0) out += row[i] + ",";
    out += "\n";
  }
  return out;
}

// Column `name` of a metrics.csv, one value per row.
std::vector<double> metrics_column(const fs::path& p, const std::string& name) {
  const auto [cols, rows] = read_metrics(p);
  const auto it = std::find(cols.begin(), cols.end(), name);
  EXPECT_NE(it, cols.end()) << name;
  std::vector<double> out;
  if (it == cols.end()) return out;
  const size_t col = static_cast<size_t>(it - cols.begin());
  for (const auto& row : rows) out.push_back(std::stod(row.at(col)));
  return out;
}
}  // namespace

// The blobs are separable (block +150 on noise in [0, 100)), so the Bayes error is 0 and chance is
// 75 %; a working sampler's averaged predictive must classify almost everything. Threshold: 5 %
// (10 of 200 test images), far from chance, loose against the seed's sampling noise.
TEST(Trainer, SgldLearnsTinyProblem) {
  auto dir = test_util::temp_dir("trainer_learn");
  test_util::write_tiny_idx_dir(dir + "/data");
  RunOptions ro = quiet_run(dir + "/run");
  auto s = run_training(tiny_config(dir + "/data"), ro);
  EXPECT_TRUE(s.finished);
  EXPECT_LT(s.values.at("test_error"), 0.05);
  EXPECT_LT(s.values.at("val_error"), 0.05);
  EXPECT_EQ(s.values.at("samples"), 20);   // epochs 11..30, one per epoch
  EXPECT_EQ(s.values.at("steps"), 300);
  for (const char* f : {"config.yaml", "metrics.csv", "summary.json", "checkpoint.pt", "final.pt", "reliability.svg"})
    EXPECT_TRUE(fs::exists(fs::path(ro.out_dir) / f)) << f;
  auto summary = slurp(fs::path(ro.out_dir) / "summary.json");
  for (const char* k : {"\"test_error\"", "\"test_nll\"", "\"val_error\"", "\"samples\"", "\"steps\"",
                        "\"wall_seconds\"", "\"steps_per_second\""})
    EXPECT_NE(summary.find(k), std::string::npos) << k;
  // The wall clock by phase (train/phase_clock.h): every phase reported, none negative, the steps'
  // share non-zero, and together no more than the session's wall clock (read after them).
  double phases = 0;
  for (const char* ph : {"setup", "steps", "gibbs", "samples", "eval", "checkpoint", "finish"}) {
    const double t = s.values.at(std::string("time.") + ph);
    EXPECT_GE(t, 0) << ph;
    phases += t;
  }
  EXPECT_GT(s.values.at("time.steps"), 0);
  EXPECT_GT(s.values.at("time.samples"), 0);  // 20 samples, each a prediction on test and val
  EXPECT_LE(phases, s.values.at("wall_seconds") + 1e-3);
  // The setup's parts (data, the device's context beside it, the wait for it, the model, the training
  // run's construction): each non-negative, together no more than time.setup; no context on the CPU.
  // time.launch, the process's age at the run's start, is before wall_seconds' clock.
  double parts = 0;
  for (const char* part : {"data", "device_wait", "model", "trainer"}) {
    const double t = s.values.at(std::string("time.setup.") + part);
    EXPECT_GE(t, 0) << part;
    parts += t;
  }
  EXPECT_GT(s.values.at("time.setup.data"), 0);
  EXPECT_EQ(s.values.at("time.setup.context"), 0);
  EXPECT_LE(parts, s.values.at("time.setup") + 1e-3);
  // the training run's construction: its members (the trivial predictor's metrics among them), then files
  const double members = s.values.at("time.setup.trainer.members");
  EXPECT_GE(s.values.at("time.setup.trainer.trivial_metrics"), 0);
  EXPECT_LE(s.values.at("time.setup.trainer.trivial_metrics"), members);
  EXPECT_LE(members, s.values.at("time.setup.trainer"));
  EXPECT_GT(s.values.at("time.launch"), 0);
  // One metrics row per evaluation (every 5 epochs) plus the header, with the λ's logged.
  auto metrics = slurp(fs::path(ro.out_dir) / "metrics.csv");
  EXPECT_EQ(std::count(metrics.begin(), metrics.end(), '\n'), 7);
  EXPECT_NE(metrics.find("lambda.fc1.weight"), std::string::npos);
  // Each row's seconds so far by phase: never decreasing from row to row, at most the summary's; the
  // samples' grow (a sample every epoch after burn-in), the steps' too.
  for (const char* ph : {"steps", "gibbs", "samples", "eval", "checkpoint"}) {
    const std::string k = std::string("time.") + ph;
    const auto col = metrics_column(fs::path(ro.out_dir) / "metrics.csv", k);
    ASSERT_EQ(col.size(), 6u) << k;
    for (size_t i = 1; i < col.size(); ++i) EXPECT_GE(col[i], col[i - 1]) << k << ", row " << i;
    EXPECT_GE(col.front(), 0) << k;
    EXPECT_LE(col.back(), s.values.at(k) + 1e-9) << k;
    if (k == "time.steps" || k == "time.samples") EXPECT_GT(col.back(), col.front()) << k;
  }
  // The resolved config reloads to the same run.
  auto again = load_config((fs::path(ro.out_dir) / "config.yaml").string());
  EXPECT_EQ(again.train.epochs, 30);
  EXPECT_EQ(again.data.dir, dir + "/data");
}

// PhaseClock: entering the current phase changes nothing; every phase's seconds are non-negative
// and together no more than the clock's own wall clock (read after them).
TEST(PhaseClock, PhasesSumToNoMoreThanTheWallClock) {
  const auto start = PhaseClock::Clock::now();
  PhaseClock clock(start, torch::kCPU);
  auto a = torch::randn({64, 64});
  for (auto p : {PhaseClock::kSteps, PhaseClock::kSteps, PhaseClock::kGibbs, PhaseClock::kSteps, PhaseClock::kEval}) {
    clock.enter(p);
    a = torch::tanh(a.mm(a) / 64);
  }
  EXPECT_EQ(clock.current(), PhaseClock::kEval);
  const auto secs = clock.seconds();
  const double wall = std::chrono::duration<double>(PhaseClock::Clock::now() - start).count();
  double sum = 0;
  for (const auto& [k, v] : secs) {
    EXPECT_GE(v, 0) << k;
    sum += v;
  }
  EXPECT_EQ(secs.size(), 7u);
  EXPECT_LE(sum, wall);
}

// On CUDA a change of phase does not wait for the device (the next phase's host work overlaps the
// queued steps), and the queued work is still charged to the phase that queued it: 200 products of
// 2048 × 2048 (~3.4 TFLOP: tens of ms on any GPU, against ~2 ms for the host to queue them) in
// "steps", one reduction read back in "eval".
TEST(PhaseClock, CudaChargesQueuedWorkToThePhaseThatQueuedIt) {
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  const auto start = PhaseClock::Clock::now();
  PhaseClock clock(start, dev);
  auto a = torch::randn({2048, 2048}, dev) / 2048;
  clock.enter(PhaseClock::kSteps);
  for (int i = 0; i < 200; ++i) a = torch::tanh(a.mm(a));
  const auto queued = torch::ones({1}, dev) * a.sum();  // not read yet
  const auto before = PhaseClock::Clock::now();
  clock.enter(PhaseClock::kEval);
  const double entering = std::chrono::duration<double>(PhaseClock::Clock::now() - before).count();
  EXPECT_TRUE(std::isfinite(queued.item<double>()));
  const auto secs = clock.seconds();
  EXPECT_LT(entering, 0.1 * secs.at("time.steps")) << "enter() waited for the device";
  const double wall = std::chrono::duration<double>(PhaseClock::Clock::now() - start).count();
  EXPECT_GT(secs.at("time.steps"), 10 * secs.at("time.eval"));
  double sum = 0;
  for (const auto& [k, v] : secs) sum += v;
  EXPECT_LE(sum, wall + 1e-3);  // the device's clock against the host's: well under a millisecond here
  EXPECT_GE(sum, 0.9 * wall);
}


// Stopping mid-epoch (step 137 of 300, inside epoch 14, after burn-in) and resuming reproduces the
// uninterrupted run exactly on CPU: same metrics rows, same summary, same final parameters.
TEST(Trainer, ResumeEqualsUninterrupted) {
  auto dir = test_util::temp_dir("trainer_resume");
  test_util::write_tiny_idx_dir(dir + "/data");
  RunOptions a = quiet_run(dir + "/a");
  auto sa = run_training(tiny_config(dir + "/data"), a);

  RunOptions b = a;
  b.out_dir = dir + "/b";
  b.stop_after_steps = 137;
  auto partial = run_training(tiny_config(dir + "/data"), b);
  EXPECT_FALSE(partial.finished);
  EXPECT_EQ(partial.values.at("steps"), 137);
  b.stop_after_steps = -1;
  b.resume = true;
  auto sb = run_training(load_config(dir + "/b/config.yaml"), b);
  EXPECT_TRUE(sb.finished);
  for (const char* k : {"test_error", "test_nll", "val_error", "val_nll", "samples", "steps"})
    EXPECT_EQ(sa.values.at(k), sb.values.at(k)) << k;
  EXPECT_EQ(metrics_without_timing(dir + "/a/metrics.csv"), metrics_without_timing(dir + "/b/metrics.csv"));
  // final.pt: a dict of tensors (torch.save's format, train/model_io.h).
  const auto fa = read_tensor_dict(dir + "/a/final.pt"), fb = read_tensor_dict(dir + "/b/final.pt");
  for (const char* k : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) EXPECT_TRUE(torch::equal(fa.at(k), fb.at(k))) << k;
}

// sampler.lr_scaling: per_datum with lr = η·N is the paper's parametrisation with lr = η, bit for bit
// (N = 500 training examples; 0.5/500 rounds to the same double as 1.0e-3).
TEST(Trainer, PerDatumStepIsThePaperStepTimesN) {
  auto dir = test_util::temp_dir("trainer_per_datum");
  test_util::write_tiny_idx_dir(dir + "/data");
  RunOptions a = quiet_run(dir + "/a");
  run_training(tiny_config(dir + "/data", {"train.epochs=12"}), a);
  RunOptions b = a;
  b.out_dir = dir + "/b";
  run_training(tiny_config(dir + "/data", {"train.epochs=12", "sampler.lr=0.5", "sampler.lr_scaling=per_datum"}), b);
  EXPECT_EQ(metrics_without_timing(dir + "/a/metrics.csv"), metrics_without_timing(dir + "/b/metrics.csv"));
  EXPECT_DOUBLE_EQ(metrics_column(dir + "/b/metrics.csv", "lr").front(), 1e-3);
}

// Cyclical SG-MCMC's stages (schedule.explore_fraction 0.5, 3 cycles of 100 steps): steps t with
// t mod 100 < 50 run at temperature 0 and collect nothing. Samples after burn-in (step 100), one per
// epoch, fall at steps 160..200 and 260..300: 10. The first cycle's exploration (steps 1–50) equals a
// run at temperature 0 throughout (same noise draws, scaled by 0), so the epoch-5 rows agree and
// the epoch-10 rows (after 50 noisy steps) do not. A run stopped in an exploration stage (its
// checkpoint holds T = 0) and resumed equals the uninterrupted one.
TEST(Trainer, CyclicalExplorationStagesAreNoiseFree) {
  auto dir = test_util::temp_dir("trainer_cyclical");
  test_util::write_tiny_idx_dir(dir + "/data");
  const std::vector<std::string> cyc = {"schedule.type=cyclical", "schedule.cycles=3", "prior.hyperprior=none"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), cyc.begin(), cyc.end());
    return tiny_config(dir + "/data", extra);
  };
  RunOptions a = quiet_run(dir + "/a");
  auto sa = run_training(with({"schedule.explore_fraction=0.5"}), a);
  EXPECT_EQ(sa.values.at("samples"), 10);
  RunOptions c = quiet_run(dir + "/cold");
  run_training(with({"sampler.temperature=0"}), c);
  const auto na = metrics_column(dir + "/a/metrics.csv", "sample_test_nll");
  const auto nc = metrics_column(dir + "/cold/metrics.csv", "sample_test_nll");
  ASSERT_GE(na.size(), 2u);
  EXPECT_EQ(na[0], nc[0]);
  EXPECT_NE(na[1], nc[1]);
  RunOptions b = quiet_run(dir + "/b");
  b.stop_after_steps = 137;
  run_training(with({"schedule.explore_fraction=0.5"}), b);
  b.stop_after_steps = -1;
  b.resume = true;
  auto sb = run_training(load_config(dir + "/b/config.yaml"), b);
  EXPECT_EQ(metrics_without_timing(dir + "/a/metrics.csv"), metrics_without_timing(dir + "/b/metrics.csv"));
  EXPECT_EQ(sa.values.at("test_nll"), sb.values.at("test_nll"));
  // Gibbs steps only in sampling stages: with the Gamma hyperprior, λ is unchanged at epoch 5 (steps
  // 1–50 explore) and from epoch 10 to 15 (steps 101–150 explore), and moves from epoch 5 to 10.
  RunOptions g = quiet_run(dir + "/gibbs");
  run_training(with({"schedule.explore_fraction=0.5", "prior.hyperprior=gamma"}), g);
  const auto lam = metrics_column(dir + "/gibbs/metrics.csv", "lambda.fc1.weight");
  ASSERT_GE(lam.size(), 3u);
  EXPECT_EQ(lam[0], 1.0);
  EXPECT_NE(lam[1], lam[0]);
  EXPECT_EQ(lam[2], lam[1]);
  // Optimizers have no noise to switch off: an error naming the key.
  RunOptions o = quiet_run(dir + "/sgd");
  try {
    run_training(with({"schedule.explore_fraction=0.5", "sampler.name=sgd"}), o);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("schedule.explore_fraction"), std::string::npos) << e.what();
  }
}

// prior.gibbs_start_epochs: λ stays at its initial value until the warm-up ends (epoch 10 of 30,
// evaluations every 5 epochs), then the Gibbs steps move it; prior.init: init_scale starts it at
// n/‖θ‖² of the initial weights (fan-in uniform init of 256 inputs: θ² averages 1/(3·256), λ ≈ 768).
TEST(Trainer, GibbsWarmupAndInitialPrecision) {
  auto dir = test_util::temp_dir("trainer_gibbs_start");
  test_util::write_tiny_idx_dir(dir + "/data");
  RunOptions a = quiet_run(dir + "/a");
  run_training(tiny_config(dir + "/data", {"prior.gibbs_start_epochs=10", "prior.init=init_scale"}), a);
  auto lambda = metrics_column(dir + "/a/metrics.csv", "lambda.fc1.weight");
  ASSERT_EQ(lambda.size(), 6u);                     // epochs 5, 10, ..., 30
  EXPECT_NEAR(lambda[0], 768, 768 * 0.05);           // 5120 weights: the sample mean of θ² is within ~2 %
  EXPECT_EQ(lambda[1], lambda[0]);                   // epoch 10: the warm-up's last step, no Gibbs step yet
  for (size_t i = 2; i < lambda.size(); ++i) EXPECT_NE(lambda[i], lambda[0]) << i;
}

TEST(Trainer, RunDirectoryNeverOverwrittenWithoutFlag) {
  auto dir = test_util::temp_dir("trainer_overwrite");
  test_util::write_tiny_idx_dir(dir + "/data");
  RunOptions ro = quiet_run(dir + "/run");
  auto cfg = tiny_config(dir + "/data", {"train.epochs=2", "train.burn_in=1", "train.eval_every=1"});
  run_training(cfg, ro);
  std::ofstream(dir + "/run/marker") << "x";
  try {
    run_training(cfg, ro);
    FAIL() << "overwrote an existing run";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--overwrite"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir + "/run/marker"));
  ro.overwrite = true;
  run_training(cfg, ro);
  EXPECT_FALSE(fs::exists(dir + "/run/marker"));
  EXPECT_TRUE(fs::exists(dir + "/run/summary.json"));
}

TEST(Trainer, BadSettingsRejected) {
  auto dir = test_util::temp_dir("trainer_bad");
  test_util::write_tiny_idx_dir(dir + "/data");
  RunOptions ro = quiet_run(dir + "/run");
  // Batch larger than the 500 training examples.
  EXPECT_THROW(run_training(tiny_config(dir + "/data", {"train.batch_size=501"}), ro), std::invalid_argument);
  // val_size >= train size.
  ro.overwrite = true;
  EXPECT_THROW(run_training(tiny_config(dir + "/data", {"data.val_size=600"}), ro), std::invalid_argument);
  // Unknown model / sampler / schedule keys.
  EXPECT_THROW(run_training(tiny_config(dir + "/data", {"model.hiden=3"}), ro), std::invalid_argument);
  EXPECT_THROW(run_training(tiny_config(dir + "/data", {"sampler.lr=-1"}), ro), std::invalid_argument);
  EXPECT_THROW(run_training(tiny_config(dir + "/data", {"schedule.typo=1"}), ro), std::invalid_argument);
  // Resume without a checkpoint.
  RunOptions r2 = ro;
  r2.resume = true;
  r2.out_dir = dir + "/nothing";
  EXPECT_THROW(run_training(tiny_config(dir + "/data"), r2), std::invalid_argument);
}

// predict re-averages saved samples to the same numbers the run reported.
TEST(Trainer, PredictReaveragesSavedSamples) {
  auto dir = test_util::temp_dir("trainer_predict");
  test_util::write_tiny_idx_dir(dir + "/data");
  RunOptions ro = quiet_run(dir + "/run");
  auto s = run_training(tiny_config(dir + "/data", {"train.epochs=8", "train.burn_in=3", "output.save_samples=true"}), ro);
  auto p = predict_run(ro.out_dir, {}, dir + "/predict.json", true);
  EXPECT_EQ(p.at("samples"), 5);
  EXPECT_EQ(p.at("test_error"), s.values.at("test_error"));
  EXPECT_NEAR(p.at("test_nll"), s.values.at("test_nll"), 1e-9);
  EXPECT_TRUE(fs::exists(dir + "/predict.json"));
}
