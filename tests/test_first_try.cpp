// What a new user's first run meets: the health checks (train/health.h), the defaults that follow the
// data (train/run_plan.h, data.val_size: auto), samples kept by default, the step-size pilot
// (train/lr_pilot.h) and the kernels block (core/kernel_settings.h).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error_text.h"
#include "core/kernel_settings.h"
#include "tiny_idx.h"
#include "train/health.h"
#include "train/lr_pilot.h"
#include "data/tensors.h"
#include "train/run_plan.h"
#include "train/run_setup.h"
#include "train/trainer.h"

using namespace sgmcmc;
using sgmcmc::test_util::config_from;
using sgmcmc::test_util::temp_dir;
using sgmcmc::test_util::write_tiny_idx_dir;
namespace fs = std::filesystem;

namespace {

// 4 separable classes of 16x16 blobs: 600 train, 200 test; a 256-20-4 ReLU MLP.
const char* kTiny = R"(
name: tiny
seed: 5
data: {dir: DATA}
model: {name: mlp, hidden: [20], activation: relu}
sampler: SAMPLER
output: {progress: false}
)";

ExperimentConfig tiny(const std::string& data, const std::string& sampler, const std::vector<std::string>& sets = {}) {
  return config_from(kTiny, {{"DATA", data}, {"SAMPLER", sampler}}, sets, "tiny.yaml");
}

nlohmann::json summary_of(const std::string& dir) {
  std::ifstream in(dir + "/summary.json");
  return nlohmann::json::parse(in);
}

RunOptions quiet(const std::string& out) {
  RunOptions ro;
  ro.out_dir = out;
  ro.quiet = true;
  ro.overwrite = true;
  return ro;
}

}  // namespace

// --- the health checks, on rows built to trip each one ------------------------------------------

TEST(Health, EachCheckFiresOnceOnARowBuiltToTripIt) {
  HealthCheck h(/*classification=*/true, {{"test_nll", std::log(10.0)}}, "sghmc");
  // a first row: the loss's reference, nothing wrong
  EXPECT_TRUE(h.check(100, {{"train_loss", 0.9}, {"test_nll", 0.5}}, {{"lambda.w", 3.0}}).empty());
  // the loss far above its first value: 0.9 + 10·max(0.9, 1) = 10.9 < 11
  auto w = h.check(200, {{"train_loss", 11.0}, {"test_nll", 0.5}}, {{"lambda.w", 3.0}});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].check, "loss");
  EXPECT_NE(w[0].message.find("sampler.lr"), std::string::npos) << w[0].message;
  // worse than the uniform predictive, and a collapsed precision
  w = h.check(300, {{"train_loss", 11.0}, {"test_nll", 9.1}}, {{"lambda.w", 3e-4}});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].check, "trivial");
  EXPECT_EQ(w[1].check, "precision");
  EXPECT_NE(w[1].message.find("collapsed"), std::string::npos) << w[1].message;
  // each check warns once
  EXPECT_TRUE(h.check(400, {{"train_loss", 50.0}, {"test_nll", 9.1}}, {{"lambda.w", 1e-9}}).empty());
  EXPECT_TRUE(h.worse_than_trivial({{"test_nll", 9.1}}));
  EXPECT_FALSE(h.worse_than_trivial({{"test_nll", 2.0}}));
  // before any sample, the current sample's metric is the reported one at the end ...
  EXPECT_TRUE(h.worse_than_trivial({{"sample_test_nll", 3.0}}));
  // ... but mid-run a burn-in iterate worse than the uniform predictive is no warning
  HealthCheck burn_in(/*classification=*/true, {{"test_nll", std::log(10.0)}}, "sghmc");
  EXPECT_TRUE(burn_in.check(100, {{"train_loss", 0.9}, {"sample_test_nll", 3.0}}, {}).empty());
  const auto j = h.to_json(true);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["warnings"].size(), 3u);
}

