#include <gtest/gtest.h>

#include <cmath>

#include "kernels/update/update_rules.h"
#include "sampler_test_util.h"

using namespace sgmcmc;
using namespace sgmcmc::test;
namespace {
torch::Tensor d(double x) { return torch::tensor({x}, torch::kFloat64); }
}  // namespace

// Euler: θ=1, p=0.5, ξ=1, g=2, ζ=0.5, h=0.1, D=1, T=1:
//   p' = 0.5 − 0.05 − 0.2 + sqrt(0.2)·0.5;  ξ' = 1 + (p'² − 1)·0.1;  θ' = 1 + 0.1 p'.
TEST(MsgnhtRule, EulerGolden) {
  auto theta = d(1.0), p = d(0.5), xi = d(1.0);
  rules::msgnht_euler_update(theta, p, xi, d(2.0), d(0.5), 0.1, 1.0, 1.0);
  const double pp = 0.25 + std::sqrt(0.2) * 0.5;
  EXPECT_NEAR(p.item<double>(), pp, 1e-15);
  EXPECT_NEAR(xi.item<double>(), 1.0 + (pp * pp - 1.0) * 0.1, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.0 + 0.1 * pp, 1e-15);
}

// SSI: p1 = e^{−0.05}·0.5 − 0.2 + sqrt(0.2)·0.5;  p' = e^{−0.05} p1;  θ' = 1 + 0.1p';
//   ξ' = 1 + (p'² − 1)·0.1.  With T = 2 the ξ target shifts: ξ' = 1 + (p'² − 2)·0.1 and the noise
//   is sqrt(0.4)·0.5.
TEST(MsgnhtRule, SsiGolden) {
  auto theta = d(1.0), p = d(0.5), xi = d(1.0);
  rules::msgnht_ssi_update(theta, p, xi, d(2.0), d(0.5), 0.1, 1.0, 1.0);
  const double e = std::exp(-0.05);
  const double pp = e * (e * 0.5 - 0.2 + std::sqrt(0.2) * 0.5);
  EXPECT_NEAR(p.item<double>(), pp, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.0 + 0.1 * pp, 1e-15);
  EXPECT_NEAR(xi.item<double>(), 1.0 + (pp * pp - 1.0) * 0.1, 1e-15);

  auto theta2 = d(1.0), p2 = d(0.5), xi2 = d(1.0);
  rules::msgnht_ssi_update(theta2, p2, xi2, d(2.0), d(0.5), 0.1, 1.0, 2.0);
  const double pq = e * (e * 0.5 - 0.2 + std::sqrt(0.4) * 0.5);
  EXPECT_NEAR(xi2.item<double>(), 1.0 + (pq * pq - 2.0) * 0.1, 1e-15);
}

// Thermostats are per element: with T = 0 and gradients (1, 3), ξ moves by p_i² h each.
TEST(Msgnht, ElementwiseThermostat) {
  auto a = torch::zeros({2}, torch::kFloat64).requires_grad_();
  auto s = make("msgnht", {a}, {{"lr", "0.1"}, {"temperature", "0"}, {"xi_init", "0.5"}});
  set_grad(a, torch::tensor({1.0, 3.0}, torch::kFloat64));
  s->step();
  auto xi = read_state(*s, "0.thermostat");
  EXPECT_NEAR(xi[0].item<double>(), 0.5 + 0.01 * 0.1, 1e-15);
  EXPECT_NEAR(xi[1].item<double>(), 0.5 + 0.09 * 0.1, 1e-15);
  EXPECT_NEAR(s->diagnostics().at("thermostat_mean"), 0.5 + 0.05 * 0.1, 1e-15);
}

TEST(MsgnhtOptions, BadValuesRejected) {
  expect_option_error("msgnht", {{"lr", "-1"}}, "msgnht.lr");
  expect_option_error("msgnht", {{"diffusion", "-0.5"}}, "msgnht.diffusion");
  expect_option_error("msgnht", {{"integrator", "eular"}}, "did you mean 'euler'");
}

TEST(MsgnhtCheckpoint, RoundTrip) {
  check_round_trip("msgnht", {{"lr", "0.01"}});
  check_round_trip("msgnht", {{"lr", "0.01"}, {"integrator", "ssi"}});
}
