#include <gtest/gtest.h>

#include <cmath>

#include "compat.h"
#include "kernels/update/update_rules.h"
#include "sampler_test_util.h"

using namespace sgmcmc;
using namespace sgmcmc::test;
namespace {
torch::Tensor d(double x) { return torch::tensor({x}, torch::kFloat64); }
}  // namespace

// Boundary step, θ = 1, r = 0.5, g = 2, ξ = 0.5, η = 0.1, α = 0.6, T = 1:
//   r ← 0.5 − 0.1 = 0.4;  r ← 0.6·0.4 + sqrt(1 − 0.36)·0.5 = 0.24 + 0.4 = 0.64;  r ← 0.64 − 0.1 = 0.54;
//   θ ← 1 + 0.1·0.54 = 1.054.  Inside a trajectory: r ← 0.5 − 0.2 = 0.3;  θ ← 1.03 (ξ unused).
TEST(StochasticHmcRule, Golden) {
  auto theta = d(1.0), r = d(0.5);
  rules::stochastic_hmc_update(theta, r, d(2.0), d(0.5), 0.1, 0.6, 1.0, true);
  EXPECT_NEAR(r.item<double>(), 0.54, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.054, 1e-15);
  auto t2 = d(1.0), r2 = d(0.5);
  rules::stochastic_hmc_update(t2, r2, d(2.0), torch::Tensor(), 0.1, 0.6, 1.0, false);
  EXPECT_NEAR(r2.item<double>(), 0.3, 1e-15);
  EXPECT_NEAR(t2.item<double>(), 1.03, 1e-15);
}

// Without refreshment noise (T = 0) and α = 1 (C = 0) after step 0, N_l steps on U = θ²/2 are the
// leapfrog integrator exactly: the energy H = θ²/2 + r²/2 is conserved to O(η²) over a long run and
// returns to the same value after whole periods of the discrete map (a rotation).
TEST(StochasticHmc, IsLeapfrogWithoutRefreshment) {
  auto p = torch::tensor({1.0}, torch::kFloat64).requires_grad_();
  auto s = make("stochastic-hmc", {p}, {{"lr", "0.1"}, {"leapfrog_steps", "5"}, {"friction", "0"}, {"temperature", "0"}});
  double h_min = 1e9, h_max = -1e9;
  torch::Tensor r;
  for (int t = 0; t < 2000; ++t) {
    set_grad(p, p.detach());
    s->step();
    r = read_state(*s, "0.momentum");
    // The merged-kick state holds r at the half step; the full-step momentum is r − (η/2)∇U(θ). For
    // the harmonic oscillator leapfrog conserves θ²(1 − η²/4)/2 + r²/2 exactly, so H varies by ≤ η²/4.
    const double th = p.item<double>(), rr = r.item<double>() - 0.05 * th;
    const double h = 0.5 * th * th + 0.5 * rr * rr;
    h_min = std::min(h_min, h);
    h_max = std::max(h_max, h);
  }
  EXPECT_GT(h_min, 0.5 * (1 - 0.01));  // H₀ = 1/2 (r₀ = 0 with T = 0)
  EXPECT_LT(h_max, 0.5 * (1 + 0.01));
}

// At a boundary the momentum is partially refreshed: α = exp(−η N_l C), 0 at step 0, logged.
TEST(StochasticHmc, RefreshAlphaAndCheckpoint) {
  auto p = torch::tensor({0.0, 0.0}, torch::kFloat64).requires_grad_();
  auto s = make("stochastic-hmc", {p}, {{"lr", "0.2"}, {"leapfrog_steps", "3"}, {"friction", "0.5"}});
  set_grad(p, torch::zeros({2}, torch::kFloat64));
  s->step();
  EXPECT_EQ(s->diagnostics().at("refresh_alpha"), 0.0);
  for (int t = 0; t < 3; ++t) {
    set_grad(p, torch::zeros({2}, torch::kFloat64));
    s->step();
  }
  EXPECT_NEAR(s->diagnostics().at("refresh_alpha"), std::exp(-0.2 * 3 * 0.5), 1e-15);
  check_round_trip("stochastic-hmc", {{"lr", "0.01"}, {"leapfrog_steps", "3"}});
}

TEST(StochasticHmc, BadOptions) {
  expect_option_error("stochastic-hmc", {{"leapfrog_steps", "0"}}, "stochastic-hmc.leapfrog_steps: must be >= 1");
  expect_option_error("stochastic-hmc", {{"friction", "-1"}}, "stochastic-hmc.friction");
  expect_option_error("stochastic-hmc", {{"lr", "0"}}, "stochastic-hmc.lr");
}
