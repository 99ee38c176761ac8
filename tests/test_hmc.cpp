// Exact HMC on a 1-D standard normal, U = θ²/2 (closure computes it with autograd).
#include <gtest/gtest.h>

#include <cmath>

#include "sampler_test_util.h"
#include "samplers/hmc.h"

using namespace sgmcmc;
using namespace sgmcmc::test;

// 200 independent chains as one [200] parameter would share ONE accept/reject, so we run one chain.
// ε = 0.1, L = 20 (trajectory length 2 ≈ a third of the period 2π): each proposal nearly
// decorrelates θ; leapfrog energy error on a unit oscillator is O(ε²) ⇒ acceptance ≈ 1 − O(ε²)... > 0.9.
// 4000 steps; MC: per-step autocorrelation of θ under HMC with trajectory time τ = 2 is cos(2) ≈
// −0.42 (exact dynamics + full momentum refresh: θ' = θ cos τ + r sin τ), so the integrated
// autocorrelation time for θ is (1+ρ)/(1−ρ) = 0.41 and for θ² it is (1+ρ²)/(1−ρ²) = 1.43.
// se(mean) = sqrt(0.41/4000) = 0.0101, se(var) = sqrt(2·1.43/4000) = 0.0267; 5 se bounds:
// |mean| < 0.051, |var − 1| < 0.134. Leapfrog + MH is exact, so no step-size bias.
TEST(Hmc, StandardNormal) {
  auto p = torch::zeros({1}, torch::kFloat64).requires_grad_();
  auto s = make("hmc", {p}, {{"lr", "0.1"}, {"leapfrog_steps", "20"}}, 3);
  auto closure = [&] {
    auto u = 0.5 * (p * p).sum();
    u.backward();
    return u;
  };
  double s1 = 0, s2 = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    s->step(closure);
    const double x = p.item<double>();
    s1 += x;
    s2 += x * x;
  }
  const double mean = s1 / n, var = s2 / n - mean * mean;
  EXPECT_LT(std::fabs(mean), 0.051) << mean;
  EXPECT_LT(std::fabs(var - 1.0), 0.134) << var;
  EXPECT_GT(s->diagnostics().at("acceptance_rate"), 0.9);
}

// With a huge step the leapfrog is unstable (ε > 2 on a unit oscillator): everything is rejected
// and θ never moves.
TEST(Hmc, UnstableStepRejectsAndRestores) {
  auto p = torch::full({1}, 0.5, torch::kFloat64).requires_grad_();
  auto s = make("hmc", {p}, {{"lr", "3"}, {"leapfrog_steps", "30"}});
  auto closure = [&] {
    auto u = 0.5 * (p * p).sum();
    u.backward();
    return u;
  };
  for (int i = 0; i < 10; ++i) s->step(closure);
  EXPECT_EQ(p.item<double>(), 0.5);
  EXPECT_NEAR(p.grad().item<double>(), 0.5, 1e-15);
  EXPECT_EQ(s->diagnostics().at("acceptance_rate"), 0.0);
}

TEST(Hmc, StepWithoutClosureThrows) {
  auto p = torch::zeros({1}, torch::kFloat64).requires_grad_();
  auto s = make("hmc", {p}, {{"lr", "0.1"}});
  EXPECT_THROW(s->step(), std::logic_error);
}

TEST(HmcOptions, BadValuesRejected) {
  expect_option_error("hmc", {{"lr", "-0.1"}}, "hmc.lr");
  expect_option_error("hmc", {{"leapfrog_steps", "0"}}, "hmc.leapfrog_steps");
  expect_option_error("hmc", {{"temperature", "0"}}, "hmc.temperature");
}

TEST(HmcCheckpoint, AcceptanceCountsRestored) {
  auto p = torch::zeros({1}, torch::kFloat64).requires_grad_();
  auto s = make("hmc", {p}, {{"lr", "0.1"}, {"leapfrog_steps", "5"}});
  auto closure = [&] {
    auto u = 0.5 * (p * p).sum();
    u.backward();
    return u;
  };
  for (int i = 0; i < 5; ++i) s->step(closure);
  std::stringstream ss;
  {
    torch::serialize::OutputArchive out;
    s->save(out);
    out.save_to(ss);
  }
  auto q = torch::zeros({1}, torch::kFloat64).requires_grad_();
  auto b = make("hmc", {q}, {{"lr", "0.1"}, {"leapfrog_steps", "5"}});
  torch::serialize::InputArchive in;
  in.load_from(ss);
  b->load(in);
  EXPECT_EQ(b->steps(), 5);
  EXPECT_EQ(b->diagnostics().at("acceptance_rate"), s->diagnostics().at("acceptance_rate"));
}
