// The posterior's temperature and the convergence verdict (docs/calibration.md):
//  - the effective-temperature estimate T·(1 + r) (train/health.h) against the truth on Gaussian targets
//    with minibatch noise of known size: the chain's own variance over the target's;
//  - the verdict over every traced quantity (train/convergence_trace.h): a stalled chain, one that has not
//    mixed, and one that has, each built, and "ok" only for the last; a run whose chain never moves says so.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "compat.h"
#include "core/remove_tree.h"
#include "sampler_test_util.h"
#include "tiny_idx.h"
#include "torchscript_fixtures.h"
#include "train/convergence_trace.h"
#include "train/health.h"
#include "train/trainer.h"

using namespace sgmcmc;
using sgmcmc::test_util::config_from;
using sgmcmc::test_util::temp_dir;
using sgmcmc::test_util::write_tiny_idx_dir;

namespace {

struct TemperatureRun {
  double truth = 0;     // mean over coordinates of Var(θ_i)·k_i / T: the chain's temperature
  double estimate = 0;  // T·(1 + r), r the sampler's ratio of V̂ (the probe's estimator) to its injected noise
};

// U(θ) = Σ k_i θ_i²/2 with k_i spread over [0.5, 4] (d = 40), ∇Ũ = kθ + √V·ξ: minibatch noise of variance V
// per coordinate. The sampler runs `steps` steps after a burn-in of a tenth; the truth is the chain's
// variance against the target's 1/k_i, averaged over the coordinates (and T = 1). V̂ is what the probe
// computes, (ĝ₁ − ĝ₂)²/2 of two gradients at one θ, averaged over 20 probes along the chain.
TemperatureRun run_gaussian(const std::string& sampler, const std::vector<std::pair<std::string, std::string>>& options,
                            double V, int64_t steps) {
  const int64_t d = 40;
  auto gen = compat::make_generator(torch::kCPU, 17);
  const auto k = torch::linspace(0.5, 4.0, d, torch::kFloat64);
  auto theta = torch::zeros({d}, torch::kFloat64).requires_grad_();
  auto s = test::make(sampler, {theta}, options, 3);
  const double sd = std::sqrt(V);
  auto gradient = [&] { return k * theta.detach() + sd * at::randn({d}, gen, torch::kFloat64); };
  auto sum = torch::zeros({d}, torch::kFloat64), sq = torch::zeros({d}, torch::kFloat64);
  double vhat = 0;
  int probes = 0;
  const int64_t burn = steps / 10;
  for (int64_t t = 0; t < burn + steps; ++t) {
    theta.mutable_grad() = gradient();
    s->step();
    if (t < burn) continue;
    const auto x = theta.detach();
    sum += x;
    sq += x * x;
    if ((t - burn) % (steps / 20) == 0) {
      vhat += ((gradient() - gradient()).square() / 2).mean().item<double>();
      ++probes;
    }
  }
  const double n = static_cast<double>(steps);
  const auto var = sq / n - (sum / n).square();
  TemperatureRun r;
  r.truth = (var * k).mean().item<double>();
  r.estimate = 1.0 + s->gradient_noise_ratio(0, torch::full({d}, vhat / probes, torch::kFloat64));
  return r;
}

}  // namespace

// The issue's bar: the estimate within 20 % of the truth. What it leaves out is the discretisation's own
// heating, O(ηk) for SGLD and O(ηk/α)·η for SGHMC: under 1.1 % (SGLD, η k ≤ 0.02) and 0.6 % here (the
// exact stationary variances of these linear recursions, a discrete Lyapunov equation). Monte Carlo: 200,000
// steps over 40 coordinates with autocorrelation times under ~100 steps leave a relative sd of the truth
// under 1 %. So 5 % is asserted, well inside the issue's 20 %; a ratio formula off by a factor of 2 misses
// by 25 % or more at r = 1.
TEST(EffectiveTemperature, EstimateMatchesTheChainsTemperatureOnGaussianTargets) {
  struct Case {
    std::string sampler;
    std::vector<std::pair<std::string, std::string>> options;
    double eta, injected;  // the injected variance per step over 2T: η for SGLD, ηα for SGHMC (Euler)
  };
  const std::vector<Case> cases = {{"sgld", {{"lr", "0.005"}}, 0.005, 0.005},
                                   {"sghmc", {{"lr", "0.01"}, {"alpha", "0.1"}}, 0.01, 0.01 * 0.1}};
  for (const auto& c : cases)
    for (double r : {0.0, 0.3, 1.0}) {
      // r = ηV/(2·injected/η): V = 2·injected·r/η²
      const double V = 2 * c.injected * r / (c.eta * c.eta);
      const auto t = run_gaussian(c.sampler, c.options, V, 200000);
      EXPECT_NEAR(t.estimate, 1 + r, 0.05 * (1 + r)) << c.sampler << " r " << r;  // V̂ is unbiased
      EXPECT_NEAR(t.estimate / t.truth, 1.0, 0.05) << c.sampler << " r " << r << ": estimate " << t.estimate
                                                    << ", chain " << t.truth;
    }
}

