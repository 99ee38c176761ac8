#include <gtest/gtest.h>

#include <cmath>

#include "kernels/update/update_rules.h"
#include "sampler_test_util.h"

using namespace sgmcmc;
using namespace sgmcmc::test;
namespace {
torch::Tensor d(double x) { return torch::tensor({x}, torch::kFloat64); }
// Runs `name` for gradients g1, g2 from θ = 1 and returns θ.
double two_steps(const std::string& name, const std::vector<std::pair<std::string, std::string>>& kv,
                 double g1, double g2) {
  auto p = torch::ones({1}, torch::kFloat64).requires_grad_();
  auto s = make(name, {p}, kv);
  EXPECT_FALSE(s->is_sampler());
  set_grad(p, d(g1));
  s->step();
  set_grad(p, d(g2));
  s->step();
  return p.item<double>();
}
}  // namespace

// sgd: 1 − 0.1·2 − 0.1·1 = 0.7.
TEST(Optimizers, Sgd) { EXPECT_NEAR(two_steps("sgd", {{"lr", "0.1"}}, 2, 1), 0.7, 1e-15); }

// momentum 0.5: b = 2, θ = 0.8; b = 0.5·2 + 1 = 2, θ = 0.6.
// nesterov: step 1 d = 2 + 0.5·2 = 3 → 0.7; step 2 b = 2, d = 1 + 1 = 2 → 0.5.
TEST(Optimizers, Momentum) {
  EXPECT_NEAR(two_steps("sgd-momentum", {{"lr", "0.1"}, {"momentum", "0.5"}}, 2, 1), 0.6, 1e-15);
  EXPECT_NEAR(two_steps("sgd-momentum", {{"lr", "0.1"}, {"momentum", "0.5"}, {"nesterov", "true"}}, 2, 1), 0.5, 1e-15);
}

// rmsprop α = 0.5, eps = 0: V = 2, θ = 1 − 0.1·2/sqrt2; V = 1 + 0.5 = 1.5, θ −= 0.1/sqrt(1.5).
TEST(Optimizers, Rmsprop) {
  const double want = 1 - 0.2 / std::sqrt(2.0) - 0.1 / std::sqrt(1.5);
  EXPECT_NEAR(two_steps("rmsprop", {{"lr", "0.1"}, {"alpha", "0.5"}, {"eps", "1e-300"}}, 2, 1), want, 1e-14);
}

// adam β1 = 0.5, β2 = 0.75: t=1: m = 1, s = 1, m̂ = 2, ŝ = 4 → θ = 1 − 0.1·2/2 = 0.9;
// t=2: m = 0.5 + 0.5 = 1, s = 0.75 + 0.25 = 1, m̂ = 1/0.75, ŝ = 1/0.4375 → θ −= 0.1·(4/3)·sqrt(0.4375).
TEST(Optimizers, Adam) {
  const double want = 0.9 - 0.1 * (4.0 / 3.0) * std::sqrt(0.4375);
  EXPECT_NEAR(two_steps("adam", {{"lr", "0.1"}, {"beta1", "0.5"}, {"beta2", "0.75"}, {"eps", "1e-300"}}, 2, 1),
              want, 1e-14);
}

TEST(Optimizers, BadValuesRejected) {
  expect_option_error("sgd", {{"lr", "-1"}}, "sgd.lr");
  expect_option_error("sgd", {{"temperature", "1"}}, "sampler.temperature: unknown key");
  expect_option_error("sgd-momentum", {{"momentum", "1"}}, "sgd-momentum.momentum");
  expect_option_error("rmsprop", {{"alpha", "0"}}, "rmsprop.alpha");
  expect_option_error("adam", {{"beta2", "1"}}, "adam.beta2");
  expect_option_error("adam", {{"eps", "-1"}}, "adam.eps");
}

TEST(Optimizers, CheckpointRoundTrip) {
  check_round_trip("sgd-momentum", {{"lr", "0.01"}});
  check_round_trip("rmsprop", {{"lr", "0.01"}});
  check_round_trip("adam", {{"lr", "0.01"}});
  check_round_trip("sgd", {{"lr", "0.01"}}, /*state_matters=*/false);
}
