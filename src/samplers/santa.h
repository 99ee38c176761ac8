// Santa: Stochastic AnNealing Thermostats with Adaptive momentum.
// C. Chen, D. Carlson, Z. Gan, C. Li and L. Carin, "Bridging the gap between stochastic gradient
// MCMC and stochastic optimization", AISTATS 2016; 001 "The Santa algorithm".
// All operations elementwise; f = ∇Ũ(θ); η = lr; N = data_size; λ = eps; σ = sigma;
// β_t = anneal_a · (t+1)^anneal_gamma / T (t = 0-based step; T = temperature, 1 by default).
// Initial state: u₀ = sqrt(η)·N(0, I) (from the sampler's generator), α₀ = sqrt(η)·C, v₀ = 0.
//
// Euler (Algorithm 1 of the paper; the 001 slide text garbles ⊘ as ⊙):
//   v ← σv + (1−σ)/N² f⊙f          (first step: v ← f⊙f/N², so g does not start at 1/sqrt(λ))
//   g ← 1 ⊘ sqrt(λ + sqrt(v))
//   exploration (t < burnin):
//     α ← α + (u⊙u − η/β_t)
//     u ← [η/β_t (1 − g_prev ⊘ g) ⊘ u] + sqrt(2η g_prev/β_t) ⊙ ζ + (1 − α)⊙u − η g⊙f
//   refinement (t >= burnin):  α unchanged;  u ← (1 − α)⊙u − η g⊙f
//   θ ← θ + g⊙u;  g_prev ← g   (on the first step g_prev = g).
// The bracketed term (from ∇G₁ in the Itô form) divides by u and is numerically hazardous; it is
// dropped unless precond_term = true, where u in the denominator is replaced by
// sign(u)·max(|u|, 1e-3·sqrt(η/β_t)).
//
// SSI (Algorithm 2 of the paper, symmetric splitting: θ half step, α half step, u e^{−α/2} decay,
// gradient + noise, u decay, α half step, θ half step). As for SGHMC/mSGNHT we store θ (and α) at
// the HALF-STEP position where f is evaluated and merge the trailing half steps of step t with the
// leading ones of step t+1 (u is constant across them, so the merge is exact for fixed g):
//   (v, g as above)
//   u ← e^{−α/2}⊙u;  u ← u − η g⊙f [+ sqrt(2η g_prev/β_t)⊙ζ + precond term];  u ← e^{−α/2}⊙u;
//   θ ← θ + g⊙u;  α ← α + (u⊙u − η/β_t)   (α update and noise in exploration only).
// Approximation: the merged θ step uses the current g for both halves (Alg. 2 uses g_t then g_{t+1});
// g is an EMA with σ close to 1 and changes by O(1−σ) per step.
//
// Why exploration samples exp(−βŨ): with g frozen, w = g⊙u follows SGHMC in SGD form with
// learning rate ηg², friction α and noise variance 2ηg³/β, which is correct iff α = g; the
// thermostat drives E[u⊙u] = η/β, i.e. E[w⊙w] = ηg²/β, whose fixed point is exactly α = g.
// STABILITY of the Euler scheme (found in testing): with ∇Ũ negligible, E[u²] = 2ηg/(β α(2−α)) in
// the frozen-α recursion, so the thermostat's fixed point E[u²] = η/β needs α(2−α) = 2g: the stable
// root α = 1 − sqrt(1 − 2g) exists only for g < 1/2 elementwise, and the basin ends at the unstable
// root 1 + sqrt(1 − 2g); beyond it |1 − α| > 1, u grows, α grows, and the chain diverges. So Euler
// exploration needs λ + sqrt(v) > 4 everywhere (large λ, or large gradients / small N) and a small
// η (α moves by u⊙u − η/β per step). The SSI scheme has the fixed point sinh α = g for every g and
// e^{−α/2} ≤ 1 for every α ≥ 0: prefer integrator = ssi.
// THE AUTHORS' CODE departs from Algorithms 1–2 in the noise (github.com/cchangyou/Santa,
// FNN_CNN/algorithms/Santa.m): it adds sqrt(2 η^{3/2} · 100 / β_t)·ζ, "G2 set to be constant (100)",
// i.e. G₂ = 100·sqrt(η) in place of g_{t−1}. noise_g2 > 0 selects that form: noise sqrt(2η G₂/β_t)⊙ζ
// with the constant G₂ = noise_g2. It is 10⁴–10⁵ times less noise variance than the paper's form at the
// code's η = 4e-11. With g frozen each element runs at T_eff = G/(α β_t) (G = g_{t−1} or G₂), and α
// moves by O(η) per step, so it stays near α₀ = sqrt(η)·C: with the paper's noise T_eff = g/(α₀β_t)
// ≈ 10⁴/β_t for small-gradient weights (g up to 1/sqrt(λ)), which blows up a ReLU net's weights; the
// code's G₂/α₀ = 100/C gives T_eff = 0.1/β_t at C = 1000, a cold annealed exploration (docs/santa.md).
// The code's other departures, each an option (0 = off, the paper's algorithm):
//   grad_decay = d > 0: f ← d·f_{t−1} + (1−d)·f, an EMA of ∇Ũ (prior term included) that replaces f
//     everywhere above, in v as well (the code's decay_grad, 0.4 in test_FNN_400.m); f_{−1} = f₀.
//   explore_eps > 0: λ = explore_eps during exploration, eps in refinement (the code: 1e-4, then 1e-5).
// and a step size halved every 20 epochs (schedule: step does that). With grad_decay > 0 the EMA runs
// as ATen ops before the fused update, so step() is not one fused kernel (has_fused_step() false).
// thermostat_init = fixed_point (SSI only): on the first step α ← asinh(g₁) elementwise, the SSI
// thermostat's fixed point, so that exploration runs at T_eff = 1/β_t from the start instead of
// g/(α₀β_t) (docs/santa.md: with the paper's noise and α₀ = sqrt(η)·C, T_eff ≈ 10⁴/β on deep nets).
// diagnostics(): "inverse_temperature" (β of the last step), "exploring" (1/0), "thermostat_mean"
// (mean of α).
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SantaOptions {
  SantaOptions() = default;
  explicit SantaOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-4;                  // η
  TORCH_ARG(double, sigma) = 0.999;              // RMS decay, in (0, 1]
  TORCH_ARG(double, eps) = 1e-8;                 // λ > 0
  TORCH_ARG(double, data_size) = 1.0;            // N > 0
  TORCH_ARG(double, friction) = 1.0;             // C >= 0, α₀ = sqrt(η)·C
  TORCH_ARG(int64_t, burnin) = 10000;            // exploration steps >= 0
  TORCH_ARG(double, anneal_a) = 1.0;             // > 0
  TORCH_ARG(double, anneal_gamma) = 0.5;         // >= 0
  TORCH_ARG(bool, precond_term) = false;
  TORCH_ARG(std::string, integrator) = "euler";  // euler | ssi
  TORCH_ARG(double, temperature) = 1.0;          // > 0, divides β_t
  TORCH_ARG(double, noise_g2) = 0.0;             // >= 0; > 0: constant G₂ in the noise (authors' code)
  TORCH_ARG(std::string, thermostat_init) = "friction";  // friction (α₀ = sqrt(η)·C) | fixed_point (ssi)
  TORCH_ARG(double, grad_decay) = 0.0;           // in [0, 1): EMA weight of the previous gradient
  TORCH_ARG(double, explore_eps) = 0.0;          // >= 0; > 0: λ during exploration
};

// The `sampler: {name: santa}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SantaOptions>& santa_option_table();

class Santa : public Sampler {
 public:
  Santa(std::vector<ParamGroup> groups, at::Generator generator, SantaOptions options);
  std::string name() const override { return "santa"; }
  bool runs_at_zero_temperature() const override { return false; }  // β_t = a·t^γ / T
  bool has_fused_step() const override { return options_.grad_decay() == 0; }
  void step() override;
  std::map<std::string, double> diagnostics() const override;
  // β_t at the 0-based step t.
  double inverse_temperature(int64_t t) const;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  // f ← d·f_{t−1} + (1−d)·f in place on every gradient, f_{t−1} kept in grad_ema_.
  void smooth_gradients();

  SantaOptions options_;
  StateBuffer u_, alpha_, v_, g_prev_, grad_ema_;
};

}  // namespace sgmcmc