TEST(EffectiveTemperature, HealthRecordsItAndWarnsPastTwentyPercent) {
  HealthCheck h(/*classification=*/false, {{"test_rmse", 1.0}}, "sghmc", /*temperature=*/1.0);
  EXPECT_TRUE(h.check_gradient_noise(10, {0.15}).empty());  // 15 % hot: within the band
  auto w = h.check_gradient_noise(20, {0.5});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].message.find("effective temperature of about 1.5"), std::string::npos) << w[0].message;
  const auto j = h.to_json(false);
  EXPECT_DOUBLE_EQ(j["gradient_noise"]["effective_temperature"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["gradient_noise"]["max_effective_temperature"].get<double>(), 1.5);
}

namespace {

// S samples of C chains: iid N(0, 1) draws (mixed), a random walk (not mixed), or constants (stalled).
ConvergenceTrace trace_of(const std::string& kind, int64_t S, int64_t C, bool classification = false) {
  auto gen = compat::make_generator(torch::kCPU, 5);
  ConvergenceTrace t;
  auto walk_ll = torch::zeros({C}, torch::kFloat64), walk_w = torch::zeros({C, 3}, torch::kFloat64),
       walk_p = torch::zeros({C, 16}, torch::kFloat64);
  for (int64_t s = 0; s < S; ++s) {
    torch::Tensor ll, w, p;
    if (kind == "stalled") {
      ll = torch::full({C}, -0.7, torch::kFloat64);
      w = torch::full({C, 3}, 0.25, torch::kFloat64);
      p = torch::full({C, 16}, 0.4, torch::kFloat64);
    } else if (kind == "mixed") {
      ll = -0.7 + 0.01 * at::randn({C}, gen, torch::kFloat64);
      w = at::randn({C, 3}, gen, torch::kFloat64);
      p = 0.5 + 0.05 * at::randn({C, 16}, gen, torch::kFloat64);
    } else {  // a chain still drifting in function space, with its log-likelihood and weights mixed
      ll = -0.7 + 0.01 * at::randn({C}, gen, torch::kFloat64);
      w = at::randn({C, 3}, gen, torch::kFloat64);
      walk_p += 0.05 * at::randn({C, 16}, gen, torch::kFloat64);
      p = 0.5 + walk_p;
    }
    t.record(ll, w, p);
  }
  return t;
}

}  // namespace

TEST(ConvergenceVerdict, OkOnlyWhenEveryTracedQuantityPasses) {
  // 2,000 independent draws: split-R̂ − 1 of one series is about (χ²₁ − 1)/n, so the largest of the 20 traced
  // series stays near 0.004, well inside 1.01 (400 draws would put it near 1.02: the threshold wants many)
  const auto mixed = trace_of("mixed", 2000, 1).diagnostics();
  EXPECT_EQ(mixed.at("stalled"), 0.0);
  EXPECT_TRUE(mixed.count("rhat_predictions_max"));
  EXPECT_EQ(ConvergenceTrace::verdict(mixed, 1, 2000), "");

  // drifting predictions: the log-likelihood and the weights alone would pass
  const auto drift = trace_of("drift", 2000, 1).diagnostics();
  EXPECT_LT(drift.at("rhat_test_loglik"), 1.01);
  EXPECT_LT(drift.at("rhat_weights_max"), 1.01);
  EXPECT_GT(drift.at("rhat_predictions_max"), 1.01);
  const std::string v = ConvergenceTrace::verdict(drift, 1, 2000);
  EXPECT_NE(v.find("has not mixed"), std::string::npos) << v;
  EXPECT_NE(v.find("test predictions"), std::string::npos) << v;

  // too few samples for 100 per chain: ESS fails even when the draws are independent
  const auto few = trace_of("mixed", 40, 2).diagnostics();
  EXPECT_NE(ConvergenceTrace::verdict(few, 2, 40).find("ESS"), std::string::npos);
}

