// The health check's "noise" entry: each sampler's ratio of minibatch-gradient noise to injected noise
// (golden values from the samplers' equations), the probe's variance estimate against the exact
// minibatch variance of a real model, and the check on a run built to trip it.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/remove_tree.h"
#include "sampler_test_util.h"
#include "tiny_idx.h"
#include "train/gradient_noise.h"
#include "train/health.h"
#include "train/run_setup.h"
#include "train/trainer.h"

using namespace sgmcmc;
using sgmcmc::test_util::config_from;
using sgmcmc::test_util::temp_dir;
using sgmcmc::test_util::write_tiny_idx_dir;

namespace {

// Variance 4 on every coordinate of a 3-element group.
const torch::Tensor kVar = torch::full({3}, 4.0, torch::kFloat64);

double ratio(const std::string& name, const std::vector<std::pair<std::string, std::string>>& kv) {
  auto p = torch::zeros({3}, torch::requires_grad());
  return test::make(name, {p}, kv)->gradient_noise_ratio(0, kVar);
}

const char* kTiny = R"(
name: tiny
seed: 5
data: {dir: DATA, val_size: 100}
model: {name: mlp, hidden: [20], activation: relu}
sampler: SAMPLER
train: {batch_size: 50}
output: {progress: false}
)";

}  // namespace

TEST(GradientNoise, EachSamplersRatioIsItsVarianceBudget) {
  // SGLD: η·V/(2T)
  EXPECT_DOUBLE_EQ(ratio("sgld", {{"lr", "0.1"}, {"temperature", "2"}}), 0.1 * 4 / (2 * 2));
  // SGHMC Euler: η·V/(2αT); SSI: η·V/(2T·sinh α)
  EXPECT_DOUBLE_EQ(ratio("sghmc", {{"lr", "0.1"}, {"alpha", "0.05"}}), 0.1 * 4 / (2 * 0.05));
  EXPECT_DOUBLE_EQ(ratio("sghmc", {{"lr", "0.1"}, {"alpha", "0.5"}, {"integrator", "ssi"}}),
                   0.1 * 4 / (2 * std::sinh(0.5)));
  // at T = 0 (an exploration stage) the question does not arise
  EXPECT_TRUE(std::isnan(ratio("sgld", {{"lr", "0.1"}, {"temperature", "0"}})));
  // the thermostats absorb the gradient's noise; optimizers inject none
  EXPECT_TRUE(std::isnan(ratio("sgnht", {{"lr", "0.1"}})));
  EXPECT_TRUE(std::isnan(ratio("msgnht", {{"lr", "0.1"}})));
  EXPECT_TRUE(std::isnan(ratio("sgd", {{"lr", "0.1"}})));
  // pSGLD: η·mean(G⊙V)/(2T) with G = 1/(eps + sqrt(v)); after one step v = g⊙g (its first step)
  auto p = torch::zeros({3}, torch::requires_grad());
  auto s = test::make("psgld", {p}, {{"lr", "0.1"}, {"eps", "1e-5"}});
  EXPECT_TRUE(std::isnan(s->gradient_noise_ratio(0, kVar)));  // no preconditioner yet
  p.mutable_grad() = torch::tensor({1.0f, 2.0f, 4.0f});
  s->step();
  const double mean_g = (1 / (1e-5 + 1.0) + 1 / (1e-5 + 2.0) + 1 / (1e-5 + 4.0)) / 3;
  EXPECT_NEAR(s->gradient_noise_ratio(0, kVar), 0.1 * 4 * mean_g / 2, 1e-6);
}

// Above r = 0.2 (an effective temperature 20 % above T), once.
TEST(GradientNoise, CheckFiresAboveTwoTenthsOnceAndRecordsTheProbes) {
  HealthCheck h(/*classification=*/true, {{"test_nll", std::log(10.0)}}, "sgld");
  EXPECT_TRUE(h.check_gradient_noise(100, {0.15, NAN}).empty());
  auto w = h.check_gradient_noise(200, {0.1, 3.5});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].check, "noise");
  EXPECT_NE(w[0].message.find("3.5x"), std::string::npos) << w[0].message;
  EXPECT_NE(w[0].message.find("parameter group 1"), std::string::npos) << w[0].message;
  EXPECT_NE(w[0].message.find("batch_size"), std::string::npos) << w[0].message;
  EXPECT_TRUE(h.check_gradient_noise(400, {9.0}).empty());  // warns once
  EXPECT_TRUE(h.check_gradient_noise(800, {NAN}).empty());  // nothing measured: the record stays
  const auto j = h.to_json(false);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["gradient_noise"]["step"].get<int64_t>(), 400);
  EXPECT_DOUBLE_EQ(j["gradient_noise"]["ratio"].get<double>(), 9.0);
  EXPECT_DOUBLE_EQ(j["gradient_noise"]["max_ratio"].get<double>(), 9.0);
  EXPECT_DOUBLE_EQ(j["gradient_noise"]["max_effective_temperature"].get<double>(), 10.0);
}

