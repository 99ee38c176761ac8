// The training loop's units on their own, without a run: plan arithmetic, data order, the
// posterior-predictive sums (against direct formulas), the evaluator's units, metrics.csv,
// the divergence guard and the convergence traces (save/load round trips for resume).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/process_age.h"
#include "core/remove_tree.h"
#include "compat.h"
#include "proc_util.h"
#include "config/experiment_config.h"
#include "metrics/host_reads.h"
#include "metrics/predictive_metrics.h"
#include "metrics/reliability.h"
#include "train/convergence_trace.h"
#include "train/divergence_guard.h"
#include "train/evaluator.h"
#include "train/metrics_log.h"
#include "train/minibatches.h"
#include "train/posterior_predictive.h"
#include "train/run_plan.h"
#include "core/signals.h"

using namespace sgmcmc;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("sgmcmc_units_" + name + "_" + std::to_string(getpid()));
  sgmcmc::remove_tree(d);
  fs::create_directories(d);
  return d;
}

ExperimentConfig config_with(const std::vector<std::string>& sets) {
  auto raw = parse_raw_config("sampler: {name: sgld, lr: 1.0e-3}\n", "units.yaml");
  for (const auto& s : sets) apply_override(raw, s);
  return build_config(raw);
}

std::string slurp(const fs::path& p) { return test_util::read_text(p.string()); }

// `save(archive)` written to memory and read back, as a checkpoint would be.
template <typename Save>
std::unique_ptr<torch::serialize::InputArchive> round_trip(Save&& save) {
  torch::serialize::OutputArchive out;
  save(out);
  std::stringstream buf;
  out.save_to(buf);
  auto in = std::make_unique<torch::serialize::InputArchive>();
  in->load_from(buf);
  return in;
}

}  // namespace

// process_age_seconds (summary.json's time.launch): at least the time since this file's statics were
// initialized (after the process started), growing with the clock and no faster (both reads' difference
// within the steady clock's interval around them: the two clocks tick at one rate), and a new process's
// (a fork's child, reading at once) well under a second: a wrong field of /proc/self/stat (a count, the
// boot-relative start of something else) reads as days or as the machine's uptime.
const auto kStaticsAt = std::chrono::steady_clock::now();
TEST(ProcessAge, CountsFromTheProcessStartAtTheClocksRate) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const auto t0 = Clock::now();
  const auto a1 = process_age_seconds();
  ASSERT_TRUE(a1.has_value());
  EXPECT_GE(*a1, seconds(t0 - kStaticsAt));
  volatile double x = 0;
  while (Clock::now() - t0 < std::chrono::milliseconds(20)) x = x + 1;
  const auto a2 = process_age_seconds();
  const auto t1 = Clock::now();
  ASSERT_TRUE(a2.has_value());
  EXPECT_GE(*a2 - *a1, 0.019);
  EXPECT_LE(*a2 - *a1, seconds(t1 - t0) + 1e-4);
  int fd[2];
  ASSERT_EQ(pipe(fd), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    const auto age = process_age_seconds();
    const double v = age ? *age : -1.0;
    _exit(write(fd[1], &v, sizeof v) == sizeof v ? 0 : 1);
  }
  double child = -2;
  ASSERT_EQ(read(fd[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  int status = 0;
  waitpid(pid, &status, 0);
  close(fd[0]), close(fd[1]);
  EXPECT_GE(child, 0);
  EXPECT_LT(child, 1.0);
}

TEST(RunPlan, StepArithmetic) {
  // N = 1050, n = 100: 10 steps per epoch (the remainder of 50 is dropped); burn-in 2.5 epochs -> 25 steps.
  auto p = make_run_plan(config_with({"train.epochs=6", "train.burn_in=2.5", "train.batch_size=100",
                                      "train.eval_every=2", "prior.gibbs_every_steps=7"}),
                         1050, true);
  EXPECT_EQ(p.steps_per_epoch, 10);
  EXPECT_EQ(p.total_steps, 60);
  EXPECT_EQ(p.burn_in_steps, 25);
  EXPECT_EQ(p.thin, 10);
  EXPECT_DOUBLE_EQ(p.grad_scale(), 10.5);
  EXPECT_FALSE(p.sample_due(25));
  EXPECT_TRUE(p.sample_due(35));
  EXPECT_FALSE(p.sample_due(40));
  EXPECT_TRUE(p.eval_due(20));
  EXPECT_FALSE(p.eval_due(30));
  EXPECT_TRUE(p.eval_due(60));
  EXPECT_TRUE(p.gibbs_due(14));
  EXPECT_FALSE(p.gibbs_due(15));
  p.collects_samples = false;
  EXPECT_FALSE(p.sample_due(35));
  // checkpoints: by the clock (every 60 s here), always at the last step, at every evaluation with 0
  EXPECT_FALSE(p.checkpoint_due(20, 60, 59.9));
  EXPECT_TRUE(p.checkpoint_due(20, 60, 60.0));
  EXPECT_TRUE(p.checkpoint_due(60, 60, 0.5));
  EXPECT_TRUE(p.checkpoint_due(20, 0, 0.0));
}

TEST(RunPlan, RejectsBatchLargerThanDataAndBurnInAsLongAsTheRun) {
  EXPECT_THROW(make_run_plan(config_with({"train.batch_size=600"}), 500, true), std::invalid_argument);
  auto burn = config_with({"train.steps=40", "train.burn_in_steps=40"});
  EXPECT_THROW(make_run_plan(burn, 1000, true), std::invalid_argument);
  EXPECT_NO_THROW(make_run_plan(burn, 1000, false));  // optimizers collect no samples
}

// next_due(step) is the first later step where gibbs_due, sample_due or eval_due holds (or the end),
// against a search step by step, over plans with Gibbs steps from a start, thinning, evaluations by
// epoch and by steps, and an optimizer's plan (no samples).
TEST(RunPlan, NextDueIsTheFirstStepWithHostWork) {
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"train.epochs=6", "train.burn_in=2.5", "train.batch_size=100", "train.eval_every=2", "prior.gibbs_every_steps=7"},
           {"train.epochs=7", "train.burn_in=1", "train.batch_size=100", "train.thin=3", "train.eval_every_steps=25",
            "prior.gibbs_every_epochs=1", "prior.gibbs_start_steps=33"},
           {"train.steps=57", "train.burn_in_steps=11", "train.batch_size=100", "train.eval_every=3"}}) {
    for (bool samples : {true, false}) {
      const auto p = make_run_plan(config_with(sets), 1050, samples);
      for (int64_t step = 0; step < p.total_steps; ++step) {
        int64_t want = step + 1;
        while (want < p.total_steps && !(p.gibbs_due(want) || p.sample_due(want) || p.eval_due(want))) ++want;
        EXPECT_EQ(p.next_due(step), want) << sets[0] << " samples " << samples << " step " << step;
      }
    }
  }
}

