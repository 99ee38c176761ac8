// Every sampler on the correlated 2-D Gaussian of 000 Fig. 3: Σ = [[1, ρ], [ρ, 1]], ρ = 0.9,
// U(θ) = θᵀΣ⁻¹θ/2, with injected gradient noise ∇Ũ = Σ⁻¹θ + N(0, I) (noise from its own seeded
// generator). C = 1000 independent chains are one [C, 2] float64 parameter; chains start from exact
// draws of N(0, Σ), run B burn-in steps, then K steps whose samples are pooled.
//
// Tolerances (derived, not tuned):
//  * Monte Carlo part. The C chains are independent (except sgnht's global thermostat, which couples
//    them only through one scalar averaged over 2C coordinates), so the per-chain time averages of
//    θ_i and θ_iθ_j are i.i.d. across chains and their standard error is sd_over_chains/sqrt(C);
//    this accounts for every autocorrelation exactly (batch means with one batch per chain). We
//    allow 5 standard errors (two-sided p ≈ 6e-7 per statistic under a normal approximation, so a
//    fixed-seed test stays green under reasonable code changes that alter the random stream).
//  * Step-size / gradient-noise part. On a Gaussian target every scheme here is a LINEAR recursion
//    z' = M z + (noise) in z = (θ, velocity) once its adaptive coefficients (thermostat, RMS
//    preconditioner, β̂) are frozen, so its stationary covariance Σ_h is the solution of the discrete
//    Lyapunov equation Σ_h = M Σ_h Mᵀ + Q (computed below by doubling), including the injected
//    N(0, I) gradient noise. For fixed-coefficient schemes (sgld, sghmc none/constant) Σ_h is exact
//    and is the centre with no extra allowance. For adaptive schemes the coefficients are frozen:
//    pSGLD's G and fisher's β̂ at their measured averages; for thermostat schemes (sgnht, msgnht,
//    santa) the friction is set to the value a* at which the frozen system's kinetic energy equals
//    the one the thermostat enforces exactly (E[p²] = T, E[u²] = η/β), which reproduces the measured
//    covariances to ~0.003. The extra allowance is kAdaptiveAllowance·|Σ_h − Σ| (+ the Γ-drop term
//    for pSGLD), see the constants below.
//  * Means: every scheme is exactly unbiased for the mean (linear, zero-mean noise): centre 0, 5 se.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "compat.h"
#include "sampler_test_util.h"
#include "samplers/registry.h"

using namespace sgmcmc;
using namespace sgmcmc::test;
using torch::indexing::Slice;

