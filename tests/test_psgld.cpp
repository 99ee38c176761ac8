#include <gtest/gtest.h>

#include <cmath>

#include "kernels/update/update_rules.h"
#include "sampler_test_util.h"

using namespace sgmcmc;
using namespace sgmcmc::test;
namespace {
torch::Tensor d(double x) { return torch::tensor({x}, torch::kFloat64); }
}  // namespace

// Step 1 (first): θ=1, g=2, ξ=0.5, η=0.1, T=1, α=0.99, eps=1e-5: V = g² = 4, G = 1/(1e-5 + 2),
//   θ' = 1 − 0.1·G·2 + sqrt(0.2·G)·0.5.
// Step 2: g=1, ξ=−1: V = 0.99·4 + 0.01·1 = 3.97, G = 1/(1e-5 + sqrt(3.97)), θ'' = θ' − 0.1·G − sqrt(0.2·G).
TEST(PsgldRule, GoldenTwoSteps) {
  auto theta = d(1.0), v = d(0.0);
  rules::psgld_update(theta, v, d(2.0), d(0.5), 0.1, 1.0, 0.99, 1e-5, true);
  const double G1 = 1.0 / (1e-5 + 2.0);
  const double t1 = 1.0 - 0.1 * G1 * 2 + std::sqrt(0.2 * G1) * 0.5;
  EXPECT_NEAR(v.item<double>(), 4.0, 1e-15);
  EXPECT_NEAR(theta.item<double>(), t1, 1e-14);
  rules::psgld_update(theta, v, d(1.0), d(-1.0), 0.1, 1.0, 0.99, 1e-5, false);
  const double G2 = 1.0 / (1e-5 + std::sqrt(3.97));
  EXPECT_NEAR(v.item<double>(), 3.97, 1e-14);
  EXPECT_NEAR(theta.item<double>(), t1 - 0.1 * G2 - std::sqrt(0.2 * G2), 1e-14);
}

TEST(PsgldRule, ZeroTemperatureIsRmspropLike) {
  auto theta = d(1.0), v = d(0.0);
  rules::psgld_update(theta, v, d(2.0), d(123.0), 0.1, 0.0, 0.99, 1e-5, true);
  EXPECT_NEAR(theta.item<double>(), 1.0 - 0.2 / (2.0 + 1e-5), 1e-14);
}

TEST(PsgldOptions, BadValuesRejected) {
  expect_option_error("psgld", {{"lr", "-1"}}, "psgld.lr");
  expect_option_error("psgld", {{"alpha", "0"}}, "psgld.alpha");
  expect_option_error("psgld", {{"alpha", "1.5"}}, "psgld.alpha");
  expect_option_error("psgld", {{"eps", "0"}}, "psgld.eps");
  expect_option_error("psgld", {{"temperature", "-1"}}, "psgld.temperature");
  expect_option_error("psgld", {{"alpa", "0.9"}}, "sampler.alpa: unknown key");
}

TEST(PsgldCheckpoint, RoundTrip) { check_round_trip("psgld", {{"lr", "0.01"}}); }