// train.graph_steps: auto (where the step is captured) is the shortest interval between due events, so
// that blocks fill it; a long interval its largest divisor of at least a quarter of the cap, else the cap.
// train.eval_lag: auto is 20 steps on a GPU, at most half the evaluation or Gibbs interval; 0 on the CPU.
TEST(RunPlan, AutoBlockStepsAndEvalLagFollowTheDueEvents) {
  // App. H.1's shape: 100 steps an epoch, an evaluation, a sample and a Gibbs step each epoch
  auto h1 = make_run_plan(config_with({"train.epochs=800", "train.burn_in=50", "train.batch_size=500"}), 50000, true);
  EXPECT_EQ(h1.auto_graph_steps(), 100);
  EXPECT_EQ(h1.auto_eval_lag(true), RunPlan::kAutoEvalLag);
  EXPECT_EQ(h1.auto_eval_lag(false), 0);
  // the shortest of the intervals: Gibbs every 7 steps; samples every 3 (an optimizer collects none)
  auto p = make_run_plan(config_with({"train.epochs=6", "train.burn_in=2.5", "train.batch_size=100",
                                      "train.eval_every=2", "prior.gibbs_every_steps=7"}), 1050, true);
  EXPECT_EQ(p.auto_graph_steps(), 7);
  EXPECT_EQ(p.auto_eval_lag(true), 3);  // half of Gibbs' 7 steps
  auto thin = make_run_plan(config_with({"train.epochs=4", "train.batch_size=10", "train.thin=3"}), 1000, true);
  EXPECT_EQ(thin.auto_graph_steps(), 3);
  EXPECT_EQ(make_run_plan(config_with({"train.epochs=4", "train.batch_size=10", "train.thin=3"}), 1000, false)
                .auto_graph_steps(), 100);
  // long intervals: 1000-step epochs take 250 (a divisor), 1009 (prime) the cap, 600 takes 200
  auto long_epoch = [](int64_t n) {
    return make_run_plan(config_with({"train.epochs=3", "train.burn_in=1", "train.batch_size=10"}), 10 * n, true);
  };
  EXPECT_EQ(long_epoch(1000).auto_graph_steps(), 250);
  EXPECT_EQ(long_epoch(1009).auto_graph_steps(), RunPlan::kMaxAutoBlock);
  EXPECT_EQ(long_epoch(600).auto_graph_steps(), 200);
  // never longer than the run; evaluations every 10 steps leave a lag of 5
  EXPECT_EQ(make_run_plan(config_with({"train.steps=40", "train.batch_size=10", "train.eval_every_steps=10"}), 1000, false)
                .auto_eval_lag(true), 5);
  EXPECT_EQ(make_run_plan(config_with({"train.steps=30", "train.batch_size=10"}), 100000, false).auto_graph_steps(), 30);
}

