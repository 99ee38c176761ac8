#include <gtest/gtest.h>

#include <cmath>

#include "kernels/update/update_rules.h"
#include "sampler_test_util.h"

using namespace sgmcmc;
using namespace sgmcmc::test;
namespace {
torch::Tensor d(double x) { return torch::tensor({x}, torch::kFloat64); }
}  // namespace

// Euler: θ=1, p=0.5, g=2, ζ=0.5, h=0.1, ξ=1, A=1, T=1:
//   p' = 0.5 − 0.2 − 0.05 + sqrt(0.2)·0.5;  θ' = 1 + 0.1 p'.
TEST(SgnhtRule, EulerGolden) {
  auto theta = d(1.0), p = d(0.5);
  rules::sgnht_euler_update(theta, p, d(2.0), d(0.5), 0.1, 1.0, 1.0, 1.0);
  const double pp = 0.25 + std::sqrt(0.2) * 0.5;
  EXPECT_NEAR(p.item<double>(), pp, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.0 + 0.1 * pp, 1e-15);
}

// SSI: p' = e^{−0.05}(e^{−0.05}·0.5 − 0.2 + sqrt(0.2)·0.5);  θ' = 1 + 0.1 p'.
TEST(SgnhtRule, SsiGolden) {
  auto theta = d(1.0), p = d(0.5);
  rules::sgnht_ssi_update(theta, p, d(2.0), d(0.5), 0.1, 1.0, 1.0, 1.0);
  const double e = std::exp(-0.05);
  const double pp = e * (e * 0.5 - 0.2 + std::sqrt(0.2) * 0.5);
  EXPECT_NEAR(p.item<double>(), pp, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.0 + 0.1 * pp, 1e-15);
}

// The thermostat is ONE scalar over all tensors: two parameters (3 + 1 elements, d = 4), T = 0
// (no noise), xi_init 2, h = 0.1, gradients 1 everywhere, p₀ = 0: p = −0.1 everywhere, θ = −0.01,
// ξ = 2 + (4·0.01/4 − 0)·0.1 = 2.001.
TEST(Sgnht, GlobalThermostat) {
  auto a = torch::zeros({3}, torch::kFloat64).requires_grad_();
  auto b = torch::zeros({1}, torch::kFloat64).requires_grad_();
  auto s = make("sgnht", {a, b}, {{"lr", "0.1"}, {"xi_init", "2"}, {"temperature", "0"}});
  EXPECT_NEAR(s->diagnostics().at("thermostat_mean"), 2.0, 1e-15);
  set_grad(a, torch::ones({3}, torch::kFloat64));
  set_grad(b, torch::ones({1}, torch::kFloat64));
  s->step();
  EXPECT_NEAR(a[0].item<double>(), -0.01, 1e-15);
  EXPECT_NEAR(b[0].item<double>(), -0.01, 1e-15);
  EXPECT_NEAR(s->diagnostics().at("thermostat_mean"), 2.001, 1e-15);
}

TEST(Sgnht, XiInitDefaultsToDiffusion) {
  auto a = torch::zeros({3}, torch::kFloat64).requires_grad_();
  auto s = make("sgnht", {a}, {{"lr", "0.1"}, {"diffusion", "2.5"}});
  EXPECT_EQ(s->diagnostics().at("thermostat_mean"), 2.5);
}

TEST(SgnhtOptions, BadValuesRejected) {
  expect_option_error("sgnht", {{"lr", "-1"}}, "sgnht.lr");
  expect_option_error("sgnht", {{"diffusion", "-1"}}, "sgnht.diffusion");
  expect_option_error("sgnht", {{"integrator", "leapfrog"}}, "sampler.integrator");
  expect_option_error("sgnht", {{"temperature", "-2"}}, "sgnht.temperature");
}

TEST(SgnhtCheckpoint, RoundTrip) {
  check_round_trip("sgnht", {{"lr", "0.01"}});
  check_round_trip("sgnht", {{"lr", "0.01"}, {"integrator", "ssi"}});
}
