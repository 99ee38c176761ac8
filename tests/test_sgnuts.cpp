// SGNUTS (samplers/sgnuts.h): the U-turn lengths it learns, and its stationary distribution on 000 Fig. 3's
// correlated 2-D Gaussian (Σ = [[1, 0.9], [0.9, 1]]) against the exact one.
#include <gtest/gtest.h>

#include <cmath>

#include "sampler_test_util.h"
#include "samplers/sgnuts.h"

using namespace sgmcmc;

namespace {

struct Moments {
  double m0 = 0, m1 = 0, v0 = 0, v1 = 0, c01 = 0;
  std::vector<int64_t> lengths;
};

// One chain of `steps` steps from (2, −2) with ∇U = Σ⁻¹θ + noise·N(0, I); moments of the steps after `burn`.
Moments run(double eta, int64_t steps, int64_t burn, double noise, uint64_t seed) {
  auto theta = torch::tensor({2.0, -2.0}, torch::kFloat64).set_requires_grad(true);
  auto s = test::make("sgnuts", {theta}, {{"lr", std::to_string(eta)}, {"adapt_trajectories", "50"}}, seed);
  const auto prec = torch::linalg::inv(torch::tensor({{1.0, 0.9}, {0.9, 1.0}}, torch::kFloat64));
  auto gen = at::detail::createCPUGenerator(seed + 100);
  std::vector<double> x0, x1;
  for (int64_t t = 0; t < steps; ++t) {
    auto g = prec.matmul(theta.detach());
    if (noise > 0) g = g + noise * torch::randn({2}, gen, torch::kFloat64);
    theta.mutable_grad() = g;
    s->step();
    if (t >= burn) {
      x0.push_back(theta[0].item<double>());
      x1.push_back(theta[1].item<double>());
    }
  }
  Moments m;
  const double n = static_cast<double>(x0.size());
  for (size_t i = 0; i < x0.size(); ++i) m.m0 += x0[i] / n, m.m1 += x1[i] / n;
  for (size_t i = 0; i < x0.size(); ++i) {
    m.v0 += (x0[i] - m.m0) * (x0[i] - m.m0) / n;
    m.v1 += (x1[i] - m.m1) * (x1[i] - m.m1) / n;
    m.c01 += (x0[i] - m.m0) * (x1[i] - m.m1) / n;
  }
  m.lengths = static_cast<Sgnuts&>(*s).lengths();
  return m;
}

}  // namespace

TEST(Sgnuts, OptionsAreChecked) {
  test::expect_option_error("sgnuts", {{"lr", "0"}}, "sgnuts.lr");
  test::expect_option_error("sgnuts", {{"max_leapfrog", "1"}}, "sgnuts.max_leapfrog");
  test::expect_option_error("sgnuts", {{"adapt_trajectories", "0"}}, "sgnuts.adapt_trajectories");
}

// Exact gradients, η = 0.1: 300,000 steps, the first 5,000 discarded (the 50 adapted trajectories take
// ≈ 1,000). Σ's eigenvalues are 1.9 and 0.1 (periods 2π√1.9 ≈ 8.7 and 2π√0.1 ≈ 2.0 in time, 87 and 20
// leapfrog steps): a trajectory from a fresh momentum turns back after a quarter to a half period of the
// slow direction mixed with the fast one, so the recorded lengths lie between a few steps and ≈ 45 and
// never reach max_leapfrog. The moments: along the slow direction a trajectory covers a quarter period,
// so the integrated autocorrelation is ≈ 55 steps (measured: 60,000 steps leave the variances 8 % off,
// 600,000 within 0.5 %), an ESS ≈ 5,400 here and standard errors ≈ 0.014 on the means, ≈ 0.019 on the
// variances; the leapfrog's O(η²) bias without an accept step is +2.5 % at most (the fast direction's
// η²ω²/4). Tolerances: means within 0.08, variances and the covariance within 0.08 of 1 and 0.9 (4 errors).
TEST(Sgnuts, CorrelatedGaussianExactGradients) {
  const Moments m = run(0.1, 300000, 5000, 0.0, 3);
  ASSERT_EQ(m.lengths.size(), 50u);
  double mean_len = 0;
  for (auto l : m.lengths) {
    EXPECT_GE(l, 2);
    EXPECT_LT(l, 256);
    mean_len += static_cast<double>(l) / 50.0;
  }
  EXPECT_GT(mean_len, 4);
  EXPECT_LT(mean_len, 45);
  EXPECT_NEAR(m.m0, 0, 0.08);
  EXPECT_NEAR(m.m1, 0, 0.08);
  EXPECT_NEAR(m.v0, 1, 0.08);
  EXPECT_NEAR(m.v1, 1, 0.08);
  EXPECT_NEAR(m.c01, 0.9, 0.08);
  std::cout << "sgnuts: mean length " << mean_len << ", moments " << m.m0 << " " << m.m1 << " " << m.v0 << " "
            << m.v1 << " " << m.c01 << "\n";
}

// Gradient noise N(0, I) (000 Fig. 3's setting), η = 0.05: 400,000 steps, the first 8,000 discarded. There is
// no friction to absorb the noise (no β̂ correction), so the chain runs hot by O(η): the momentum gains
// η²·B a step until the next refresh, and the stationary variances come out ≈ 1.10 (measured here; 004:
// the heat vanishes as η → 0). The noise is isotropic in ∇Ũ, so it inflates both directions alike and the
// correlation stays 0.9. The autocorrelation is ≈ 110 steps at this η, an ESS ≈ 3,600: errors ≈ 0.024 on
// the variances, ≈ 0.004 on the correlation. Asserted: the correlation within 0.02 of 0.9 (5 errors), the
// variances between 0.95 (cooler than the target would be a fault) and 1.2 (the heat at most 20 %).
TEST(Sgnuts, CorrelatedGaussianNoisyGradients) {
  const Moments m = run(0.05, 400000, 8000, 1.0, 5);
  EXPECT_NEAR(m.m0, 0, 0.1);
  EXPECT_NEAR(m.m1, 0, 0.1);
  EXPECT_NEAR(m.c01 / std::sqrt(m.v0 * m.v1), 0.9, 0.02);
  for (double v : {m.v0, m.v1}) {
    EXPECT_GT(v, 0.95);
    EXPECT_LT(v, 1.2);
  }
  std::cout << "sgnuts noisy: moments " << m.m0 << " " << m.m1 << " " << m.v0 << " " << m.v1 << " " << m.c01 << "\n";
}
