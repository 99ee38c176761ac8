#include <gtest/gtest.h>

#include <cmath>

#include "kernels/update/update_rules.h"
#include "sampler_test_util.h"
#include "samplers/santa.h"

using namespace sgmcmc;
using namespace sgmcmc::test;
namespace {
torch::Tensor d(double x) { return torch::tensor({x}, torch::kFloat64); }
rules::SantaScalars scalars(bool exploring, bool precond) {
  rules::SantaScalars s;
  s.lr = 0.01;
  s.sigma = 0.9;
  s.eps = 0.0;
  s.data_size = 1;
  s.beta = 1;
  s.exploring = exploring;
  s.precond_term = precond;
  s.first = false;
  return s;
}
}  // namespace

// Euler exploration: θ=1, u=0.5, α=0.2, v=1, g_prev=0.5, f=2, ζ=0.5, η=0.01, σ=0.9, λ=0, N=1, β=1:
//   v' = 0.9 + 0.1·4 = 1.3;  g = 1/sqrt(sqrt(1.3));  α' = 0.2 + 0.25 − 0.01 = 0.44;
//   u' = sqrt(2·0.01·0.5)·0.5 + (1 − 0.44)·0.5 − 0.01·g·2 = 0.05 + 0.28 − 0.02g;  θ' = 1 + g u'.
// With precond_term: u' += 0.01·(1 − 0.5/g)/0.5.
TEST(SantaRule, EulerExplorationGolden) {
  const double g = 1.0 / std::sqrt(std::sqrt(1.3));
  for (bool precond : {false, true}) {
    auto theta = d(1.0), u = d(0.5), alpha = d(0.2), v = d(1.0), gp = d(0.5);
    rules::santa_euler_update(theta, u, alpha, v, gp, d(2.0), d(0.5), scalars(true, precond));
    double want_u = 0.05 + 0.28 - 0.02 * g;
    if (precond) want_u += 0.01 * (1 - 0.5 / g) / 0.5;
    EXPECT_NEAR(v.item<double>(), 1.3, 1e-15);
    EXPECT_NEAR(alpha.item<double>(), 0.44, 1e-15);
    EXPECT_NEAR(u.item<double>(), want_u, 1e-15);
    EXPECT_NEAR(theta.item<double>(), 1.0 + g * want_u, 1e-15);
    EXPECT_NEAR(gp.item<double>(), g, 1e-15);
  }
}

// Euler refinement: α unchanged, no noise: u' = 0.8·0.5 − 0.02g.
TEST(SantaRule, EulerRefinementGolden) {
  const double g = 1.0 / std::sqrt(std::sqrt(1.3));
  auto theta = d(1.0), u = d(0.5), alpha = d(0.2), v = d(1.0), gp = d(0.5);
  rules::santa_euler_update(theta, u, alpha, v, gp, d(2.0), d(0.5), scalars(false, false));
  EXPECT_NEAR(alpha.item<double>(), 0.2, 1e-15);
  EXPECT_NEAR(u.item<double>(), 0.4 - 0.02 * g, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.0 + g * (0.4 - 0.02 * g), 1e-15);
}

// SSI exploration: e = e^{−0.1} (α = 0.2):  u' = e(e·0.5 − 0.02g + 0.1·0.5);  θ' = 1 + g u';
//   α' = 0.2 + u'² − 0.01.
TEST(SantaRule, SsiExplorationGolden) {
  const double g = 1.0 / std::sqrt(std::sqrt(1.3));
  const double e = std::exp(-0.1);
  auto theta = d(1.0), u = d(0.5), alpha = d(0.2), v = d(1.0), gp = d(0.5);
  rules::santa_ssi_update(theta, u, alpha, v, gp, d(2.0), d(0.5), scalars(true, false));
  const double want_u = e * (e * 0.5 - 0.02 * g + 0.05);
  EXPECT_NEAR(u.item<double>(), want_u, 1e-15);
  EXPECT_NEAR(theta.item<double>(), 1.0 + g * want_u, 1e-15);
  EXPECT_NEAR(alpha.item<double>(), 0.2 + want_u * want_u - 0.01, 1e-15);
}

