#include <gtest/gtest.h>

#include <cmath>

#include "kernels/update/update_rules.h"
#include "sampler_test_util.h"

using namespace sgmcmc;
using namespace sgmcmc::test;
namespace {
torch::Tensor d(double x) { return torch::tensor({x}, torch::kFloat64); }
}  // namespace

// θ=1, v=0.5, g=2, ξ=0.5, η=0.1, α=0.2, T=1, β̂=0:
//   v' = 0.5 − 0.2 − 0.1·0.5... = 0.5 − 0.1·2 − 0.2·0.5 + sqrt(2·0.2·0.1)·0.5 = 0.2 + 0.1 = 0.3; θ' = 1.3.
TEST(SghmcRule, EulerGolden) {
  auto theta = d(1.0), v = d(0.5);
  rules::sghmc_euler_update(theta, v, d(2.0), d(0.5), 0.1, 0.2, 1.0, torch::Tensor());
  EXPECT_NEAR(v.item<double>(), 0.3, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.3, 1e-15);
}

// Same with β̂ = 0.05 (constant) and T = 2: noise variance 2η(αT − β̂) = 0.2·(0.4 − 0.05) = 0.07.
TEST(SghmcRule, EulerGoldenBetaHatTemperature) {
  auto theta = d(1.0), v = d(0.5);
  rules::sghmc_euler_update(theta, v, d(2.0), d(0.5), 0.1, 0.2, 2.0, d(0.05));
  EXPECT_NEAR(v.item<double>(), 0.2 + std::sqrt(0.07) * 0.5, 1e-15);
  // β̂ larger than αT: variance clamped to 0, no noise.
  auto t2 = d(1.0), v2 = d(0.5);
  rules::sghmc_euler_update(t2, v2, d(2.0), d(0.5), 0.1, 0.2, 1.0, d(0.5));
  EXPECT_NEAR(v2.item<double>(), 0.2, 1e-15);
}

// SSI: v' = e^{−0.1}(e^{−0.1}·0.5 − 0.2 + sqrt(2·0.1·sinh 0.2)·0.5); θ' = 1 + v'.
TEST(SghmcRule, SsiGolden) {
  auto theta = d(1.0), v = d(0.5);
  rules::sghmc_ssi_update(theta, v, d(2.0), d(0.5), 0.1, 0.2, 1.0, torch::Tensor());
  const double e = std::exp(-0.1);
  const double want = e * (e * 0.5 - 0.2 + std::sqrt(0.2 * std::sinh(0.2)) * 0.5);
  EXPECT_NEAR(v.item<double>(), want, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.0 + want, 1e-15);
}

// SSI noise: with ∇Ũ = 0 the stationary velocity variance is exactly ηT: s = e^{−2α}s + e^{−α}σ²,
// σ² = 2ηT sinh α ⇒ s = ηT. Checked on the recursion's fixed point, no sampling.
TEST(SghmcRule, SsiStationaryVelocityVariance) {
  const double eta = 0.01, a = 0.3, T = 1.5;
  const double sigma2 = 2 * eta * T * std::sinh(a);
  const double s = std::exp(-a) * sigma2 / (1 - std::exp(-2 * a));
  EXPECT_NEAR(s, eta * T, 1e-15);
}

// EMA variance: g = 1, 3 with decay 0.5: first m = 1, s = 0; then d = 2, m = 2, s = 0.5·0.5·4 = 1.
TEST(SghmcRule, EmaVariance) {
  auto m = d(0), s = d(0);
  rules::ema_variance_update(m, s, d(1.0), 0.5, true);
  rules::ema_variance_update(m, s, d(3.0), 0.5, false);
  EXPECT_NEAR(m.item<double>(), 2.0, 1e-15);
  EXPECT_NEAR(s.item<double>(), 1.0, 1e-15);
}

// Fisher β̂ through the sampler: T = 0 removes noise; with gradients 1 then 3 (decay 0.5) and
// η = 0.1: step 1 β̂ = 0 (v = −0.1), step 2 β̂ = η·1/2 (noise variance clamped, T = 0), so the
// update is deterministic: v = 0.9·(−0.1) − 0.3 = −0.39 with α = 0.1.
TEST(Sghmc, FisherDiagnostics) {
  auto p = torch::zeros({1}, torch::kFloat64).requires_grad_();
  auto s = make("sghmc", {p}, {{"lr", "0.1"}, {"alpha", "0.1"}, {"noise_estimate", "fisher"},
                               {"fisher_decay", "0.5"}, {"temperature", "0"}});
  set_grad(p, d(1.0));
  s->step();
  EXPECT_NEAR(p.item<double>(), -0.1, 1e-15);
  set_grad(p, d(3.0));
  s->step();
  EXPECT_NEAR(s->diagnostics().at("beta_hat_mean"), 0.05, 1e-15);
  EXPECT_NEAR(p.item<double>(), -0.1 - 0.39, 1e-15);
}

TEST(SghmcNaiveRule, Golden) {
  auto theta = d(1.0), v = d(0.5);
  rules::sghmc_naive_update(theta, v, d(2.0), 0.1);
  EXPECT_NEAR(v.item<double>(), 0.3, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.3, 1e-15);
}

// Resampling: with resample_every = 2, the momentum at steps 0 and 2 is fresh N(0, ηT); with 0 it
// starts at 0 and is never resampled (pure heavy ball: θ = −η g, then −3η g for constant g).
TEST(SghmcNaive, NoResampleIsDeterministic) {
  auto p = torch::zeros({1}, torch::kFloat64).requires_grad_();
  auto s = make("sghmc-naive", {p}, {{"lr", "0.1"}, {"resample_every", "0"}});
  set_grad(p, d(1.0));
  s->step();
  s->step();
  EXPECT_NEAR(p.item<double>(), -0.1 - 0.2, 1e-15);
}

TEST(SghmcOptions, BadValuesRejected) {
  expect_option_error("sghmc", {{"lr", "-1"}}, "sghmc.lr");
  expect_option_error("sghmc", {{"alpha", "0"}}, "sghmc.alpha");
  expect_option_error("sghmc", {{"alpha", "1.1"}}, "sghmc.alpha");
  expect_option_error("sghmc", {{"integrator", "rk4"}}, "sampler.integrator");
  expect_option_error("sghmc", {{"noise_estimate", "fishr"}}, "did you mean 'fisher'");
  expect_option_error("sghmc", {{"beta_hat", "-0.1"}}, "sghmc.beta_hat");
  expect_option_error("sghmc", {{"fisher_decay", "1"}}, "sghmc.fisher_decay");
  expect_option_error("sghmc-naive", {{"resample_every", "-1"}}, "sghmc-naive.resample_every");
  expect_option_error("sghmc-naive", {{"lr", "0"}}, "sghmc-naive.lr");
}

TEST(SghmcCheckpoint, RoundTrip) {
  check_round_trip("sghmc", {{"lr", "0.01"}, {"alpha", "0.1"}});
  check_round_trip("sghmc", {{"lr", "0.01"}, {"alpha", "0.1"}, {"integrator", "ssi"}, {"noise_estimate", "fisher"}});
  check_round_trip("sghmc-naive", {{"lr", "0.01"}, {"resample_every", "0"}});
}
