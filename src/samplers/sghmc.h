// Stochastic gradient Hamiltonian Monte Carlo, SGD-with-momentum parametrisation.
// T. Chen, E. B. Fox and C. Guestrin, "Stochastic gradient Hamiltonian Monte Carlo", ICML 2014
// (000: Alg. 2, §3.3 and App. G). With step ε, mass M = I and friction C: v = εp, η = ε², α = εC,
// β̂ = ε M⁻¹ B̂ with B̂ = ½ ε V̂, i.e. β̂ = η V̂/2, V̂ the variance of the stochastic gradient.
//
// Euler (000 eq. 15 / App. G):
//   v ← v − η∇Ũ(θ) − αv + N(0, 2η(αT − β̂)),    θ ← θ + v.
// NOTE on T: 000 writes N(0, 2(α − β̂)η); with a temperature we inject 2η(αT − β̂), so that the
// injected noise plus the gradient noise (variance 2ηβ̂, which does not scale with T) totals
// 2αηT. At T = 1 this is exactly 000's form. The variance is clamped at 0 elementwise.
//
// SSI (001, "SGHMC using symmetric splitting integrators", ABOBA with A: dθ = p dt,
// B: dp = −Dp dt, O: dp = −∇Ũ dt + sqrt(2D) dw), in SGD form (D h ≙ α). One ABOBA step is
//   θ ← θ + v/2;  v ← e^{−α/2}v;  v ← v − η∇Ũ(θ) + N(0, σ²);  v ← e^{−α/2}v;  θ ← θ + v/2.
// We store the parameters at the HALF-STEP position (where the gradient is evaluated); the trailing
// A half-step of step t and the leading one of step t+1 then merge into one full A step, so one
// `step()` (one gradient) is
//   v ← e^{−α/2}v;  v ← v − η∇Ũ + N(0, σ²);  v ← e^{−α/2}v;  θ ← θ + v.
// The initial state (v = 0) makes the first half step a no-op, so θ₀ is a valid half-step point;
// samples are the half-step positions (at stationarity they differ from full-step positions by
// θ ± v/2, a second-order effect).
// Noise: with ∇Ũ = 0, the stationary variance s of v solves s = e^{−2α}s + e^{−α}σ², i.e.
// s = σ²/(2 sinh α). We use σ² = 2η(T sinh α − β̂), which gives s = ηT exactly (at β̂ = 0); the
// paper's form 2αηT equals it to O(α³) (sinh α = α + α³/6 + …).
//
// Noise estimate β̂ (key noise_estimate): none → 0; constant → beta_hat; fisher → η V̂/2 elementwise,
// where V̂ is a running (EMA, decay fisher_decay) variance of successive minibatch gradients — an
// empirical-Fisher diagonal. It is an approximation: successive gradients are taken at different θ,
// so V̂ also contains the variation of the true gradient along the trajectory (an overestimate
// of O(η) when the chain moves slowly), and it is noisy; the clamp at 0 keeps the noise real.
//
// Step-size parametrisation (the trainer's sampler.lr_scaling; this class always receives η):
//   total (000's, the default): lr = η, the step on ∇Ũ = (N/n)Σ_batch∇ℓ_i + ∇(−log p(θ)).
//   per_datum: lr = η·N. Then v ← (1−α)v − lr·(mean_batch ∇ℓ_i + ∇(−log p)/N) + N(0, 2α·lr·T/N):
//   the drift is SGD-momentum's with learning rate lr and momentum 1−α on the mean loss, the same
//   for every N, and the noise variance shrinks as 1/N. App. H.1's η = 2e-6 at N = 50,000 is lr = 0.1.
#pragma once

#include <torch/arg.h>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SghmcOptions {
  SghmcOptions() = default;
  explicit SghmcOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-4;                      // η
  TORCH_ARG(double, alpha) = 0.01;                   // momentum decay, in (0, 1]
  TORCH_ARG(std::string, noise_estimate) = "none";   // none | constant | fisher
  TORCH_ARG(double, beta_hat) = 0.0;                 // >= 0, used by "constant"
  TORCH_ARG(double, fisher_decay) = 0.99;            // in (0, 1)
  TORCH_ARG(std::string, integrator) = "euler";      // euler | ssi
  TORCH_ARG(double, temperature) = 1.0;
};

// The `sampler: {name: sghmc}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<SghmcOptions>& sghmc_option_table();

class Sghmc : public Sampler {
 public:
  Sghmc(std::vector<ParamGroup> groups, at::Generator generator, SghmcOptions options);
  std::string name() const override { return "sghmc"; }
  bool has_fused_step() const override { return options_.noise_estimate() != "fisher"; }
  void step() override;
  std::map<std::string, double> diagnostics() const override;
  bool checks_gradient_noise() const override { return true; }

 protected:
  // η_g·mean(V)/(2αT) (Euler; 2T·sinh α for SSI): the gradient adds η²V to v's variance, which
  // the friction can absorb only while it is below the injected 2ηαT (000: β̂ ≤ α).
  double noise_ratio(size_t group, const torch::Tensor& grad_variance) const override;
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  SghmcOptions options_;
  StateBuffer momentum_;                    // v
  std::vector<torch::Tensor> grad_mean_;    // EMA of ∇Ũ (fisher only)
  std::vector<torch::Tensor> grad_var_;     // EMA variance of ∇Ũ (fisher only)
  double last_beta_hat_mean_ = 0;
};

}  // namespace sgmcmc