TEST(MinibatchStream, EveryEpochVisitsEachExampleOnceAndResumesExactly) {
  auto gen = compat::make_generator(torch::kCPU, 3);
  MinibatchStream s(103, 10, 1, torch::kCPU, gen);
  std::vector<torch::Tensor> epoch;
  for (int i = 0; i < 10; ++i) epoch.push_back(s.next());
  EXPECT_EQ(s.position(), 0);
  auto seen = std::get<0>(at::_unique(torch::cat(epoch)));
  EXPECT_EQ(seen.numel(), 100);  // 10 distinct batches of 10, 3 examples dropped
  // Save mid-epoch, continue, and compare with a stream restored from the checkpoint.
  s.next();
  auto in = round_trip([&](auto& ar) { s.save(ar); });
  auto state = compat::generator_state(gen);
  auto a = s.next(), b = s.next();
  auto gen2 = compat::make_generator(torch::kCPU, 99);
  compat::set_generator_state(gen2, state);
  MinibatchStream r(103, 10, 1, torch::kCPU, gen2);
  r.load(*in, 1, "ckpt");
  EXPECT_TRUE(torch::equal(r.next(), a));
  EXPECT_TRUE(torch::equal(r.next(), b));
}

// next_block(k) is next() k times concatenated, the same draws of the generator (10 steps an epoch):
// from an epoch's start, inside it, up to its end, a whole epoch, across an epoch's end; with chains.
TEST(MinibatchStream, BlocksEqualSingleBatches) {
  for (int64_t chains : {1, 3}) {
    auto gen_a = compat::make_generator(torch::kCPU, 5), gen_b = compat::make_generator(torch::kCPU, 5);
    MinibatchStream singles(103, 10, chains, torch::kCPU, gen_a), blocks(103, 10, chains, torch::kCPU, gen_b);
    for (int64_t k : {4, 4, 2, 10, 4, 4, 1, 10, 3}) {
      std::vector<torch::Tensor> want;
      for (int64_t j = 0; j < k; ++j) want.push_back(singles.next());
      const auto got = blocks.next_block(k);
      EXPECT_TRUE(torch::equal(got, torch::cat(want))) << "chains " << chains << " k " << k;
      EXPECT_EQ(blocks.position(), singles.position());
    }
  }
  MinibatchStream s(103, 10, 1, torch::kCPU, compat::make_generator(torch::kCPU, 5));
  EXPECT_THROW(s.next_block(0), std::invalid_argument);
}

TEST(MinibatchStream, ChainsDrawIndependentPermutations) {
  MinibatchStream s(50, 10, 3, torch::kCPU, compat::make_generator(torch::kCPU, 1));
  auto idx = s.next().view({3, 10});
  EXPECT_FALSE(torch::equal(idx[0], idx[1]));
  EXPECT_FALSE(torch::equal(idx[1], idx[2]));
}

TEST(PosteriorPredictive, MeansOverSamplesAndChainsAndMixtureDensity) {
  // Two samples of two chains' regression means on 3 points, τ = 4: the mean predictive is the
  // average of the four, and log_density_sum = log Σ_s (1/2) Σ_c N(y; f_sc, 1/τ).
  auto y = torch::tensor({0.0, 1.0, -1.0}, torch::kFloat64);
  auto s1 = torch::tensor({{0.1, 0.9, -1.2}, {0.0, 1.2, -0.8}}, torch::kFloat32);
  auto s2 = torch::tensor({{-0.2, 1.0, -1.0}, {0.3, 0.7, -0.9}}, torch::kFloat32);
  PosteriorPredictive p(/*mixture_density=*/true);
  p.add("test", s1, y, 4.0);
  p.end_sample();
  p.add("test", s2, y, 4.0);
  p.end_sample();
  EXPECT_EQ(p.count(), 2);
  auto expect_mean = (s1.to(torch::kFloat64).sum(0) + s2.to(torch::kFloat64).sum(0)) / 4;
  // The chain mean is taken in the predictions' float32: half an ulp of |x| <= 1.2 is 6e-8.
  EXPECT_TRUE(torch::allclose(p.mean("test"), expect_mean, /*rtol=*/0, /*atol=*/1e-7));
  auto dens = [&](const torch::Tensor& f) {
    auto r = f.to(torch::kFloat64) - y;
    return (std::sqrt(4.0 / (2 * M_PI)) * torch::exp(-0.5 * 4.0 * r * r));
  };
  auto direct = ((dens(s1[0]) + dens(s1[1])) / 2 + (dens(s2[0]) + dens(s2[1])) / 2).log();
  EXPECT_TRUE(torch::allclose(p.log_density_sum("test"), direct, 1e-12, 1e-12));
  EXPECT_FALSE(p.has("val"));
  // Round trip through a checkpoint.
  auto in = round_trip([&](auto& ar) { p.save(ar); });
  PosteriorPredictive q(true);
  q.load(*in, torch::kCPU, 2, {"test", "val"});
  EXPECT_TRUE(torch::equal(q.mean("test"), p.mean("test")));
  EXPECT_TRUE(torch::equal(q.log_density_sum("test"), p.log_density_sum("test")));
}

TEST(PosteriorPredictive, OneChainAddsItsPredictionBitForBit) {
  auto probs = torch::softmax(torch::randn({5, 3}), 1);
  PosteriorPredictive p;
  auto mean = p.add("test", probs.unsqueeze(0), torch::zeros({5}, torch::kInt64), 1.0);
  p.end_sample();
  EXPECT_TRUE(torch::equal(mean, probs.to(torch::kFloat64)));
  EXPECT_FALSE(p.log_density_sum("test").defined());
}