TEST(Health, RegressionAgainstTheTrainingMeanAndAnExplodedPrecision) {
  HealthCheck h(/*classification=*/false, {{"test_rmse", 9.2}}, "sgld");
  auto w = h.check(10, {{"train_loss", 1.0}, {"test_rmse", 1.2e8}}, {{"tau", 1.5e-14}, {"lambda.b", 1e9}});
  ASSERT_EQ(w.size(), 2u);  // trivial and precision (one warning for both precisions)
  EXPECT_EQ(w[0].check, "trivial");
  EXPECT_NE(w[0].message.find("training mean"), std::string::npos) << w[0].message;
  EXPECT_EQ(w[1].check, "precision");
  EXPECT_FALSE(h.worse_than_trivial({{"test_rmse", 5.0}}));
}

// A healthy run stays quiet; one whose noise swamps the gradient finishes worse than the uniform
// predictive, says so in summary.json's health and reports kExitUnhealthy's condition.
TEST(Health, QuietOnAHealthyRunAndFiresOnARunBuiltToTripIt) {
  const std::string dir = temp_dir("health_run");
  write_tiny_idx_dir(dir + "/data");
  auto good = run_training(tiny(dir + "/data", "{name: sgld, lr: 1.0e-3}",
                                {"train.epochs=20", "train.batch_size=50", "data.val_size=100"}),
                           quiet(dir + "/good"));
  EXPECT_FALSE(good.worse_than_trivial);
  auto js = summary_of(dir + "/good");
  EXPECT_TRUE(js["health"]["ok"].get<bool>()) << js["health"].dump();
  // SGLD at temperature 10^6: noise of std ~45 per step swamps the gradient; the weights wander into
  // finite nonsense (confident, random predictions: a test NLL of ~20-300 against log 4 = 1.39), which
  // the finiteness guard cannot see. One sample only (the last step), so that the average of many
  // such samples, which these separable blobs let come out near right, does not hide it.
  auto bad_cfg = tiny(dir + "/data", "{name: sgld, lr: 1.0e-3, temperature: 1.0e6}",
                      {"train.epochs=10", "train.batch_size=50", "data.val_size=100", "prior.hyperprior=none",
                       "train.burn_in_steps=90"});
  const RunSummary bad = run_training(bad_cfg, quiet(dir + "/bad"));
  EXPECT_TRUE(bad.worse_than_trivial) << summary_of(dir + "/bad").dump();
  EXPECT_FALSE(bad.health_message.empty());
  // the trivial predictor's test NLL is the uniform one's, log K (K = 4 classes here)
  EXPECT_NE(bad.health_message.find("trivial predictor's " + number_text(std::log(4.0), 4)), std::string::npos)
      << bad.health_message;
  js = summary_of(dir + "/bad");
  EXPECT_FALSE(js["health"]["ok"].get<bool>());
  EXPECT_TRUE(js["health"]["worse_than_trivial"].get<bool>());
  remove_tree(dir);
}

// --- defaults that follow the data -------------------------------------------------------------