namespace {

constexpr double kRho = 0.9;
constexpr int64_t kChains = 1000;
constexpr int64_t kBatches = 20;

torch::Tensor sigma() { return torch::tensor({{1.0, kRho}, {kRho, 1.0}}, torch::kFloat64); }
torch::Tensor precision() { return torch::inverse(sigma()); }

struct Stats {
  double mean[2], mean_se[2];
  double cov[3], cov_se[3];  // Σ11, Σ22, Σ12
};

// Runs `s` on the target; `every500` is called every 500 sampling steps (for coefficient averages).
Stats run(Sampler& s, torch::Tensor& theta, int64_t burnin, int64_t steps,
          const std::function<void()>& every500 = {}) {
  auto noise_gen = compat::make_generator(torch::kCPU, 12345);
  auto A = precision();
  auto s1 = torch::zeros({kChains, 2}, torch::kFloat64);
  auto s2 = torch::zeros({kChains, 3}, torch::kFloat64);
  // Pooled-over-chains sums per time batch (kBatches batches), for the time-batch-means se.
  auto b1 = torch::zeros({kBatches, 2}, torch::kFloat64);
  auto b2 = torch::zeros({kBatches, 3}, torch::kFloat64);
  const int64_t per_batch = steps / kBatches;
  for (int64_t t = 0; t < burnin + steps; ++t) {
    {
      torch::NoGradGuard ng;
      auto g = torch::matmul(theta.detach(), A) + at::randn({kChains, 2}, noise_gen, torch::kFloat64);
      theta.mutable_grad() = g;
    }
    s.step();
    if (t >= burnin) {
      torch::NoGradGuard ng;
      auto th = theta.detach();
      s1 += th;
      auto sq = th * th;
      auto cross = th.index({Slice(), 0}) * th.index({Slice(), 1});
      s2.index({Slice(), Slice(0, 2)}) += sq;
      s2.index({Slice(), 2}) += cross;
      const int64_t b = std::min<int64_t>((t - burnin) / per_batch, kBatches - 1);
      b1[b] += th.sum(0);
      b2.index({b, Slice(0, 2)}) += sq.sum(0);
      b2.index({b, 2}) += cross.sum();
      if (every500 && (t - burnin) % 500 == 0) every500();
    }
  }
  b1 /= static_cast<double>(per_batch * kChains);
  b2 /= static_cast<double>(per_batch * kChains);
  auto m1 = s1 / static_cast<double>(steps);
  auto m2 = s2 / static_cast<double>(steps);
  Stats st;
  const double rootc = std::sqrt(static_cast<double>(kChains));
  auto mean = m1.mean(0), sd1 = m1.std(0), e2 = m2.mean(0), sd2 = m2.std(0);
  // Time batch means (pooled over chains): catch fluctuations common to all chains (sgnht's global
  // thermostat). The larger of the two se estimates is used.
  const double rootb = std::sqrt(static_cast<double>(kBatches));
  auto bsd1 = b1.std(0) / rootb, bsd2 = b2.std(0) / rootb;
  for (int i = 0; i < 2; ++i) {
    st.mean[i] = mean[i].item<double>();
    st.mean_se[i] = std::max(sd1[i].item<double>() / rootc, bsd1[i].item<double>());
  }
  st.cov[0] = e2[0].item<double>() - st.mean[0] * st.mean[0];
  st.cov[1] = e2[1].item<double>() - st.mean[1] * st.mean[1];
  st.cov[2] = e2[2].item<double>() - st.mean[0] * st.mean[1];
  for (int i = 0; i < 3; ++i) st.cov_se[i] = std::max(sd2[i].item<double>() / rootc, bsd2[i].item<double>());
  return st;
}

// Σ_h = Σ_k M^k Q (M^k)ᵀ by doubling; returns the θ block (first two coordinates).
torch::Tensor lyapunov_full(const torch::Tensor& M, const torch::Tensor& Q) {
  auto S = Q.clone();
  auto P = M.clone();
  for (int i = 0; i < 40; ++i) {
    S = S + P.matmul(S).matmul(P.t());
    P = P.matmul(P);
  }
  return S;
}
torch::Tensor lyapunov(const torch::Tensor& M, const torch::Tensor& Q) {
  return lyapunov_full(M, Q).index({Slice(0, 2), Slice(0, 2)});
}

torch::Tensor diag2(double a, double b) { return torch::diag(torch::tensor({a, b}, torch::kFloat64)); }

// Momentum schemes in SGD form, with per-coordinate coefficients (frozen):
//   Euler: w' = (1−a)w − η_c (Aθ + n) + s ζ;                  θ' = θ + w'
//   SSI:   w' = d (d w − η_c (Aθ + n) + s ζ),  d = e^{−a/2};  θ' = θ + w'
// where η_c is the per-coordinate learning rate and s² the injected variance.
// (For ssi pass the decay d; a is unused.)
torch::Tensor momentum_cov_full(bool ssi, double a, double eta_c, double inject_var) {
  auto A = precision();
  auto I = torch::eye(2, torch::kFloat64);
  const double d = ssi ? std::exp(-a / 2) : 1.0;
  const double keep = ssi ? d * d : 1.0 - a;
  auto M = torch::zeros({4, 4}, torch::kFloat64);
  auto drift = A * (-d * eta_c);
  M.index_put_({Slice(0, 2), Slice(0, 2)}, I + drift);
  M.index_put_({Slice(0, 2), Slice(2, 4)}, I * keep);
  M.index_put_({Slice(2, 4), Slice(0, 2)}, drift);
  M.index_put_({Slice(2, 4), Slice(2, 4)}, I * keep);
  const double w = d * d * (eta_c * eta_c + inject_var);
  auto Q = torch::zeros({4, 4}, torch::kFloat64);
  for (int r : {0, 2})
    for (int c : {0, 2}) Q.index_put_({Slice(r, r + 2), Slice(c, c + 2)}, I * w);
  return lyapunov_full(M, Q);
}
torch::Tensor momentum_cov(bool ssi, double a, double eta_c, double inject_var) {
  return momentum_cov_full(ssi, a, eta_c, inject_var).index({Slice(0, 2), Slice(0, 2)});
}
// Thermostat schemes: the stationarity of the thermostat forces E[w²] = target EXACTLY (its mean
// increment is E[w²]/scale − T). We freeze the friction at the value a* for which the frozen linear
// system has that kinetic energy (bisection; E[w²] decreases in a), and return its θ covariance and
// a*. This centre depends on the friction only through the θ/velocity ratio, which is insensitive to
// friction fluctuations.
std::pair<torch::Tensor, double> kinetic_matched_cov(bool ssi, double eta_c, double inject_var, double target_w2) {
  double lo = 1e-4, hi = ssi ? 4.0 : 1.9;
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    auto S = momentum_cov_full(ssi, mid, eta_c, inject_var);
    const double w2 = 0.5 * (S[2][2].item<double>() + S[3][3].item<double>());
    (w2 > target_w2 ? lo : hi) = mid;
  }
  const double a = 0.5 * (lo + hi);
  return {momentum_cov(ssi, a, eta_c, inject_var), a};
}