// Constant-G₂ noise (noise_g2 = 0.5, the authors' code): the noise term is sqrt(2·0.01·0.5/β)·ζ, whatever
// g_prev; with g_prev = 0.5 that is the same 0.05 as above, so g_prev = 2 here must not change u'.
TEST(SantaRule, SsiConstantNoiseIgnoresGPrev) {
  const double g = 1.0 / std::sqrt(std::sqrt(1.3));
  const double e = std::exp(-0.1);
  auto s = scalars(true, false);
  s.noise_g2 = 0.5;
  auto theta = d(1.0), u = d(0.5), alpha = d(0.2), v = d(1.0), gp = d(2.0);
  rules::santa_ssi_update(theta, u, alpha, v, gp, d(2.0), d(0.5), s);
  const double want_u = e * (e * 0.5 - 0.02 * g + 0.05);
  EXPECT_NEAR(u.item<double>(), want_u, 1e-15);
  s.noise_g2 = 2.0;  // 4× the variance: the noise term doubles to 0.1
  theta = d(1.0), u = d(0.5), alpha = d(0.2), v = d(1.0), gp = d(0.5);
  rules::santa_ssi_update(theta, u, alpha, v, gp, d(2.0), d(0.5), s);
  EXPECT_NEAR(u.item<double>(), e * (e * 0.5 - 0.02 * g + 0.1), 1e-15);
}

// thermostat_init fixed_point: on the first step α ← asinh(g) before the SSI update (f = 2, N = 2,
// v = 1 ⇒ g = 1, α = asinh 1); otherwise the golden SSI step with that α.
TEST(SantaRule, SsiFixedPointThermostatInit) {
  auto s = scalars(true, false);
  s.first = true;
  s.data_size = 2;
  s.alpha_fixed_point = true;
  auto theta = d(1.0), u = d(0.5), alpha = d(0.2), v = d(0.0), gp = d(0.0);
  rules::santa_ssi_update(theta, u, alpha, v, gp, d(2.0), d(0.5), s);
  const double a0 = std::asinh(1.0), e = std::exp(-a0 / 2);
  const double want_u = e * (e * 0.5 - 0.02 + std::sqrt(2 * 0.01 * 1.0) * 0.5);
  EXPECT_NEAR(u.item<double>(), want_u, 1e-15);
  EXPECT_NEAR(alpha.item<double>(), a0 + want_u * want_u - 0.01, 1e-15);
  expect_option_error("santa", {{"thermostat_init", "fixed_point"}}, "santa.thermostat_init");  // Euler: refused
}

// First step: v ← f²/N² (N = 2: v = 4/4 = 1 ⇒ g = 1/sqrt(λ + 1)), g_prev ← g.
TEST(SantaRule, FirstStepInitialisesV) {
  auto s = scalars(true, false);
  s.first = true;
  s.data_size = 2;
  auto theta = d(0.0), u = d(0.0), alpha = d(0.0), v = d(0.0), gp = d(0.0);
  rules::santa_euler_update(theta, u, alpha, v, gp, d(2.0), d(0.0), s);
  EXPECT_NEAR(v.item<double>(), 1.0, 1e-15);
  EXPECT_NEAR(gp.item<double>(), 1.0, 1e-15);
}

// Annealing schedule, burn-in switch and initial state.
TEST(Santa, ScheduleAndDiagnostics) {
  auto p = torch::zeros({4}, torch::kFloat64).requires_grad_();
  auto s = make("santa", {p}, {{"lr", "0.04"}, {"burnin", "2"}, {"anneal_a", "2"}, {"anneal_gamma", "0.5"},
                               {"friction", "3"}});
  auto& santa = dynamic_cast<Santa&>(*s);
  EXPECT_NEAR(santa.inverse_temperature(0), 2.0, 1e-15);
  EXPECT_NEAR(santa.inverse_temperature(3), 2.0 * 2.0, 1e-15);  // 2·(3+1)^0.5
  // α₀ = sqrt(η)·C = 0.2·3 = 0.6; u₀ = sqrt(η)·N(0, 1) is not zero.
  EXPECT_NEAR(s->diagnostics().at("thermostat_mean"), 0.6, 1e-15);
  EXPECT_GT(read_state(*s, "0.u").abs().sum().item<double>(), 0.0);
  for (int t = 0; t < 3; ++t) {
    set_grad(p, torch::ones({4}, torch::kFloat64));
    s->step();
    EXPECT_EQ(s->diagnostics().at("exploring"), t < 2 ? 1.0 : 0.0) << t;
  }
}