TEST(ConvergenceVerdict, AStalledChainIsNeverOk) {
  const auto d = trace_of("stalled", 50, 1).diagnostics();
  EXPECT_EQ(d.at("stalled"), 1.0);
  EXPECT_EQ(d.at("rhat_test_loglik"), 1.0);  // what R-hat alone says of a constant trace
  const std::string v = ConvergenceTrace::verdict(d, 1, 50);
  EXPECT_NE(v.find("stalled"), std::string::npos) << v;
}

// The issue's case: sampler.lr 1e-30 leaves every weight where it started. The run finishes (its predictive
// is the initial network's, no worse than trivial on these blobs is not required: require_healthy off) and
// summary.json says the chain stalled, never "ok".
TEST(ConvergenceVerdict, ARunThatNeverMovesSaysItStalled) {
  const std::string dir = temp_dir("stalled_run");
  write_tiny_idx_dir(dir + "/data");
  const char* text = R"(
name: stalled
seed: 5
data: {dir: DATA, val_size: 100}
model: {name: mlp, hidden: [20], activation: relu}
sampler: {name: sghmc, lr: 1.0e-30}
train: {batch_size: 50, epochs: 20, burn_in: 2, require_healthy: false}
output: {progress: false}
)";
  RunOptions ro;
  ro.quiet = true;
  ro.overwrite = true;
  ro.out_dir = dir + "/run";
  const RunSummary r = run_training(config_from(text, {{"DATA", dir + "/data"}}, {}, "stalled.yaml"), ro);
  EXPECT_TRUE(r.stalled);  // `sgmcmc train` exits 4 on it (require_healthy: true; tests/test_run_safety.cpp)
  std::ifstream in(ro.out_dir + "/summary.json");
  const auto s = nlohmann::json::parse(in);
  EXPECT_EQ(s["stalled"].get<double>(), 1.0) << s.dump();
  EXPECT_TRUE(s["health"]["stalled"].get<bool>());
  EXPECT_FALSE(s["health"]["ok"].get<bool>());
  bool listed = false;
  for (const auto& w : s["health"]["warnings"])
    if (w["check"] == "stalled") listed = w["message"].get<std::string>().find("give a larger one") != std::string::npos;
  EXPECT_TRUE(listed) << s["health"].dump();
  EXPECT_FALSE(s["convergence"]["ok"].get<bool>());
  EXPECT_NE(s["convergence"]["verdict"].get<std::string>().find("stalled"), std::string::npos);
  remove_tree(dir);
}

// --- gold standard: the exact posterior of Bayesian linear regression ---------------------------