TEST(Evaluator, StandardizedTargetsReportOriginalUnits) {
  Dataset d;
  d.task = Task::kRegression;
  d.standardized_targets = true;
  d.target_scale = 10.0;
  Batch split{torch::zeros({2, 1}), torch::tensor({0.0, 1.0}, torch::kFloat64)};
  Evaluator e(d, 100);
  auto m = e.metrics(torch::tensor({0.5, 1.5}, torch::kFloat64), split, 1.0);
  EXPECT_NEAR(m.at("rmse"), 5.0, 1e-12);  // 0.5 standardized units = 5 original units
  // nll of N(y; f, 1) in standardized units, plus log(scale) for the density of the original target.
  EXPECT_NEAR(m.at("nll"), 0.5 * 0.25 + 0.5 * std::log(2 * M_PI) + std::log(10.0), 1e-12);
  EXPECT_EQ(e.headline(), "rmse");
}

// The per-point nll is the metric's, point by point: its mean is "nll" for a classifier, for a
// regression predictive with one noise precision and for the mixture of standardized targets.
TEST(Evaluator, PointwiseNllAveragesToTheMetric) {
  torch::manual_seed(3);
  Dataset c;
  c.task = Task::kClassification;
  Batch cs{torch::zeros({6, 1}), torch::tensor({0, 2, 1, 1, 0, 2}, torch::kInt64)};
  Evaluator ec(c, 100);
  const PredictiveSummary pc{torch::softmax(torch::randn({6, 3}, torch::kFloat64), 1), {}, {}};
  EXPECT_NEAR(ec.pointwise_nll(pc, cs, 1.0).mean().item<double>(), ec.metrics(pc, cs, 1.0).at("nll"), 1e-12);
  EXPECT_NEAR(ec.pointwise_nll(pc, cs, 1.0)[1].item<double>(), -std::log(pc.mean[1][2].item<double>()), 1e-12);

  Dataset r;
  r.task = Task::kRegression;
  r.standardized_targets = true;
  r.target_scale = 7.0;
  Batch rs{torch::zeros({5, 1}), torch::randn({5}, torch::kFloat64)};
  Evaluator er(r, 100);
  const PredictiveSummary pr{torch::randn({5}, torch::kFloat64), {}, {}};
  EXPECT_NEAR(er.pointwise_nll(pr, rs, 2.5).mean().item<double>(), er.metrics(pr, rs, 2.5).at("nll"), 1e-12);
  const auto lse = torch::randn({5}, torch::kFloat64) + 1.0;
  EXPECT_NEAR(er.pointwise_nll(pr, rs, 2.5, lse, 3).mean().item<double>(), er.metrics(pr, rs, 2.5, lse, 3).at("nll"),
              1e-12);
}

TEST(MetricsLog, HeaderFromTheFirstRowAndResumeKeepsCheckpointedRows) {
  auto dir = temp_dir("log");
  {
    MetricsLog log(dir / "metrics.csv", "error");
    log.append({{"step", 1}, {"test_error", 0.5}, {"lambda.w", 2}, {"train_loss", NAN}});
    log.append({{"step", 2}, {"test_error", 0.25}, {"lambda.w", 3}, {"extra", 9}});
    log.append({{"step", 3}, {"test_error", 0.125}, {"lambda.w", 4}});
    EXPECT_EQ(log.rows(), 3);
  }
  auto text = slurp(dir / "metrics.csv");
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "epoch,step,wall_seconds,lr,train_loss,test_error,test_nll,val_error,val_nll,sample_test_error,"
            "sample_test_nll,samples,steps_per_second,lambda.w,test_mi,val_mi");
  EXPECT_NE(text.find(",1,,,,0.5,"), std::string::npos);  // NaN and missing keys are empty cells
  EXPECT_EQ(text.find("9"), std::string::npos);           // keys outside the header are not written
  MetricsLog resumed(dir / "metrics.csv", "error", 2);
  resumed.append({{"step", 4}, {"test_error", 0.0625}, {"lambda.w", 5}});
  text = slurp(dir / "metrics.csv");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);  // header + rows 1, 2, 4
  EXPECT_EQ(text.find("0.125"), std::string::npos);
  EXPECT_NE(text.find("0.0625"), std::string::npos);
}