// grad_decay = 0.4 (the authors' decay_grad): the sampler fed g₀, g₁, g₂ moves θ exactly as one without
// the EMA fed the smoothed f₀ = g₀, f_t = 0.6·g_t + 0.4·f_{t−1} (same seed, so the same noise). The
// EMA's state is checkpointed, and the sampler is then not graph-capturable.
TEST(Santa, GradDecayIsAnEmaOfTheGradient) {
  for (const char* integrator : {"euler", "ssi"}) {
    auto pa = torch::tensor({0.3, -0.2, 1.0}, torch::kFloat64).requires_grad_();
    auto pb = pa.detach().clone().requires_grad_();
    const std::vector<std::pair<std::string, std::string>> kv = {
        {"lr", "0.01"}, {"burnin", "2"}, {"integrator", integrator}, {"friction", "1"}, {"eps", "1"}};
    auto with = kv;
    with.push_back({"grad_decay", "0.4"});
    auto a = make("santa", {pa}, with), b = make("santa", {pb}, kv);
    EXPECT_FALSE(a->has_fused_step());
    EXPECT_TRUE(b->has_fused_step());
    torch::Tensor f;
    for (int t = 0; t < 4; ++t) {
      const auto g = torch::tensor({1.0, -2.0, 0.5}, torch::kFloat64) * (t + 1) + 0.3 * pa.detach();
      f = t == 0 ? g : g * 0.6 + f * 0.4;
      set_grad(pa, g);
      set_grad(pb, f);
      a->step();
      b->step();
      EXPECT_TRUE(torch::allclose(pa, pb, 0, 1e-14)) << integrator << " step " << t;
      EXPECT_TRUE(torch::allclose(read_state(*a, "0.grad_ema"), f, 0, 1e-14)) << integrator << " step " << t;
    }
  }
}

// explore_eps is λ during exploration only: with burn-in 2, (eps 1e-5, explore_eps 0.5) moves as
// (eps 0.5) for the first two steps and as (eps 1e-5) after them.
TEST(Santa, ExploreEpsIsLambdaOfExplorationOnly) {
  auto run = [](const std::vector<std::pair<std::string, std::string>>& extra, int steps) {
    auto p = torch::tensor({0.3, -0.2, 1.0}, torch::kFloat64).requires_grad_();
    std::vector<std::pair<std::string, std::string>> kv = {{"lr", "0.01"}, {"burnin", "2"}, {"friction", "1"}};
    kv.insert(kv.end(), extra.begin(), extra.end());
    auto s = make("santa", {p}, kv);
    for (int t = 0; t < steps; ++t) {
      set_grad(p, torch::tensor({1.0, -2.0, 0.5}, torch::kFloat64) + 0.3 * p.detach());
      s->step();
    }
    return std::make_pair(p.detach().clone(), read_state(*s, "0.g_prev"));
  };
  const auto both = run({{"eps", "1e-5"}, {"explore_eps", "0.5"}}, 2);
  const auto large = run({{"eps", "0.5"}}, 2);
  EXPECT_TRUE(torch::equal(both.first, large.first));
  EXPECT_TRUE(torch::equal(both.second, large.second));
  // third step (refinement): g = 1/sqrt(λ + sqrt(v)) with λ = eps
  const auto third = run({{"eps", "1e-5"}, {"explore_eps", "0.5"}}, 3);
  const auto third_large = run({{"eps", "0.5"}}, 3);
  EXPECT_FALSE(torch::equal(third.second, third_large.second));
  EXPECT_TRUE((third.second > third_large.second).all().item<bool>());  // smaller λ, larger g
}

TEST(SantaOptions, BadValuesRejected) {
  expect_option_error("santa", {{"lr", "-1"}}, "santa.lr");
  expect_option_error("santa", {{"sigma", "0"}}, "santa.sigma");
  expect_option_error("santa", {{"eps", "0"}}, "santa.eps");
  expect_option_error("santa", {{"data_size", "0"}}, "santa.data_size");
  expect_option_error("santa", {{"burnin", "-1"}}, "santa.burnin");
  expect_option_error("santa", {{"anneal_gamma", "-1"}}, "santa.anneal_gamma");
  expect_option_error("santa", {{"noise_g2", "-1"}}, "santa.noise_g2");
  expect_option_error("santa", {{"grad_decay", "1"}}, "santa.grad_decay");
  expect_option_error("santa", {{"grad_decay", "-0.1"}}, "santa.grad_decay");
  expect_option_error("santa", {{"explore_eps", "-1"}}, "santa.explore_eps");
  expect_option_error("santa", {{"thermostat_init", "x"}}, "sampler.thermostat_init");
  expect_option_error("santa", {{"integrator", "x"}}, "sampler.integrator");
  expect_option_error("santa", {{"precond_term", "maybe"}}, "sampler.precond_term");
}

TEST(SantaCheckpoint, RoundTrip) {
  check_round_trip("santa", {{"lr", "0.01"}, {"burnin", "6"}});
  check_round_trip("santa", {{"lr", "0.01"}, {"integrator", "ssi"}, {"precond_term", "true"}});
  check_round_trip("santa", {{"lr", "0.01"}, {"integrator", "ssi"}, {"grad_decay", "0.4"}, {"explore_eps", "1e-4"}});
}