TEST(AutoDefaults, PlanResolvesBatchEpochsAndBurnInFromTheSetSize) {
  const ExperimentConfig c = build_config(parse_raw_config("sampler: {name: sgld, lr: 1.0e-3}\n", "a.yaml"));
  EXPECT_EQ(c.train.batch_size, -1);
  EXPECT_EQ(c.train.epochs, -1);
  EXPECT_EQ(c.data.val_size, -1);
  RunPlan p = make_run_plan(c, 2500, true);  // 3,000 examples less a sixth
  EXPECT_EQ(p.batch_size, 50);               // 2500 / 50
  EXPECT_EQ(p.steps_per_epoch, 50);
  EXPECT_EQ(p.total_steps, 200 * 50);        // 10,000 steps
  EXPECT_EQ(p.burn_in_steps, 1000);          // a tenth
  EXPECT_EQ(p.resolved.at("train.batch_size"), 50);
  p = make_run_plan(c, 50000, true);
  EXPECT_EQ(p.batch_size, 500);   // capped
  EXPECT_EQ(p.total_steps, 100 * 100);
  p = make_run_plan(c, 400, true);
  EXPECT_EQ(p.batch_size, 32);    // floored
  EXPECT_EQ(p.total_steps, 834 * 12);  // about 10,000 steps
  EXPECT_EQ(p.thin, 12);               // a sample an epoch
  p = make_run_plan(c, 200, true);     // batch auto: 32, 6 steps an epoch
  EXPECT_EQ(p.total_steps, 1667 * 6);  // 10,002 steps in 1,667 epochs
  EXPECT_EQ(p.thin, 10);               // a thousandth of the run, not every epoch
  EXPECT_EQ(p.eval_every, 100);        // a hundredth
  EXPECT_EQ(p.resolved.at("train.thin"), 10);
  EXPECT_EQ(resolved_val_size(-1, 60000), 10000);
  EXPECT_EQ(resolved_val_size(7, 60000), 7);
  // explicit values are kept as given
  const ExperimentConfig e = build_config(parse_raw_config(
      "sampler: {name: sgld, lr: 1.0e-3}\ntrain: {batch_size: 100, epochs: 3, burn_in: 1}\n", "e.yaml"));
  p = make_run_plan(e, 1000, true);
  EXPECT_EQ(p.batch_size, 100);
  EXPECT_EQ(p.total_steps, 30);
  EXPECT_EQ(p.burn_in_steps, 10);
  EXPECT_TRUE(p.resolved.empty());
}

