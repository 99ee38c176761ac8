// SGRLD (samplers/sgrld.h): the rule's golden values, and its stationary distribution on two targets with
// known answers, each from many independent chains held in one parameter tensor (their final states are
// independent draws, so the tolerances are standard errors of iid samples):
// - a Dirichlet(α) on the simplex by the expanded mean (θᵢ ~ Gamma(αᵢ, 1), π = θ/Σθ);
// - a standard Gaussian under the quadratic metric G = 1 + θ², where the Γ term is what keeps N(0, 1)
//   stationary (without it the chain samples N(0, 1)/G, of variance 0.52).
#include <gtest/gtest.h>

#include <cmath>

#include "sampler_test_util.h"
#include "samplers/registry.h"
#include "samplers/sgrld.h"

using namespace sgmcmc;

namespace {

// Runs `chains` independent chains of `dim` coordinates for `steps` steps; grad(θ) gives ∇Ũ elementwise.
torch::Tensor run_chains(const std::map<std::string, std::string>& options, torch::Tensor theta, int steps,
                         const std::function<torch::Tensor(const torch::Tensor&)>& grad, uint64_t seed) {
  theta = theta.clone().set_requires_grad(true);
  std::vector<std::pair<std::string, std::string>> kv(options.begin(), options.end());
  auto s = test::make("sgrld", {theta}, kv, seed);
  for (int t = 0; t < steps; ++t) {
    theta.mutable_grad() = grad(theta.detach());
    s->step();
  }
  return theta.detach().clone();
}

}  // namespace

// One step by hand: θ = (0.5, −2), ∇ = (1, 3), noise (0.3, −1), h = 0.01, T = 1.
TEST(Sgrld, GoldenSteps) {
  const auto grad = torch::tensor({1.0, 3.0}, torch::kFloat64);
  const auto noise = torch::tensor({0.3, -1.0}, torch::kFloat64);
  {  // expanded mean: θ + h(sign θ − |θ|∇) + √(2h|θ|) ξ, then |θ|
    auto theta = torch::tensor({0.5, -2.0}, torch::kFloat64);
    rules::sgrld_update(theta, grad, noise, 0.01, 1.0, "expanded_mean", 1.0);
    const double a = 0.5 + 0.01 * (1 - 0.5 * 1) + std::sqrt(2 * 0.01 * 0.5) * 0.3;
    const double b = -2.0 + 0.01 * (-1 - 2.0 * 3) + std::sqrt(2 * 0.01 * 2.0) * -1.0;
    EXPECT_DOUBLE_EQ(theta[0].item<double>(), std::fabs(a));
    EXPECT_DOUBLE_EQ(theta[1].item<double>(), std::fabs(b));
  }
  {  // quadratic, c = 0.5: G = 1 + cθ², Γ = 2cθ, T = 2
    auto theta = torch::tensor({0.5, -2.0}, torch::kFloat64);
    rules::sgrld_update(theta, grad, noise, 0.01, 2.0, "quadratic", 0.5);
    auto want = [](double x, double g, double z) {
      const double G = 1 + 0.5 * x * x, Gamma = 2 * 0.5 * x;
      return x + 0.01 * (2.0 * Gamma - G * g) + std::sqrt(2 * 0.01 * 2.0 * G) * z;
    };
    EXPECT_NEAR(theta[0].item<double>(), want(0.5, 1.0, 0.3), 1e-15);
    EXPECT_NEAR(theta[1].item<double>(), want(-2.0, 3.0, -1.0), 1e-15);
  }
}

TEST(Sgrld, OptionsAreChecked) {
  test::expect_option_error("sgrld", {{"metric", "riemann"}}, "sampler.metric: 'riemann' is not one of");
  test::expect_option_error("sgrld", {{"metric_scale", "0"}}, "sgrld.metric_scale: must be a finite number > 0");
  // the expanded mean needs non-negative parameters
  auto theta = torch::tensor({1.0, -1.0}).set_requires_grad(true);
  try {
    test::make("sgrld", {theta}, {});
    ADD_FAILURE() << "a negative parameter was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expanded_mean needs non-negative parameters"), std::string::npos) << e.what();
  }
}

// Dirichlet(0.5, 1, 2, 4) by the expanded mean: Ũ = Σ θᵢ − (αᵢ − 1) log θᵢ, ∇ = 1 − (αᵢ − 1)/θᵢ, so the step
// is θ ← |θ + h(α − θ) + √(2hθ) ξ|. 4,000 chains from θ = 1, 4,000 steps of h = 2e-3 (8 relaxation times
// 1/h). π = θ/Σθ has mean α/α₀ and variance αᵢ(α₀ − αᵢ)/(α₀²(α₀ + 1)), α₀ = 7.5. Tolerances: the mean within
// 4 standard errors of 4,000 draws, the variance within 12 % (4 errors of a variance, √(2/4000) ≈ 2.2 %,
// plus the O(h) bias); a drift without Γ (h(α − 1 − θ)) would move π's mean of the α = 0.5 coordinate by
// more than half.
TEST(Sgrld, DirichletOnTheSimplexByTheExpandedMean) {
  const std::vector<double> alpha = {0.5, 1.0, 2.0, 4.0};
  const auto a = torch::tensor(alpha, torch::kFloat64);
  const int64_t chains = 4000;
  const auto theta = run_chains({{"lr", "2e-3"}}, torch::ones({chains, 4}, torch::kFloat64), 4000,
                                [&](const torch::Tensor& x) { return 1 - (a - 1) / x.clamp_min(1e-300); }, 7);
  const auto pi = theta / theta.sum(1, true);
  const double a0 = 7.5;
  for (int k = 0; k < 4; ++k) {
    const auto col = pi.select(1, k);
    const double mean = alpha[k] / a0, var = alpha[k] * (a0 - alpha[k]) / (a0 * a0 * (a0 + 1));
    EXPECT_NEAR(col.mean().item<double>(), mean, 4 * std::sqrt(var / chains)) << "coordinate " << k;
    EXPECT_NEAR(col.var().item<double>() / var, 1.0, 0.12) << "coordinate " << k;
  }
}

// N(0, 1) in each coordinate under G = 1 + θ²: 20,000 chains from 0, 3,000 steps of h = 5e-3 (15 relaxation
// times at θ = 0; the metric only speeds the tails). Mean within 4 errors, variance within 6 % (4 errors of
// √(2/20000) plus the O(h) bias), the fourth moment E θ⁴ = 3 within 12 %. Without Γ the variance is 0.52.
TEST(Sgrld, GaussianUnderANonConstantMetric) {
  const int64_t chains = 20000;
  const auto theta = run_chains({{"lr", "5e-3"}, {"metric", "quadratic"}}, torch::zeros({chains}, torch::kFloat64),
                                3000, [](const torch::Tensor& x) { return x.clone(); }, 11);
  EXPECT_NEAR(theta.mean().item<double>(), 0.0, 4 * std::sqrt(1.0 / chains));
  EXPECT_NEAR(theta.var().item<double>(), 1.0, 0.06);
  EXPECT_NEAR(theta.pow(4).mean().item<double>(), 3.0, 0.36);
}