// SGLD/pSGLD with frozen scalar preconditioner G: θ' = θ − ηG(Aθ + n) + sqrt(2ηG) ξ.
torch::Tensor langevin_cov(double eta_g) {
  auto A = precision();
  auto I = torch::eye(2, torch::kFloat64);
  auto M = torch::zeros({4, 4}, torch::kFloat64);
  M.index_put_({Slice(0, 2), Slice(0, 2)}, I - A * eta_g);
  auto Q = torch::zeros({4, 4}, torch::kFloat64);
  Q.index_put_({Slice(0, 2), Slice(0, 2)}, I * (eta_g * eta_g + 2 * eta_g));
  return lyapunov(M, Q);
}

// Checks mean and covariance; `centre` = Σ_h; `allow_bias` adds |Σ_h − Σ| to the tolerance.
// Adaptive schemes: the frozen-coefficient centre is allowed to be off by 25% of the bias it
// predicts (the fluctuation effect is second order; measured agreement is within 3% of the bias for
// sgnht/msgnht/fisher, 45% of 5 se for santa).
constexpr double kAdaptiveAllowance = 0.25;
// pSGLD drops Γ(θ) = ∇·G: G follows |∇Ũ| along the trajectory, so the chain is (1/G)-weighted
// towards the tails. The bias shrinks with the preconditioner memory 1/(1−α): measured +12% at
// α = 0.99 and +2% at α = 0.999 (used here); we allow 0.03 absolute for it.
constexpr double kGammaDropAllowance = 0.03;

void check(const std::string& what, const Stats& st, const torch::Tensor& centre, double allow_bias,
           double extra = 0.0) {
  auto truth = sigma();
  const double c[3] = {centre[0][0].item<double>(), centre[1][1].item<double>(), centre[0][1].item<double>()};
  const double tr[3] = {truth[0][0].item<double>(), truth[1][1].item<double>(), truth[0][1].item<double>()};
  const char* names[3] = {"S11", "S22", "S12"};
  for (int i = 0; i < 2; ++i)
    EXPECT_LE(std::fabs(st.mean[i]), 5 * st.mean_se[i]) << what << " mean[" << i << "] = " << st.mean[i];
  for (int i = 0; i < 3; ++i) {
    const double tol = 5 * st.cov_se[i] + allow_bias * std::fabs(c[i] - tr[i]) + extra;
    EXPECT_LE(std::fabs(st.cov[i] - c[i]), tol)
        << what << " " << names[i] << ": estimate " << st.cov[i] << ", centre " << c[i] << ", truth " << tr[i]
        << ", 5se " << 5 * st.cov_se[i];
    std::printf("[%s] %s est %.4f centre %.4f truth %.2f tol %.4f (5se %.4f)\n", what.c_str(), names[i],
                st.cov[i], c[i], tr[i], tol, 5 * st.cov_se[i]);
  }
}

torch::Tensor initial_theta() {
  auto gen = compat::make_generator(torch::kCPU, 777);
  auto L = torch::linalg_cholesky(sigma());
  return torch::matmul(at::randn({kChains, 2}, gen, torch::kFloat64), L.t()).requires_grad_();
}

