// Multivariate stochastic gradient Nosé–Hoover thermostat: one thermostat ξ_i per parameter element.
// C. Li, C. Chen, K. Fan and L. Carin, "High-order stochastic gradient thermostats for Bayesian
// learning of deep models", AAAI 2016 (002). h = lr, D = diffusion, T = temperature.
//
// Euler, mSGNHT-E (002 §2.2; parameters stored at θ_t, gradient at θ_t):
//   p ← p − h∇Ũ(θ) − h ξ⊙p + sqrt(2DhT) ζ;   ξ ← ξ + (p⊙p − T) h;   θ ← θ + p h.
// Symmetric splitting, mSGNHT-S (002 §3). 002 splits the SDE into
//   A: dθ = p dt, dξ = (p⊙p − T) dt;   B: dp = −ξ⊙p dt;   O: dp = −∇Ũ dt + sqrt(2DT) dW
// and applies A(h/2) B(h/2) O(h) B(h/2) A(h/2):
//   θ ← θ + p h/2;  ξ ← ξ + (p⊙p − T) h/2;  p ← e^{−ξh/2}⊙p;  p ← p − ∇Ũ(θ) h + sqrt(2DhT) ζ;
//   p ← e^{−ξh/2}⊙p;  ξ ← ξ + (p⊙p − T) h/2;  θ ← θ + p h/2.
// A leaves p unchanged, so the trailing A(h/2) of step t and the leading A(h/2) of step t+1 compose
// exactly into one A(h). We therefore store θ and ξ at the HALF-STEP position (θ_{t+1/2}, where the
// gradient is evaluated, and ξ_{t+1/2}) and one `step()` (one gradient) is
//   p ← e^{−ξh/2}⊙p;  p ← p − h∇Ũ + sqrt(2DhT) ζ;  p ← e^{−ξh/2}⊙p;  θ ← θ + p h;  ξ ← ξ + (p⊙p − T) h.
// With the initial p = 0 the very first A(h/2) is the identity, so θ₀, ξ₀ are valid half-step values.
// Initial state: p = 0, ξ = xi_init (default D). diagnostics(): "thermostat_mean" (mean of ξ).
#pragma once

#include <torch/arg.h>

#include <optional>

#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct MsgnhtOptions {
  MsgnhtOptions() = default;
  explicit MsgnhtOptions(double lr) : lr_(lr) {}
  void validate() const;
  TORCH_ARG(double, lr) = 1e-4;                  // h
  TORCH_ARG(double, diffusion) = 1.0;            // D >= 0
  TORCH_ARG(std::optional<double>, xi_init);     // default: D
  TORCH_ARG(std::string, integrator) = "euler";  // euler | ssi
  TORCH_ARG(double, temperature) = 1.0;
};

// The `sampler: {name: msgnht}` keys, with their ranges and meanings (defaults: the struct's).
const OptionTable<MsgnhtOptions>& msgnht_option_table();

class Msgnht : public Sampler {
 public:
  Msgnht(std::vector<ParamGroup> groups, at::Generator generator, MsgnhtOptions options);
  std::string name() const override { return "msgnht"; }
  bool has_fused_step() const override { return true; }
  void step() override;
  std::map<std::string, double> diagnostics() const override;

 protected:
  std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() override;

 private:
  MsgnhtOptions options_;
  StateBuffer momentum_;    // p
  StateBuffer thermostat_;  // ξ
};

}  // namespace sgmcmc