namespace {

struct Exact {
  double nll = 0, cover90 = 0, width90 = 0, tau_mean = 0;
};

constexpr double kZ90 = 1.6448536269514722;

// y = Φw + ε, Φ = [x, 1], w ~ N(0, I/λ) (weights and bias, λ = 1), ε ~ N(0, 1/τ). Given τ the posterior is
// N(μ, Σ) with Σ = (λI + τΦᵀΦ)⁻¹, μ = τΣΦᵀy, and the predictive at φ* is N(φ*ᵀμ, φ*ᵀΣφ* + 1/τ). With τ
// Gamma(a, b)-distributed, p(τ | y) ∝ Gamma(τ; a, b)·N(y; 0, ΦΦᵀ/λ + I/τ), integrated on a log-spaced grid of
// 2,000 points over [1e-2, 1e3] (the density is negligible at both ends for these data); the predictive is
// the τ-mixture. Scored as sgmcmc scores it: the mixture's log density, and the interval mean ± z·sd of its
// mean and variance.
Exact exact_blr(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& xt, const torch::Tensor& yt,
                std::optional<double> known_tau, double a = 1, double b = 1) {
  auto phi = [](const torch::Tensor& v) { return torch::cat({v, torch::ones({v.size(0), 1}, v.options())}, 1); };
  const auto P = phi(x.to(torch::kFloat64)), Pt = phi(xt.to(torch::kFloat64));
  const auto Y = y.to(torch::kFloat64), Yt = yt.to(torch::kFloat64);
  const int64_t N = P.size(0), D = P.size(1);
  std::vector<double> taus, logw;
  if (known_tau) {
    taus = {*known_tau};
    logw = {0.0};
  } else {
    for (int i = 0; i < 2000; ++i) taus.push_back(std::pow(10.0, -2 + 5.0 * i / 1999));
    for (double tau : taus) {
      const auto C = P.matmul(P.t()) + torch::eye(N, torch::kFloat64) / tau;
      const auto L = torch::linalg_cholesky(C);
      const auto z = torch::linalg_solve_triangular(L, Y.unsqueeze(1), /*upper=*/false);
      const double logdet = 2 * L.diagonal().log().sum().item<double>();
      const double loglik = -0.5 * (z.square().sum().item<double>() + logdet + N * std::log(2 * M_PI));
      // the grid is uniform in log τ: the density in τ times τ
      logw.push_back(loglik + (a - 1) * std::log(tau) - b * tau + std::log(tau));
    }
  }
  const double top = *std::max_element(logw.begin(), logw.end());
  std::vector<double> w;
  double total = 0;
  for (double l : logw) total += (w.emplace_back(std::exp(l - top)), w.back());
  auto mean = torch::zeros({Pt.size(0)}, torch::kFloat64), second = torch::zeros_like(mean),
       density = torch::zeros_like(mean);
  Exact e;
  for (size_t i = 0; i < taus.size(); ++i) {
    const double wi = w[i] / total, tau = taus[i];
    if (wi < 1e-300) continue;
    const auto S = torch::linalg_inv(torch::eye(D, torch::kFloat64) + tau * P.t().matmul(P));
    const auto mu = tau * S.matmul(P.t().matmul(Y));
    const auto m = Pt.matmul(mu), v = (Pt.matmul(S) * Pt).sum(1) + 1 / tau;
    mean += wi * m;
    second += wi * (v + m.square());
    density += wi * torch::exp(-0.5 * (Yt - m).square() / v) / torch::sqrt(2 * M_PI * v);
    e.tau_mean += wi * tau;
  }
  const auto sd = torch::sqrt(second - mean.square());
  e.nll = -density.log().mean().item<double>();
  e.cover90 = (Yt - mean).abs().le(kZ90 * sd).to(torch::kFloat64).mean().item<double>();
  e.width90 = 2 * kZ90 * sd.mean().item<double>();
  return e;
}

// A run of the default pipeline (sampler.lr, batch, budget and burn-in all auto) on `path`'s data;
// returns summary.json.
nlohmann::json run_default(const std::string& dir, const std::string& sampler, const std::string& likelihood_keys) {
  const std::string text = "name: blr\nseed: 3\ndata: {format: tensors, path: " + dir +
                           "/blr.pt, task: regression}\nmodel: {name: mlp, hidden: [], likelihood: gaussian, " +
                           likelihood_keys + "}\nprior: {precision: 1, hyperprior: none}\nsampler: {name: " + sampler +
                           "}\noutput: {progress: false, checkpoint: false}\n";
  RunOptions ro;
  ro.quiet = true;
  ro.overwrite = true;
  ro.out_dir = dir + "/run_" + sampler;
  run_training(config_from(text, {}, {"train.threads=1"}, "blr.yaml"), ro);
  std::ifstream in(ro.out_dir + "/summary.json");
  return nlohmann::json::parse(in);
}

}  // namespace

// 60 training points of y = xᵀw* + 0.2 + N(0, 0.5²) in 4 inputs, test inputs twice as spread (so that the
// posterior's own spread is half the predictive variance there, not a rounding error beside the noise).
// sgmcmc's defaults (lr: auto and the rest) against the exact predictive, known τ and Gamma(1, 1) τ.
// Tolerances: the predictive's variance comes from ~900 thinned samples whose ESS for the slow directions is
// ~100–300 (the run's own diagnostics), so its epistemic part (≈ half the variance at these points) carries
// ~10 % Monte Carlo error, ±5 % on the variance, ±2.5 % on the interval width: asserted ±6 %; a chain at an
// effective temperature of 1.5 widens the intervals by 11 %. The NLL moves by about the variance's relative
// error over 2 (±0.03 nats asserted); 500 test points give the coverage a binomial sd of 0.013 (±0.04).
// The run is seeded, so the assertions are deterministic for a given build.
TEST(GoldStandard, BayesianLinearRegressionMatchesTheExactPosterior) {
  const std::string dir = temp_dir("gold_blr");
  auto gen = compat::make_generator(torch::kCPU, 21);
  const auto w = torch::tensor({1.0, -0.5, 0.3, 0.8}, torch::kFloat64);
  auto draw = [&](int64_t n, double spread, torch::Tensor& x, torch::Tensor& y) {
    x = spread * at::randn({n, 4}, gen, torch::kFloat64);
    y = x.matmul(w) + 0.2 + 0.5 * at::randn({n}, gen, torch::kFloat64);
  };
  torch::Tensor x, y, xv, yv, xt, yt;
  draw(60, 1.0, x, y);
  draw(100, 1.0, xv, yv);
  draw(500, 2.0, xt, yt);
  test_util::write_bytes(dir + "/blr.pt", test_util::tensor_dict_bytes(
                                              {{"x_train", x.to(torch::kFloat32)}, {"y_train", y.to(torch::kFloat32)},
                                               {"x_val", xv.to(torch::kFloat32)}, {"y_val", yv.to(torch::kFloat32)},
                                               {"x_test", xt.to(torch::kFloat32)}, {"y_test", yt.to(torch::kFloat32)}}));
  struct Case {
    std::string sampler, keys;
    std::optional<double> tau;
  };
  for (const Case& c : {Case{"sghmc", "noise_prior: fixed, noise_precision: 4", 4.0},
                        Case{"sgld", "noise_prior: fixed, noise_precision: 4", 4.0},
                        Case{"sghmc", "noise_prior: gamma, noise_alpha: 1, noise_beta: 1", std::nullopt}}) {
    const Exact e = exact_blr(x, y, xt, yt, c.tau);
    const auto s = run_default(dir, c.sampler, c.keys);
    const std::string what = c.sampler + " " + c.keys + ": ";
    std::cerr << what << "nll " << s["test_nll"] << " / " << e.nll << ", width " << s["test_width90"] << " / " << e.width90
              << ", cover " << s["test_cover90"] << " / " << e.cover90 << ", rmse " << s["test_rmse"] << "\n";
    EXPECT_NEAR(s["test_width90"].get<double>() / e.width90, 1.0, 0.06)
        << what << "width " << s["test_width90"] << " exact " << e.width90;
    EXPECT_NEAR(s["test_nll"].get<double>(), e.nll, 0.03) << what << "exact " << e.nll;
    EXPECT_NEAR(s["test_cover90"].get<double>(), e.cover90, 0.04) << what << "exact " << e.cover90;
    EXPECT_LT(s["health"]["gradient_noise"]["max_effective_temperature"].get<double>(), 1.2) << what;
  }
  remove_tree(dir);
}