constexpr int64_t kBurn = 3000;
constexpr int64_t kSteps = 20000;

}  // namespace

TEST(GaussianTarget, Sgld) {
  const double eta = 0.01;
  auto theta = initial_theta();
  auto s = make("sgld", {theta}, {{"lr", "0.01"}});
  auto st = run(*s, theta, kBurn, kSteps);
  check("sgld", st, langevin_cov(eta), 0.0);
}

// Negative control: SGLD with a 10x larger step must fail the tolerance that SGLD at η = 0.01 is
// held to around the TRUE covariance (5 se + |Σ_h(0.01) − Σ|).
TEST(GaussianTarget, SgldLargeStepFails) {
  auto theta = initial_theta();
  auto s = make("sgld", {theta}, {{"lr", "0.1"}});
  auto st = run(*s, theta, kBurn, 5000);
  auto bias = (langevin_cov(0.01) - sigma()).abs();
  const double tol11 = 5 * st.cov_se[0] + bias[0][0].item<double>();
  EXPECT_GT(std::fabs(st.cov[0] - 1.0), tol11) << "estimate " << st.cov[0];
  // And it agrees with its own predicted (biased) stationary covariance.
  check("sgld lr=0.1", st, langevin_cov(0.1), 0.0);
}

TEST(GaussianTarget, Psgld) {
  const double eta = 0.02;
  auto theta = initial_theta();
  auto s = make("psgld", {theta}, {{"lr", "0.02"}, {"alpha", "0.999"}});
  double gsum = 0;
  int n = 0;
  auto st = run(*s, theta, kBurn, kSteps, [&] {
    auto v = read_state(*s, "0.square_avg");
    gsum += (v.sqrt() + 1e-5).reciprocal().mean().item<double>();
    ++n;
  });
  check("psgld", st, langevin_cov(eta * gsum / n), kAdaptiveAllowance, kGammaDropAllowance);
}

TEST(GaussianTarget, SghmcEuler) {
  const double eta = 0.01, a = 0.1;
  auto theta = initial_theta();
  auto s = make("sghmc", {theta}, {{"lr", "0.01"}, {"alpha", "0.1"}});
  auto st = run(*s, theta, kBurn, kSteps);
  check("sghmc euler", st, momentum_cov(false, a, eta, 2 * eta * a), 0.0);
}

// Stochastic HMC (004): N_l = 5 merged-kick leapfrog steps, then r ← αr + sqrt(1 − α²)ξ. The step
// maps differ by phase, so the centre is the stationary covariance of the period-N_l linear system
// (Lyapunov on the cycle map, propagated through the phases), averaged over the phases at which θ is
// recorded. The N(0, I) gradient noise heats the chain (no β̂): the centre includes it exactly.
TEST(GaussianTarget, StochasticHmc) {
  const double eta = 0.1, C = 1.0;
  const int64_t nl = 5;
  const double alpha = std::exp(-eta * nl * C);
  auto A = precision();
  auto I = torch::eye(2, torch::kFloat64);
  // z = (θ, r). Inside: r' = r − η(Aθ + n), θ' = θ + ηr'. Boundary: r' = αr − c(Aθ + n) + sw.
  auto step_map = [&](bool boundary) {
    const double keep = boundary ? alpha : 1.0, c = boundary ? (alpha + 1) * eta / 2 : eta;
    auto M = torch::zeros({4, 4}, torch::kFloat64);
    M.index_put_({Slice(2, 4), Slice(0, 2)}, -A * c);
    M.index_put_({Slice(2, 4), Slice(2, 4)}, I * keep);
    M.index_put_({Slice(0, 2), Slice(0, 2)}, I - A * (eta * c));
    M.index_put_({Slice(0, 2), Slice(2, 4)}, I * (eta * keep));
    const double var = c * c + (boundary ? 1 - alpha * alpha : 0.0);  // of the r noise; θ's is η times it
    auto Q = torch::zeros({4, 4}, torch::kFloat64);
    Q.index_put_({Slice(0, 2), Slice(0, 2)}, I * (eta * eta * var));
    Q.index_put_({Slice(0, 2), Slice(2, 4)}, I * (eta * var));
    Q.index_put_({Slice(2, 4), Slice(0, 2)}, I * (eta * var));
    Q.index_put_({Slice(2, 4), Slice(2, 4)}, I * var);
    return std::make_pair(M, Q);
  };
  // The cycle map from just before a boundary step: M_cyc, Q_cyc; then Σ before the boundary.
  auto Mc = torch::eye(4, torch::kFloat64), Qc = torch::zeros({4, 4}, torch::kFloat64);
  for (int64_t k = 0; k < nl; ++k) {
    auto [M, Q] = step_map(k == 0);
    Mc = M.matmul(Mc);
    Qc = M.matmul(Qc).matmul(M.t()) + Q;
  }
  auto S = lyapunov_full(Mc, Qc);
  auto centre = torch::zeros({2, 2}, torch::kFloat64);
  for (int64_t k = 0; k < nl; ++k) {
    auto [M, Q] = step_map(k == 0);
    S = M.matmul(S).matmul(M.t()) + Q;  // after step k: the θ recorded then
    centre += S.index({Slice(0, 2), Slice(0, 2)}) / static_cast<double>(nl);
  }
  auto theta = initial_theta();
  auto s = make("stochastic-hmc", {theta}, {{"lr", "0.1"}, {"leapfrog_steps", "5"}, {"friction", "1"}});
  auto st = run(*s, theta, kBurn, kSteps);
  check("stochastic-hmc", st, centre, 0.0);
}