TEST(DivergenceGuard, ReportsThenThrowsWithHintAndLastCheckpoint) {
  OptionMap opts("sampler");
  opts.set("alpha", "0.01");
  auto p = torch::ones({3});
  std::vector<std::string> reports;
  DivergenceGuard g("sghmc", opts, {p}, true, "/run/checkpoint.pt",
                    [&](int64_t step, const std::string& what) { reports.push_back(std::to_string(step) + " " + what); });
  g.check_step_loss(1, torch::tensor(1.0), 0.1);
  g.check_state(1, 0.1);
  EXPECT_TRUE(reports.empty());
  g.checkpoint_written(5);
  try {
    g.check_step_loss(7, torch::tensor(NAN), 0.1);
    FAIL() << "no throw";
  } catch (const RunDiverged& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("run diverged at step 7 (sghmc, lr 0.1): non-finite loss"), std::string::npos) << m;
    EXPECT_NE(m.find("alpha=0.01"), std::string::npos) << m;
    EXPECT_NE(m.find("step 5, kept in /run/checkpoint.pt"), std::string::npos) << m;
  }
  p[1] = INFINITY;
  EXPECT_THROW(g.check_state(8, 0.1), RunDiverged);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[1], "8 non-finite parameters");
  // A non-finite loss at step 1 is the model's at its initial parameters: no step-size hint.
  try {
    DivergenceGuard first("sghmc", opts, {torch::ones({1})}, true, "c", [](int64_t, const std::string&) {});
    first.check_step_loss(1, torch::tensor(NAN), 0.1);
    FAIL() << "no throw";
  } catch (const RunDiverged& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("at the initial parameters, before any update"), std::string::npos) << m;
    EXPECT_NE(m.find("the step size is not the cause"), std::string::npos) << m;
    EXPECT_EQ(m.find("lower sampler.lr"), std::string::npos) << m;
  }
  // An accelerator run does not read the loss every step.
  DivergenceGuard lazy("sgld", opts, {torch::ones({1})}, false, "c", [](int64_t, const std::string&) {});
  EXPECT_NO_THROW(lazy.check_step_loss(1, torch::tensor(NAN), 0.1));
  EXPECT_THROW(lazy.check_state(1, 0.1, /*loss_finite=*/false), RunDiverged);
}

// The state check reads Σ 0·θ: NaN and ±∞ anywhere make it NaN; finite values near float32's
// largest, which a plain Σθ would overflow to ∞, do not. One read per step: a second check of the
// same step does not look again.
TEST(DivergenceGuard, FlagsNanAndInfinityButNotLargeFiniteParameters) {
  OptionMap opts("sampler");
  auto big = torch::full({1000}, 3e38f);
  auto other = torch::ones({2, 3}, torch::kFloat64);
  DivergenceGuard g("sgld", opts, {big, other}, false, "c", [](int64_t, const std::string&) {});
  EXPECT_NO_THROW(g.check_state(1, 0.1));
  for (double bad : {static_cast<double>(NAN), static_cast<double>(INFINITY), -static_cast<double>(INFINITY)}) {
    other[1][2] = bad;
    EXPECT_NO_THROW(g.check_state(1, 0.1)) << "step 1 was checked already";
    EXPECT_THROW(g.check_state(2, 0.1), RunDiverged) << bad;
    other[1][2] = 1.0;
    big[999] = static_cast<float>(bad);
    EXPECT_THROW(g.check_state(3, 0.1), RunDiverged) << bad;
    big[999] = 3e38f;
  }
  // Parameters of more than 2^24 elements together go in chunks: a bad value in either is found.
  auto a = torch::zeros({10000000}), b = torch::zeros({10000000});
  DivergenceGuard chunked("sgld", opts, {a, b}, false, "c", [](int64_t, const std::string&) {});
  EXPECT_NO_THROW(chunked.check_state(1, 0.1));
  b[9999999] = NAN;
  EXPECT_THROW(chunked.check_state(2, 0.1), RunDiverged);
  b[9999999] = 0.0f;
  a[0] = -INFINITY;
  EXPECT_THROW(chunked.check_state(3, 0.1), RunDiverged);
}