// A run that leaves them out records what they became, keeps its samples (thinned to
// output.max_samples), and `predict` averages them.
TEST(AutoDefaults, RunRecordsTheAutoValuesAndKeepsItsSamples) {
  const std::string dir = temp_dir("auto_run");
  write_tiny_idx_dir(dir + "/data");
  auto c = tiny(dir + "/data", "{name: sgld, lr: 1.0e-3}", {"train.epochs=12", "output.max_samples=4"});
  run_training(c, quiet(dir + "/run"));
  const auto js = summary_of(dir + "/run");
  EXPECT_EQ(js["auto"]["data.val_size"].get<int64_t>(), 100);    // 600 / 6
  EXPECT_EQ(js["auto"]["train.batch_size"].get<int64_t>(), 32);  // 500 / 50 = 10, floored at 32
  EXPECT_TRUE(js["samples"].is_number_integer());
  int files = 0;
  for (const auto& f : fs::directory_iterator(dir + "/run/samples")) files += f.path().extension() == ".pt";
  EXPECT_GE(files, 3);
  EXPECT_LE(files, 4);
  std::ifstream yaml(dir + "/run/config.yaml");
  std::string text((std::istreambuf_iterator<char>(yaml)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("# auto, for this data set:"), std::string::npos) << text;
  // a sampler's run without samples: predict refuses unless asked for the last sample
  run_training(tiny(dir + "/data", "{name: sgld, lr: 1.0e-3}", {"train.epochs=4", "output.save_samples=false"}),
               quiet(dir + "/nosamples"));
  PredictOptions po;
  po.quiet = true;
  try {
    predict_run(dir + "/nosamples", po);
    ADD_FAILURE() << "predict averaged one sample silently";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--last-sample"), std::string::npos) << e.what();
  }
  po.last_sample = true;
  EXPECT_NO_THROW(predict_run(dir + "/nosamples", po));
  remove_tree(dir);
}

// --- the step-size pilot -------------------------------------------------------------------------

// On the tiny problem SGLD's good steps span about 1e-4..1e-2 (1e-3 is the hand-tuned one of
// test_trainer.cpp); the pilot's choice must be stable, lie in that range and be recorded.
TEST(LrPilot, ChoosesAStableStepAndRecordsIt) {
  const std::string dir = temp_dir("lr_pilot");
  write_tiny_idx_dir(dir + "/data");
  auto c = tiny(dir + "/data", "{name: sgld}", {"train.epochs=6", "train.batch_size=50", "data.val_size=100"});
  ASSERT_TRUE(c.lr_auto);
  const LrChoice choice = choose_lr(c);
  EXPECT_GE(choice.trials.size(), 3u);
  EXPECT_GE(choice.lr, 1e-4) << choice.why;
  EXPECT_LE(choice.lr, 1e-2) << choice.why;
  bool found = false;
  for (const auto& t : choice.trials) found = found || (t.stable && (t.lr == choice.lr || t.lr == 2 * choice.lr));
  EXPECT_TRUE(found) << choice.why;
  // a far too large step is unstable or scores worse than the chosen one
  const LrTrial huge = run_lr_trial(c, {}, 1e3, 100);
  EXPECT_TRUE(!huge.stable || huge.val_nll > choice.trials.front().val_nll);
  // through run_training: summary.json's lr_auto, and config.yaml holds the number
  run_training(c, quiet(dir + "/run"));
  const auto js = summary_of(dir + "/run");
  EXPECT_NEAR(js["lr_auto"]["lr"].get<double>(), choice.lr, 1e-12 * choice.lr);
  // The rates count the chain's steps over the loop's time, not the pilot's: at least the steps over the
  // wall clock less the pilot (the setup is outside them too).
  const double steps = js["steps"].get<double>(), wall = js["wall_seconds"].get<double>();
  const double pilot = js["lr_auto"]["seconds"].get<double>();
  ASSERT_GT(wall, pilot);
  EXPECT_GE(js["steps_per_second"].get<double>(), 0.99 * steps / (wall - pilot)) << js.dump();
  const ExperimentConfig resumed = load_config(dir + "/run/config.yaml", {});
  EXPECT_FALSE(resumed.lr_auto);
  EXPECT_NEAR(resumed.sampler.get_double("lr", 0), choice.lr, 1e-6 * choice.lr);
  remove_tree(dir);
}

// select_lr on made-up trials whose per-point NLLs are exact: trial k's points are its offset plus
// 0.5 times a ±1 pattern that flips every 2^k points (n = 64; the patterns of different k are
// orthogonal and have mean 0). The paired difference of two trials then has mean exactly the
// difference of offsets and standard deviation 0.5·√2·√(64/63), so two standard errors are 0.178:
// offsets within 0.05 of the best's are indistinguishable, one 1.0 above is not.
static LrTrial made_up(double lr, double offset, int k) {
  LrTrial t;
  t.lr = lr;
  t.stable = true;
  t.points = torch::empty({64}, torch::kFloat64);
  for (int i = 0; i < 64; ++i) t.points[i] = offset + 0.5 * (((i >> k) & 1) ? -1.0 : 1.0);
  t.val_nll = t.points.mean().item<double>();
  return t;
}

TEST(LrPilot, ChoosesHalfTheTopOfWhatValidationCannotTellApart) {
  const auto L = [](int k) { return 1e-7 * std::pow(4.0, k); };
  // 1e-7 · 4^k: k = 0 and 6 clearly worse, k = 1..5 within 0.05 of the best (k = 1)
  const double offsets[] = {1.0, 0.0, 0.03, 0.05, 0.01, 0.04, 1.0};
  std::vector<LrTrial> trials;
  for (int k = 6; k >= 0; --k) trials.push_back(made_up(L(k), offsets[k], k % 6));
  ASSERT_TRUE(indistinguishable(trials[1], trials[5]));   // k = 5 and k = 1
  ASSERT_FALSE(indistinguishable(trials[0], trials[5]));  // k = 6 and k = 1
  LrSelection s = select_lr(trials);
  EXPECT_DOUBLE_EQ(s.best_lr, L(1));
  EXPECT_DOUBLE_EQ(s.low, L(1));
  EXPECT_DOUBLE_EQ(s.high, L(5));
  EXPECT_DOUBLE_EQ(s.lr, L(5) / 2) << s.why;
  EXPECT_EQ(s.unstable_at, 0);
  EXPECT_NE(s.why.find("score the same"), std::string::npos) << s.why;

  // k = 6 worse by 0.1 only: indistinguishable, the plateau runs to it
  trials[0] = made_up(L(6), 0.1, 0);
  EXPECT_DOUBLE_EQ(select_lr(trials).lr, L(6) / 2);

  // the best alone on its plateau (k = 2; k = 1 and 3 clearly worse), twice it unstable (within 4
  // times the half): the largest stable step at or below a quarter of the best
  trials[0] = made_up(L(6), 1.0, 0);
  trials[5] = made_up(L(1), 1.0, 1);
  trials[4] = made_up(L(2), -0.1, 2);
  trials[3] = made_up(L(3), 1.0, 3);
  trials.push_back(made_up(2 * L(2), 0.0, 4));
  trials.back().stable = false;
  s = select_lr(trials);
  EXPECT_DOUBLE_EQ(s.low, L(2));
  EXPECT_DOUBLE_EQ(s.high, L(2));
  EXPECT_DOUBLE_EQ(s.unstable_at, 2 * L(2)) << s.why;
  EXPECT_DOUBLE_EQ(s.lr, L(1)) << s.why;

  // without per-point NLLs only equal scores are a plateau: the best itself
  trials.pop_back();
  for (auto& t : trials) t.points = torch::Tensor();
  EXPECT_DOUBLE_EQ(select_lr(trials).lr, L(2) / 2);
  for (auto& t : trials) t.stable = false;
  EXPECT_THROW(select_lr(trials), std::invalid_argument);
}

// The search over a trial runner of the caller's own (Python's lr auto): the grid 4^-5..4^2 around the
// centre in order, then the best refined by factors of 2, each step tried once; the choice is select_lr's
// and every trial is told. Scores: the best at centre/16, clearly worse (1.0) two grid steps either side,
// unstable above 2 × centre.
TEST(LrPilot, SearchOverTheCallersTrialsIsTheBinarysGridAndChoice) {
  const double centre = 1e-3;
  std::vector<double> asked;
  auto trial = [&](double lr) {
    asked.push_back(lr);
    const double k = std::log(lr / centre) / std::log(4.0);  // grid position, -2: the best
    const int pattern = static_cast<int>(std::lround(2 * (k + 5))) % 6;  // the best's differs from its neighbours'
    LrTrial t = made_up(lr, std::abs(k + 2) < 0.6 ? 0.01 * std::abs(k + 2) : 1.0, pattern);
    t.stable = lr <= 2 * centre;
    return t;
  };
  std::vector<std::string> lines;
  const LrChoice c = search_lr(centre, 40, trial, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_EQ(asked.size(), 10u);
  for (int k = -5; k <= 2; ++k) EXPECT_DOUBLE_EQ(asked[k + 5], centre * std::pow(4.0, k));
  EXPECT_DOUBLE_EQ(asked[8], centre / 8);   // the best (centre/16) doubled
  EXPECT_DOUBLE_EQ(asked[9], centre / 32);  // and halved
  EXPECT_EQ(lines.size(), 11u);             // the start and one line per trial
  std::vector<LrTrial> again;
  for (double lr : std::vector<double>(asked)) again.push_back(trial(lr));
  EXPECT_DOUBLE_EQ(c.lr, select_lr(again).lr) << c.why;
  EXPECT_DOUBLE_EQ(c.lr, centre / 16) << c.why;  // plateau centre/32..centre/8: half its top
  EXPECT_EQ(c.steps_per_trial, 40);
  EXPECT_EQ(c.trials.size(), 10u);
  EXPECT_TRUE(std::isnan(c.noise_ratio));
  // nothing stable: one line naming the grid
  EXPECT_THROW(search_lr(centre, 40, [](double lr) { LrTrial t; t.lr = lr; return t; }), std::invalid_argument);
}

// --- the kernels block ---------------------------------------------------------------------------

TEST(KernelSettings, ParsedCheckedAndRecorded) {
  auto c = build_config(parse_raw_config(
      "sampler: {name: sgld, lr: 1.0e-3}\nkernels: {matmul: aten, noise: portable, prior_fold: false}\n", "k.yaml"));
  EXPECT_TRUE(c.kernels.matmul_aten);
  EXPECT_TRUE(c.kernels.noise_portable);
  EXPECT_FALSE(c.kernels.prior_fold);
  EXPECT_TRUE(c.kernels.byte_rows);
  EXPECT_EQ(c.kernels.to_map().at("matmul"), "aten");
  try {
    build_config(parse_raw_config("sampler: {name: sgld, lr: 1.0e-3}\nkernels: {matmull: aten}\n", "k.yaml"));
    ADD_FAILURE() << "a misspelt kernels key was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'matmul'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(build_config(parse_raw_config("sampler: {name: sgld, lr: 1.0e-3}\nkernels: {noise: fast}\n", "k.yaml")),
               std::invalid_argument);
  // every GEMM choice of the fused MLP pass reads back as written (summary.json records the text)
  for (const std::string v : {"auto", "tiled", "pipelined", "cublas", "cublaslt"}) {
    const auto k = build_config(parse_raw_config(
        "sampler: {name: sgld, lr: 1.0e-3}\nkernels: {cuda_mlp_gemm: " + v + "}\n", "k.yaml")).kernels;
    EXPECT_EQ(k.to_map().at("cuda_mlp_gemm"), v);
  }
  // the variants measured slower are gone, keys and values (docs/gpu_kernels.md): a config naming one is refused
  for (const std::string kv : {"cuda_mlp_update: fused", "cuda_pdl: on", "cuda_act: fused", "cuda_mlp_streams: 2",
                               "cuda_mlp_tile: 64", "cuda_mlp_blocks_per_sm: 1", "cuda_mlp_head_rows: 2",
                               "cuda_mlp_gemm: tf32x3", "cuda_mlp_gemm: cluster"})
    EXPECT_THROW(build_config(parse_raw_config("sampler: {name: sgld, lr: 1.0e-3}\nkernels: {" + kv + "}\n", "k.yaml")),
                 std::invalid_argument)
        << kv;
  // the cuBLAS route's last launch: auto (the default), gemm or columns, read back as written; nothing else
  EXPECT_EQ(c.kernels.to_map().at("cuda_mlp_tail"), "auto");
  for (const std::string v : {"auto", "gemm", "columns"}) {
    const auto k = build_config(parse_raw_config(
        "sampler: {name: sgld, lr: 1.0e-3}\nkernels: {cuda_mlp_tail: " + v + "}\n", "k.yaml")).kernels;
    EXPECT_EQ(k.to_map().at("cuda_mlp_tail"), v);
  }
  EXPECT_THROW(build_config(parse_raw_config("sampler: {name: sgld, lr: 1.0e-3}\nkernels: {cuda_mlp_tail: rows}\n",
                                             "k.yaml")),
               std::invalid_argument);
  // the route's last hidden layer and head: auto (the default), cublas or fused, read back as written
  EXPECT_EQ(c.kernels.to_map().at("cuda_mlp_forward"), "auto");
  for (const std::string v : {"auto", "cublas", "fused"}) {
    const auto k = build_config(parse_raw_config(
        "sampler: {name: sgld, lr: 1.0e-3}\nkernels: {cuda_mlp_forward: " + v + "}\n", "k.yaml")).kernels;
    EXPECT_EQ(k.to_map().at("cuda_mlp_forward"), v);
  }
  EXPECT_THROW(build_config(parse_raw_config("sampler: {name: sgld, lr: 1.0e-3}\nkernels: {cuda_mlp_forward: on}\n",
                                             "k.yaml")),
               std::invalid_argument);
  // where cublaslt's choices are kept: auto (the default), off, or a file; an empty value is an error
  EXPECT_EQ(c.kernels.to_map().at("cuda_gemm_cache"), "auto");
  for (const std::string v : {"off", "/tmp/choices.json"}) {
    const auto k = build_config(parse_raw_config(
        "sampler: {name: sgld, lr: 1.0e-3}\nkernels: {cuda_gemm_cache: \"" + v + "\"}\n", "k.yaml")).kernels;
    EXPECT_EQ(k.cuda_gemm_cache, v);
  }
  try {
    build_config(parse_raw_config("sampler: {name: sgld, lr: 1.0e-3}\nkernels: {cuda_gemm_cache: \"\"}\n", "k.yaml"));
    ADD_FAILURE() << "an empty kernels.cuda_gemm_cache was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cuda_gemm_cache: empty"), std::string::npos) << e.what();
  }
  // a scope installs and restores the process's settings
  const KernelSettings before = kernel_settings();
  {
    ScopedKernelSettings s(c.kernels);
    EXPECT_TRUE(kernel_settings().matmul_aten);
  }
  EXPECT_TRUE(kernel_settings() == before);
}