TEST(GaussianTarget, SghmcEulerConstantBetaHat) {
  // β̂ = η V/2 = 0.005 is the exact gradient-noise term (V = 1).
  const double eta = 0.01, a = 0.1, bh = 0.005;
  auto theta = initial_theta();
  auto s = make("sghmc", {theta}, {{"lr", "0.01"}, {"alpha", "0.1"}, {"noise_estimate", "constant"}, {"beta_hat", "0.005"}});
  auto st = run(*s, theta, kBurn, kSteps);
  check("sghmc euler constant", st, momentum_cov(false, a, eta, 2 * eta * (a - bh)), 0.0);
}

TEST(GaussianTarget, SghmcSsi) {
  const double eta = 0.01, a = 0.1;
  auto theta = initial_theta();
  auto s = make("sghmc", {theta}, {{"lr", "0.01"}, {"alpha", "0.1"}, {"integrator", "ssi"}});
  auto st = run(*s, theta, kBurn, kSteps);
  check("sghmc ssi", st, momentum_cov(true, a, eta, 2 * eta * std::sinh(a)), 0.0);
}

TEST(GaussianTarget, SghmcFisher) {
  const double eta = 0.01, a = 0.1;
  auto theta = initial_theta();
  auto s = make("sghmc", {theta}, {{"lr", "0.01"}, {"alpha", "0.1"}, {"noise_estimate", "fisher"}});
  double bsum = 0;
  int n = 0;
  auto st = run(*s, theta, kBurn, kSteps, [&] {
    bsum += s->diagnostics().at("beta_hat_mean");
    ++n;
  });
  const double bh = bsum / n;
  std::printf("[sghmc fisher] mean beta_hat %.5f (exact gradient-noise value %.5f)\n", bh, eta / 2);
  check("sghmc fisher", st, momentum_cov(false, a, eta, 2 * eta * (a - bh)), kAdaptiveAllowance);
}

// Thermostats: with ξ frozen, v = h p follows the SGD-form recursion with η = h², a = hξ and
// injected variance h²·2Dh.
void thermostat_case(const std::string& name, const std::string& integrator) {
  const double h = 0.1, D = 1.0;
  auto theta = initial_theta();
  auto s = make(name, {theta}, {{"lr", "0.1"}, {"integrator", integrator}});
  double xsum = 0;
  int n = 0;
  auto st = run(*s, theta, kBurn, kSteps, [&] {
    xsum += s->diagnostics().at("thermostat_mean");
    ++n;
  });
  const double xi = xsum / n;
  std::printf("[%s %s] mean thermostat %.4f\n", name.c_str(), integrator.c_str(), xi);
  auto [centre, a_star] = kinetic_matched_cov(integrator == "ssi", h * h, h * h * 2 * D * h, h * h);
  std::printf("[%s %s] kinetic-matched friction a* = %.4f (h*mean xi = %.4f)\n", name.c_str(), integrator.c_str(), a_star, h * xi);
  check(name + " " + integrator, st, centre, kAdaptiveAllowance);
}