// Several predictives in one MetricsBatch give each the metrics of its own single call, and the
// scalars queued beside them come back with the same bits as .item().
TEST(PredictiveMetrics, BatchEqualsOneCallPerPredictive) {
  auto gen = compat::make_generator(torch::kCPU, 5);
  auto probs = [&](int64_t n) { return at::rand({n, 4}, gen, torch::kFloat64).softmax(1); };
  auto labels = [&](int64_t n) { return at::randint(0, 4, {n}, gen, torch::TensorOptions().dtype(torch::kInt64)); };
  const PredictiveSummary a{probs(50), {}, {}}, b{probs(30), at::rand({30}, gen, torch::kFloat64), {}},
      c{probs(70).to(torch::kFloat32), {}, {}};
  const auto ya = labels(50), yb = labels(30), yc = labels(70);
  MetricsBatch batch(true);
  const auto loss = torch::tensor(0.123456789, torch::kFloat64);
  const size_t ia = batch.add(a, ya), ib = batch.add(b, yb), iempty = batch.add({}, ya), ic = batch.add(c, yc);
  const size_t is = batch.add_scalar(loss);
  batch.compute();
  EXPECT_EQ(batch.scalar(is), loss.item<double>());
  EXPECT_TRUE(batch.metrics(iempty).empty());
  const std::vector<std::pair<size_t, std::map<std::string, double>>> expect = {
      {ia, predictive_metrics(a, ya, true)}, {ib, predictive_metrics(b, yb, true)}, {ic, predictive_metrics(c, yc, true)}};
  for (const auto& [i, single] : expect) {
    ASSERT_EQ(batch.metrics(i).size(), single.size()) << i;
    for (const auto& [k, v] : single) EXPECT_NEAR(batch.metrics(i).at(k), v, 1e-14) << i << " " << k;
  }
  EXPECT_EQ(batch.metrics(ib).count("mi"), 1u);
  EXPECT_EQ(batch.metrics(ia).count("mi"), 0u);
  // the calibration of each predictive is its own: a perfectly confident, right one has ece 0
  MetricsBatch sure(true);
  const auto y = labels(40);
  const size_t right = sure.add({torch::one_hot(y, 4).to(torch::kFloat64), {}, {}}, y), mixed = sure.add(a, ya);
  sure.compute();
  EXPECT_EQ(sure.metrics(right).at("ece"), 0.0);
  EXPECT_EQ(sure.metrics(right).at("error"), 0.0);
  EXPECT_NEAR(sure.metrics(mixed).at("ece"), predictive_metrics(a, ya, true).at("ece"), 1e-14);

  // regression: a point prediction, a predictive with its variance, one with a given nll per point
  auto f1 = at::randn({40}, gen, torch::kFloat64), t1 = at::randn({40}, gen, torch::kFloat64);
  auto f2 = at::randn({25}, gen, torch::kFloat64), t2 = at::randn({25}, gen, torch::kFloat64);
  const PredictiveSummary r2{f2, {}, at::rand({25}, gen, torch::kFloat64) + 0.1};
  const auto nll = at::rand({40}, gen, torch::kFloat64);
  MetricsBatch reg(false, 4.0, true, -1.0, 1.0);
  const size_t j1 = reg.add({f1, {}, {}}, t1), j2 = reg.add(r2, t2), j3 = reg.add({f1, {}, {}}, t1, nll);
  reg.compute();
  const auto m1 = predictive_metrics(f1, t1, false, 4.0, true, -1.0, 1.0);
  const auto m2 = predictive_metrics(r2, t2, false, 4.0, true, -1.0, 1.0);
  for (const auto& [k, v] : m1) EXPECT_NEAR(reg.metrics(j1).at(k), v, 1e-12) << k;
  for (const auto& [k, v] : m2) EXPECT_NEAR(reg.metrics(j2).at(k), v, 1e-12) << k;
  EXPECT_NEAR(reg.metrics(j3).at("nll"), nll.mean().item<double>(), 1e-14);
  EXPECT_TRUE(reg.has_pointwise_nll(j3));
  EXPECT_FALSE(reg.has_pointwise_nll(j1));
}

// compute() in halves, as a captured evaluation runs it: pack() queues every value on the device,
// unpack() turns them into metrics, also in a batch moved since (a phase graph keeps its batch) and
// again after its inputs changed in place and the batch packed them anew (a replay's refresh).
TEST(PredictiveMetrics, PackedBatchUnpacksAfterAMoveAndARefresh) {
  auto gen = compat::make_generator(torch::kCPU, 6);
  auto p = at::rand({40, 3}, gen, torch::kFloat64).softmax(1);
  const auto y = at::randint(0, 3, {40}, gen, torch::TensorOptions().dtype(torch::kInt64));
  const auto ent = at::rand({40}, gen, torch::kFloat64);
  const auto loss = torch::tensor(2.5, torch::kFloat64);
  MetricsBatch batch(true);
  const size_t i = batch.add({p, ent, {}}, y), s = batch.add_scalar(loss);
  auto packed = batch.pack();
  MetricsBatch moved = std::move(batch);
  moved.unpack(HostReads::to_host(packed));
  EXPECT_EQ(moved.scalar(s), 2.5);
  for (const auto& [k, v] : predictive_metrics({p, ent, {}}, y, true)) EXPECT_EQ(moved.metrics(i).at(k), v) << k;
  p.copy_(at::rand({40, 3}, gen, torch::kFloat64).softmax(1));
  loss.fill_(7.0);
  packed = moved.pack();
  moved.unpack(HostReads::to_host(packed));
  EXPECT_EQ(moved.scalar(s), 7.0);
  for (const auto& [k, v] : predictive_metrics({p, ent, {}}, y, true)) EXPECT_EQ(moved.metrics(i).at(k), v) << k;
}

// The summary with the sample count on the device is the host count's, bit for bit on the CPU.
TEST(PosteriorPredictive, SummaryWithADeviceCountEqualsTheHostCount) {
  auto gen = compat::make_generator(torch::kCPU, 8);
  PosteriorPredictive pp;
  const auto y = at::randint(0, 4, {30}, gen, torch::TensorOptions().dtype(torch::kInt64));
  for (int s = 0; s < 3; ++s) {
    pp.add("test", at::rand({2, 30, 4}, gen, torch::kFloat64).softmax(2), y, 1.0);
    pp.end_sample();
  }
  const auto host = pp.summary("test");
  const auto device = pp.summary("test", torch::tensor(3.0, torch::kFloat64));
  EXPECT_TRUE(torch::equal(host.mean, device.mean));
  EXPECT_TRUE(torch::equal(host.expected_entropy, device.expected_entropy));
  EXPECT_FALSE(pp.summary("val", torch::tensor(3.0, torch::kFloat64)).mean.defined());
  EXPECT_EQ(pp.buffers().size(), 4u);  // sum, lse, ent, sq of the one split
}