// The probe against the exact variance of a minibatch gradient of the tiny MLP at its initial θ:
// for a batch of n drawn without replacement from N, Var(N/n Σ_B ∇ℓ_i) = (N²/n)·σ²·(N−n)/(N−1) per
// coordinate, σ² the population variance of the per-example gradients (all N computed one by one).
// The K probes' means are independent draws of an unbiased estimate: their average must lie within
// 4 standard errors (from the probes' own spread) of the exact mean, a false failure < 1e-4.
TEST(GradientNoise, ProbeEstimatesTheMinibatchVarianceAndLeavesTheChainAsItWas) {
  const std::string dir = temp_dir("gradient_noise");
  write_tiny_idx_dir(dir + "/data");
  auto setup = make_run_setup(config_from(kTiny, {{"DATA", dir + "/data"}, {"SAMPLER", "{name: sgld, lr: 1.0e-3}"}},
                                          {}, "tiny.yaml"));
  Model& model = *setup.dm.model;
  Sampler& sampler = *setup.sampler;
  const Batch& train = setup.dm.data.train;
  const int64_t N = train.size(), n = setup.plan.batch_size;
  ASSERT_EQ(N, 500);
  ASSERT_EQ(n, 50);

  // exact: every example's gradient
  std::vector<torch::Tensor> per_example;
  for (int64_t i = 0; i < N; ++i) {
    sampler.zero_grad();
    model.nll(Batch{train.inputs.slice(0, i, i + 1), train.targets.slice(0, i, i + 1)}).backward();
    std::vector<torch::Tensor> parts;
    for (const auto& p : sampler.parameters()) parts.push_back(p.grad().reshape(-1).to(torch::kFloat64));
    per_example.push_back(torch::cat(parts));
  }
  const auto G = torch::stack(per_example);
  const double Nd = static_cast<double>(N), nd = static_cast<double>(n);
  const double exact = (G.var(0, /*unbiased=*/false) * (Nd * Nd / nd) * ((Nd - nd) / (Nd - 1))).mean().item<double>();

  // the chain's state before the probes: .grad holds something the next step would read
  for (auto& p : sampler.parameters()) p.grad().fill_(0.25);
  std::vector<torch::Tensor> theta;
  for (const auto& p : sampler.parameters()) theta.push_back(p.detach().clone());
  model.train(true);

  GradientNoiseProbe probe(7, setup.plan.grad_scale(), n);
  const int K = 2000;
  std::vector<double> means;
  for (int k = 0; k < K; ++k) {
    const auto v = probe.variances(model, sampler, train);
    ASSERT_EQ(v.size(), sampler.param_groups().size());
    double sum = 0, count = 0;
    for (const auto& t : v) {
      sum += t.sum().item<double>();
      count += static_cast<double>(t.numel());
    }
    means.push_back(sum / count);
  }
  double m = 0, s2 = 0;
  for (double x : means) m += x / K;
  for (double x : means) s2 += (x - m) * (x - m) / (K - 1);
  const double se = std::sqrt(s2 / K);
  EXPECT_NEAR(m, exact, 4 * se) << "exact " << exact << ", probes " << m << " ± " << se;
  EXPECT_LT(4 * se, 0.06 * exact);  // tight enough to see a 10 % error (e.g. batches drawn with replacement)

  // nothing of the chain changed
  EXPECT_TRUE(model.is_training());
  const auto params = sampler.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::equal(params[i].detach(), theta[i]));
    EXPECT_TRUE(torch::all(params[i].grad() == 0.25).item<bool>());
  }
  remove_tree(dir);
}

// Cold SGLD (T = 1e-4, so the injected variance is 1e-4 of the posterior's) runs stably, near SGD,
// with no loss, trivial or precision warning; only the noise check can see that its spread is the
// minibatches'. The same run at T = 1 is quiet.
TEST(GradientNoise, ACoolChainTripsTheCheckAndAWarmOneDoesNot) {
  const std::string dir = temp_dir("gradient_noise_run");
  write_tiny_idx_dir(dir + "/data");
  RunOptions ro;
  ro.quiet = true;
  ro.overwrite = true;
  auto read = [](const std::string& d) {
    std::ifstream in(d + "/summary.json");
    return nlohmann::json::parse(in)["health"];
  };
  const std::vector<std::string> sets = {"train.epochs=8", "prior.hyperprior=none"};
  ro.out_dir = dir + "/warm";
  run_training(config_from(kTiny, {{"DATA", dir + "/data"}, {"SAMPLER", "{name: sgld, lr: 1.0e-3}"}}, sets, "t.yaml"), ro);
  auto h = read(ro.out_dir);
  EXPECT_TRUE(h["ok"].get<bool>()) << h.dump();
  EXPECT_LT(h["gradient_noise"]["max_ratio"].get<double>(), 1.0) << h.dump();
  EXPECT_EQ(h["gradient_noise"]["step"].get<int64_t>(), 80) << h.dump();  // probes at evaluations 1, 2, 4, 8

  ro.out_dir = dir + "/cold";
  run_training(config_from(kTiny, {{"DATA", dir + "/data"}, {"SAMPLER", "{name: sgld, lr: 1.0e-3, temperature: 1.0e-4}"}},
                           sets, "t.yaml"),
               ro);
  h = read(ro.out_dir);
  EXPECT_FALSE(h["ok"].get<bool>());
  EXPECT_FALSE(h["worse_than_trivial"].get<bool>());
  ASSERT_EQ(h["warnings"].size(), 1u) << h.dump();
  EXPECT_EQ(h["warnings"][0]["check"].get<std::string>(), "noise");
  EXPECT_GT(h["gradient_noise"]["max_ratio"].get<double>(), 1.0);

  // Stopped after 3 evaluations (the warning has fired) and resumed: the same health, probe for probe
  // (the checkpoint keeps the warnings and the record; the probes follow the run's evaluations).
  const auto cold = config_from(kTiny, {{"DATA", dir + "/data"}, {"SAMPLER", "{name: sgld, lr: 1.0e-3, temperature: 1.0e-4}"}},
                                sets, "t.yaml");
  ro.out_dir = dir + "/cold_resumed";
  ro.stop_after_steps = 30;
  run_training(cold, ro);
  ro.stop_after_steps = -1;
  ro.resume = true;
  ro.overwrite = false;
  run_training(load_config(ro.out_dir + "/config.yaml"), ro);
  EXPECT_EQ(read(ro.out_dir).dump(), h.dump());
  remove_tree(dir);
}