// An existing directory without --overwrite is refused before the pilot spends any time: with a training
// set too small to score steps on (5 examples), the pilot would fail with its own message; the directory's
// comes first.
TEST(AutoDefaults, AnExistingRunDirectoryIsRefusedBeforeThePilot) {
  const std::string dir = temp_dir("pilot_dir_first");
  write_tiny_idx_dir(dir + "/data");
  fs::create_directories(dir + "/out");
  std::ofstream(dir + "/out/thesis.tex") << "x";
  RunOptions ro = quiet(dir + "/out");
  ro.overwrite = false;
  try {
    run_training(tiny(dir + "/data", "{name: sghmc}", {"data.train_limit=5", "data.val_size=0"}), ro);
    ADD_FAILURE() << "expected the run directory's error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("run directory exists"), std::string::npos) << e.what();
  }
  // and the pilot's own error where the directory is free
  ro.out_dir = dir + "/free";
  try {
    run_training(tiny(dir + "/data", "{name: sghmc}", {"data.train_limit=5", "data.val_size=0"}), ro);
    ADD_FAILURE() << "expected the pilot's error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at least 12 examples"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir + "/out/thesis.tex"));
  remove_tree(dir);
}

// predict --data with a label the run's model has no class for: one line naming the file, the entry and the
// label (LibTorch's "index 37 is out of bounds" named neither).
TEST(Predict, ALabelOutsideTheModelsClassesIsOneLineNamingIt) {
  const std::string dir = temp_dir("predict_label");
  write_tiny_idx_dir(dir + "/data");
  const auto config = tiny(dir + "/data", "{name: sgld, lr: 1.0e-3}", {"train.epochs=3"});
  run_training(config, quiet(dir + "/run"));
  const auto dm = load_data_and_model(config);
  const auto x = dm.data.test.inputs.slice(0, 0, 5).cpu();
  auto y = dm.data.test.targets.slice(0, 0, 5).cpu().clone();
  y[3] = 37;
  c10::Dict<std::string, torch::Tensor> dict;
  dict.insert("x", x);
  dict.insert("y", y);
  write_pickle_file(dir + "/new.pt", c10::IValue(dict));
  PredictOptions po;
  po.quiet = true;
  po.data_file = dir + "/new.pt";
  try {
    predict_run(dir + "/run", po);
    ADD_FAILURE() << "predict accepted label 37 of a 4-class model";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/new.pt: y[3]: label 37 is not a class of the run's 4-class model (labels 0 to 3)");
  }
  remove_tree(dir);
}