TEST(ConvergenceTrace, DiagnosticsFromFourSamplesAndRoundTrip) {
  ConvergenceTrace t;
  auto gen = compat::make_generator(torch::kCPU, 7);
  for (int i = 0; i < 3; ++i) t.record(at::randn({2}, gen, torch::kFloat64), at::randn({2, 3}, gen));
  EXPECT_TRUE(t.diagnostics().empty());
  t.record(at::randn({2}, gen, torch::kFloat64), at::randn({2, 3}, gen));
  auto d = t.diagnostics();
  for (const char* k : {"rhat_test_loglik", "ess_test_loglik", "rhat_weights_max", "ess_weights_min"})
    EXPECT_TRUE(d.count(k) && std::isfinite(d[k])) << k;
  auto in = round_trip([&](auto& ar) { t.save(ar); });
  ConvergenceTrace r;
  r.load(*in, torch::kCPU);
  EXPECT_EQ(r.size(), 4u);
  EXPECT_EQ(r.diagnostics(), d);
}

// HostReads (metrics/host_reads.h): every queued scalar comes back with the bits .item<double>()
// gives it (float64 copied, float32 widened exactly), in order of add(); nothing queued, nothing read.
TEST(HostReads, SameBitsAsItemInOneRead) {
  HostReads r;
  EXPECT_TRUE(r.read().empty());
  auto x = torch::rand({1000}, torch::TensorOptions().dtype(torch::kFloat64)) * 3.0;
  const std::vector<torch::Tensor> scalars = {x.mean(), x.square().sum(), x.max(),
                                              x.to(torch::kFloat32).mean(), torch::tensor(1e-300)};
  std::vector<size_t> at;
  for (const auto& t : scalars) at.push_back(r.add(t));
  const auto v = r.read();
  ASSERT_EQ(v.size(), scalars.size());
  for (size_t k = 0; k < scalars.size(); ++k) {
    EXPECT_EQ(at[k], k);
    EXPECT_EQ(v[k], scalars[k].item<double>()) << k;  // exact: the same bits
  }
}

TEST(PredictiveMetrics, CalibrationOnAHandCheckedExample) {
  // 4 points, 2 classes. Confidences 0.9, 0.9, 0.6, 0.55 -> bins 13, 13, 9, 8 (of 15); the two 0.9
  // points are one right, one wrong: |1 - 1.8| = 0.8; 0.6 right: 0.4; 0.55 wrong: 0.55.
  auto p = torch::tensor({{0.9, 0.1}, {0.1, 0.9}, {0.6, 0.4}, {0.45, 0.55}}, torch::kFloat64);
  auto y = torch::tensor({0, 0, 0, 0}, torch::kInt64);
  auto m = predictive_metrics(p, y, true);
  EXPECT_DOUBLE_EQ(m.at("error"), 0.5);
  EXPECT_NEAR(m.at("ece"), (0.8 + 0.4 + 0.55) / 4, 1e-12);
  EXPECT_NEAR(m.at("mce"), 0.55, 1e-12);  // bin gaps: 0.4, 0.4, 0.55
  const double brier = (0.01 + 0.01) + (0.81 + 0.81) + (0.16 + 0.16) + (0.3025 + 0.3025);
  EXPECT_NEAR(m.at("brier"), brier / 4, 1e-12);
  auto h = [](double q) { return -(q * std::log(q) + (1 - q) * std::log(1 - q)); };
  EXPECT_NEAR(m.at("entropy"), (2 * h(0.9) + h(0.6) + h(0.55)) / 4, 1e-12);
  EXPECT_EQ(m.count("mi"), 0u);  // a point prediction has no epistemic part
}