TEST(GaussianTarget, SgnhtEuler) { thermostat_case("sgnht", "euler"); }
TEST(GaussianTarget, SgnhtSsi) { thermostat_case("sgnht", "ssi"); }
TEST(GaussianTarget, MsgnhtEuler) { thermostat_case("msgnht", "euler"); }
TEST(GaussianTarget, MsgnhtSsi) { thermostat_case("msgnht", "ssi"); }

// Santa in exploration with β = 1: with g and α frozen, w = g⊙u follows the SGD-form recursion with
// η_c = ηg², friction α, injected variance g²·2ηg. The Euler thermostat has a fixed point only where
// α(2−α) = 2g is solvable, i.e. g < 1/2, and its basin ends at α = 1 + sqrt(1 − 2g) (see santa.h),
// so the Euler case uses data_size 0.25 and eps (λ) 16, which keep g = 1/sqrt(λ + 4|f|) <= 1/4
// from the first step (stable α ≈ 0.2, basin up to ≈ 1.7), and η = 0.01: the thermostat moves by
// u² − η per step, and at η = 0.05 a few consecutive ~3.5σ draws of u (2000 elements × 23000 steps)
// leave the basin and the chain diverges. Santa-Euler mixes slowly here (overdamped step ηg²/α ≈
// 0.002), so its 5 se is ≈ 0.05, the loosest of all cases. The SSI fixed point sinh α = g exists
// for every g, and it runs with λ = 1, N = 1.
void santa_case(const std::string& integrator) {
  const bool ssi = integrator == "ssi";
  const double eta = ssi ? 0.02 : 0.01, lambda = ssi ? 1.0 : 16.0;
  auto theta = initial_theta();
  auto s = make("santa", {theta},
                {{"lr", ssi ? "0.02" : "0.01"}, {"anneal_gamma", "0"}, {"anneal_a", "1"}, {"burnin", "1000000"},
                 {"eps", ssi ? "1" : "16"}, {"data_size", ssi ? "1" : "0.25"}, {"integrator", integrator}});
  double gsum = 0, asum = 0;
  int n = 0;
  auto st = run(*s, theta, kBurn, kSteps, [&] {
    auto v = read_state(*s, "0.v");
    gsum += v.sqrt().add(lambda).rsqrt().mean().item<double>();
    asum += read_state(*s, "0.alpha").mean().item<double>();
    ++n;
  });
  const double g = gsum / n, a = asum / n;
  std::printf("[santa %s] mean g %.4f mean alpha %.4f\n", integrator.c_str(), g, a);
  auto [centre, a_star] = kinetic_matched_cov(ssi, eta * g * g, 2 * eta * g * g * g, eta * g * g);
  std::printf("[santa %s] kinetic-matched friction a* = %.4f (mean alpha %.4f)\n", integrator.c_str(), a_star, a);
  check("santa " + integrator, st, centre, kAdaptiveAllowance);
}

TEST(GaussianTarget, SantaEuler) { santa_case("euler"); }
TEST(GaussianTarget, SantaSsi) { santa_case("ssi"); }

// Negative control (000 §3.1): naive SGHMC without friction; the gradient noise heats the chain
// without bound, so after K steps the spread is far too large. Without resampling the energy grows
// linearly (η²·t per coordinate in v); with the 5 se + |Σ_h(sghmc) − Σ| tolerance of SghmcEuler it
// must fail clearly.
TEST(GaussianTarget, NaiveSghmcCovarianceTooLarge) {
  auto theta = initial_theta();
  auto s = make("sghmc-naive", {theta}, {{"lr", "0.01"}, {"resample_every", "0"}});
  auto st = run(*s, theta, 0, 5000);
  std::printf("[sghmc-naive] S11 %.4f S22 %.4f S12 %.4f\n", st.cov[0], st.cov[1], st.cov[2]);
  auto ref = momentum_cov(false, 0.1, 0.01, 2 * 0.01 * 0.1);
  const double tol = 5 * st.cov_se[0] + std::fabs(ref[0][0].item<double>() - 1.0);
  EXPECT_GT(st.cov[0] - 1.0, tol);
}