// --- gold standard: NUTS on small Bayesian neural nets ------------------------------------------

// The known-noise regressions of bench/nuts/ (data and NumPyro NUTS references committed with the command
// that made them, bench/nuts/reference.py): the same tanh MLP, N(0, 1) weights and Gamma(1, 1) τ, sampled by
// sgmcmc's defaults. The issue's bar, asserted: test coverage of the 90 % interval within 0.05 of NUTS's and
// test NLL within 0.15 nats. (The references' own Monte Carlo error, 4 chains × 1,000 draws, is under 0.01 in
// both.) SGLD on wave1 is left out: at the default budget its chain has not reached the posterior
// (docs/calibration.md: the 200 points with noise sd 0.1 make a narrow, ill-conditioned posterior whose
// stiff directions bound SGLD's step and whose soft ones it then crosses too slowly; at 10 times the
// steps it matches NUTS).
TEST(GoldStandard, SmallNeuralNetRegressionsMatchNuts) {
  const std::string dir = temp_dir("gold_nuts");
  for (const auto& [name, sampler] : std::vector<std::pair<std::string, std::string>>{
           {"wave1", "sghmc"}, {"sine3", "sghmc"}, {"sine3", "sgld"}, {"friedman5", "sghmc"}}) {
    std::ifstream in(std::string(SGMCMC_SOURCE_DIR) + "/bench/nuts/" + name + ".json");
    ASSERT_TRUE(in.good()) << name;
    const auto ref = nlohmann::json::parse(in);
    {
      const std::string text = "name: gold\nseed: 1\ndata: {format: tensors, path: " + std::string(SGMCMC_SOURCE_DIR) +
                               "/bench/nuts/data/" + name + ".pt, task: regression}\nmodel: {name: mlp, hidden: [" +
                               std::to_string(ref["hidden"].get<int>()) +
                               "], activation: tanh, likelihood: gaussian, noise_prior: gamma, noise_alpha: 1, "
                               "noise_beta: 1}\nprior: {precision: 1, hyperprior: none}\nsampler: {name: " +
                               sampler + "}\noutput: {progress: false, checkpoint: false}\n";
      RunOptions ro;
      ro.quiet = true;
      ro.overwrite = true;
      ro.out_dir = dir + "/" + name + "_" + sampler;
      run_training(config_from(text, {}, {"train.threads=1"}, name + ".yaml"), ro);
      std::ifstream sin(ro.out_dir + "/summary.json");
      const auto s = nlohmann::json::parse(sin);
      const std::string what = name + " " + sampler + ": ";
      EXPECT_NEAR(s["test_cover90"].get<double>(), ref["test"]["cover90"].get<double>(), 0.05) << what;
      EXPECT_NEAR(s["test_nll"].get<double>(), ref["test"]["nll"].get<double>(), 0.15) << what;
    }
  }
  remove_tree(dir);
}