// The bins behind that ECE, and the reliability diagram drawn from them: one accuracy bar and one
// histogram bar per non-empty bin (3 here), the ECE in the header.
TEST(PredictiveMetrics, CalibrationBinsAndReliabilityDiagram) {
  auto p = torch::tensor({{0.9, 0.1}, {0.1, 0.9}, {0.6, 0.4}, {0.45, 0.55}}, torch::kFloat64);
  auto y = torch::tensor({0, 0, 0, 0}, torch::kInt64);
  const CalibrationBins b = calibration_bins(p, y);
  ASSERT_EQ(b.count.size(0), 15);
  EXPECT_EQ(b.count[13].item<double>(), 2);
  EXPECT_EQ(b.correct[13].item<double>(), 1);
  EXPECT_NEAR(b.confidence[13].item<double>(), 1.8, 1e-12);
  EXPECT_EQ(b.count[9].item<double>(), 1);
  EXPECT_EQ(b.count[8].item<double>(), 1);
  EXPECT_EQ(b.correct[8].item<double>(), 0);
  EXPECT_EQ(b.count.sum().item<double>(), 4);
  const std::string svg = reliability_svg(b, "demo <run>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("ECE 0.4375 (15 bins, n = 4)"), std::string::npos) << svg;  // (0.8 + 0.4 + 0.55)/4
  EXPECT_NE(svg.find("demo &lt;run&gt;"), std::string::npos);
  size_t bars = 0;
  for (size_t at = svg.find("fill:#4878cf"); at != std::string::npos; at = svg.find("fill:#4878cf", at + 1)) ++bars;
  EXPECT_EQ(bars, 3u);
}

TEST(PredictiveMetrics, MutualInformationOfDisagreeingMembers) {
  // Two members, one point: certain of class 0 and certain of class 1. p̄ = (0.5, 0.5): H = log 2,
  // E_m H(p_m) = 0 (up to the 1e-12 left), so mi = log 2: all uncertainty is epistemic.
  auto members = torch::tensor({{{1 - 1e-12, 1e-12}}, {{1e-12, 1 - 1e-12}}}, torch::kFloat64);
  PosteriorPredictive pp;
  pp.add("test", members, torch::tensor({0}, torch::kInt64), 1.0);
  pp.end_sample();
  auto m = predictive_metrics(pp.summary("test"), torch::tensor({0}, torch::kInt64), true);
  EXPECT_NEAR(m.at("entropy"), std::log(2.0), 1e-9);
  EXPECT_NEAR(m.at("mi"), std::log(2.0), 1e-9);
}

TEST(PredictiveMetrics, IntervalsOfTheMomentMatchedMixture) {
  // Samples f = ±1 at one point (τ = 4 each): predictive variance 1/4 + 1 = 1.25. A target at 0.7
  // lies inside the 50 % interval (±0.6745·1.118 = ±0.754) and a target at 1.5 only in the 90 %.
  PosteriorPredictive pp;
  auto y = torch::tensor({0.7, 1.5}, torch::kFloat64);
  pp.add("test", torch::tensor({{1.0, 1.0}}, torch::kFloat64), y, 4.0);
  pp.end_sample();
  pp.add("test", torch::tensor({{-1.0, -1.0}}, torch::kFloat64), y, 4.0);
  pp.end_sample();
  auto s = pp.summary("test");
  ASSERT_TRUE(s.variance.defined());
  EXPECT_NEAR(s.variance[0].item<double>(), 1.25, 1e-12);
  auto m = predictive_metrics(s, y, false, 4.0);
  EXPECT_DOUBLE_EQ(m.at("cover50"), 0.5);
  EXPECT_DOUBLE_EQ(m.at("cover90"), 1.0);
  EXPECT_NEAR(m.at("width50"), 2 * 0.6744897501960817 * std::sqrt(1.25), 1e-12);
  // A point prediction's interval is N(f, 1/τ).
  auto point = predictive_metrics(torch::tensor({0.0, 0.0}, torch::kFloat64), y, false, 4.0);
  EXPECT_NEAR(point.at("width90"), 2 * 1.6448536269514722 * 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(point.at("cover90"), 0.5);
}

TEST(PredictiveMetrics, CalibratedPredictionsHaveSmallEceAndNominalCoverage) {
  // Statistical check with a known answer: labels drawn from the predicted probabilities are
  // calibrated, so ECE -> 0; with n = 20000 and 15 bins its expected size is about
  // Σ_b (n_b/n)·sqrt(c(1-c)/n_b) <= sqrt(15 / (4·20000)) ≈ 0.014; 0.03 is a bound > 2x that.
  // Gaussian targets with the predicted variance: coverage 0.5 / 0.9 within 4 sd (0.014, 0.009).
  auto gen = compat::make_generator(torch::kCPU, 11);
  const int64_t n = 20000;
  auto conf = at::rand({n}, gen, torch::kFloat64) * 0.5 + 0.5;
  auto p = torch::stack({conf, 1 - conf}, 1);
  auto y = at::rand({n}, gen, torch::kFloat64).ge(conf).to(torch::kInt64);
  EXPECT_LT(predictive_metrics(p, y, true).at("ece"), 0.03);
  auto f = torch::zeros({n}, torch::kFloat64);
  auto t = at::randn({n}, gen, torch::kFloat64) * 0.5;
  auto m = predictive_metrics(f, t, false, 4.0);
  EXPECT_NEAR(m.at("cover50"), 0.5, 0.014);
  EXPECT_NEAR(m.at("cover90"), 0.9, 0.009);
}

// remove_tree (the replacement for std::filesystem::remove_all, which crashed in CUDA builds): a
// nested tree goes, a symbolic link inside it is removed without touching what it points to, and a
// missing path or a plain file are handled.
TEST(RemoveTree, RemovesNestedTreeButNotLinkTargets) {
  const auto d = temp_dir("remove_tree");
  const auto keep = temp_dir("remove_tree_keep") / "keep.txt";
  std::ofstream(keep) << "keep";
  fs::create_directories(d / "a" / "b");
  std::ofstream(d / "a" / "b" / "f.txt") << "x";
  std::ofstream(d / "top.txt") << "y";
  fs::create_symlink(keep, d / "a" / "link");
  fs::create_directory_symlink(keep.parent_path(), d / "dirlink");
  sgmcmc::remove_tree(d);
  EXPECT_FALSE(fs::exists(fs::symlink_status(d)));
  EXPECT_TRUE(fs::exists(keep));
  EXPECT_NO_THROW(sgmcmc::remove_tree(d));  // missing: nothing to do
  sgmcmc::remove_tree(keep);                // a plain file
  EXPECT_FALSE(fs::exists(keep));
  sgmcmc::remove_tree(keep.parent_path());
}
