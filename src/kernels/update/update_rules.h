// Each sampler's update as a plain function over tensors: no state of its own, no loops over
// parameters, no bookkeeping. The sampler classes call these; tests call them with fixed noise
// for golden values; fused kernels (CUDA) are tested against them.
//
// Conventions: `theta`, and the state tensors passed by non-const reference, are updated in place.
// `noise` is a standard normal tensor shaped like `theta`. `grad` is ∇Ũ.
#pragma once

#include <torch/torch.h>

namespace sgmcmc::rules {

// SGLD (Welling & Teh 2011), in the step-size form of Chen's tutorial (001, Alg. 1):
//   θ ← θ − η ∇Ũ(θ) + sqrt(2 η T) ξ,   ξ ~ N(0, I).
// (Welling & Teh's ε corresponds to η = ε/2.)
void sgld_update(torch::Tensor& theta, const torch::Tensor& grad, const torch::Tensor& noise,
                 double lr, double temperature);

}  // namespace sgmcmc::rules

namespace sgmcmc::rules {

// ---------------------------------------------------------------------------------------------
// pSGLD (Li, Chen, Carlson & Carin, AAAI 2016; 001 "SGRLD / pSGLD"), RMSprop preconditioner:
//   V ← αV + (1−α) g⊙g;  G = 1 ⊘ (eps + sqrt(V));
//   θ ← θ − η G⊙g + sqrt(2 η T G) ⊙ ξ        (the Γ(θ) = ∇·G correction term is dropped).
// `first` = true initialises V ← g⊙g instead of the EMA (so G is not 1/eps on step one).
void psgld_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad,
                  const torch::Tensor& noise, double lr, double temperature, double alpha,
                  double eps, bool first);

// ---------------------------------------------------------------------------------------------
// SGHMC in SGD-with-momentum form (000, §3.3 / App. G), Euler:
//   v ← v − η∇Ũ − αv + N(0, 2η(αT − β̂)),  θ ← θ + v.
// `beta_hat` is either undefined (β̂ = 0), or a tensor shaped like θ (elementwise β̂); the noise
// variance is clamped at 0 elementwise.
void sghmc_euler_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad,
                        const torch::Tensor& noise, double lr, double alpha, double temperature,
                        const torch::Tensor& beta_hat);
// SGHMC with the symmetric splitting integrator ABOBA (001, "SGHMC using symmetric splitting
// integrators"), SGD form, parameters stored at the half-step position θ^(1):
//   v ← e^{−α/2} v;  v ← v − η∇Ũ + N(0, 2η(T sinh α − β̂));  v ← e^{−α/2} v;  θ ← θ + v.
void sghmc_ssi_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad,
                      const torch::Tensor& noise, double lr, double alpha, double temperature,
                      const torch::Tensor& beta_hat);
// Running elementwise variance of the stochastic gradient (empirical Fisher diagonal):
//   d ← g − m;  m ← m + (1−ρ) d;  s ← ρ s + (1−ρ) ρ d⊙d   (EMA mean / variance, decay ρ).
// `first` initialises m ← g, s ← 0.
void ema_variance_update(torch::Tensor& mean, torch::Tensor& var, const torch::Tensor& grad,
                         double decay, bool first);

// Naive SGHMC (000 §3.1, no friction, no injected noise): v ← v − η∇Ũ;  θ ← θ + v.
void sghmc_naive_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad,
                        double lr);

// Stochastic HMC (004; samplers/stochastic_hmc.h), one gradient g, step η, unit mass:
//   boundary:  r ← r − (η/2)g;  r ← α r + sqrt((1 − α²)T)·noise;  r ← r − (η/2)g;  θ ← θ + ηr
//   otherwise: r ← r − ηg;  θ ← θ + ηr           (`noise` is not read)
void stochastic_hmc_update(torch::Tensor& theta, torch::Tensor& r, const torch::Tensor& grad,
                           const torch::Tensor& noise, double lr, double alpha, double temperature, bool boundary);

// ---------------------------------------------------------------------------------------------
// SGNHT (Ding et al. 2014; 001 Alg. 3), momentum and position part for one parameter tensor, with
// the global scalar thermostat ξ passed as a double (the ξ update needs pᵀp over all tensors):
//   Euler:  p ← p − h∇Ũ − hξ p + sqrt(2AhT) ζ;   θ ← θ + p h.
//   SSI:    p ← e^{−ξh/2} p;  p ← p − h∇Ũ + sqrt(2AhT) ζ;  p ← e^{−ξh/2} p;  θ ← θ + p h.
// The caller then does ξ ← ξ + (pᵀp/d − T) h with the new p.
void sgnht_euler_update(torch::Tensor& theta, torch::Tensor& p, const torch::Tensor& grad,
                        const torch::Tensor& noise, double h, double xi, double diffusion,
                        double temperature);
void sgnht_ssi_update(torch::Tensor& theta, torch::Tensor& p, const torch::Tensor& grad,
                      const torch::Tensor& noise, double h, double xi, double diffusion,
                      double temperature);

// mSGNHT (Li, Chen, Fan & Carin, AAAI 2016, 002), elementwise thermostat ξ:
//   Euler (002 §2.2): p ← p − h∇Ũ − h ξ⊙p + sqrt(2DhT) ζ;  ξ ← ξ + (p⊙p − T) h;  θ ← θ + p h.
//   SSI (002 §3, merged ABOBA): p ← e^{−ξh/2}⊙p;  p ← p − h∇Ũ + sqrt(2DhT) ζ;  p ← e^{−ξh/2}⊙p;
//                               θ ← θ + p h;  ξ ← ξ + (p⊙p − T) h.
void msgnht_euler_update(torch::Tensor& theta, torch::Tensor& p, torch::Tensor& xi,
                         const torch::Tensor& grad, const torch::Tensor& noise, double h,
                         double diffusion, double temperature);
void msgnht_ssi_update(torch::Tensor& theta, torch::Tensor& p, torch::Tensor& xi,
                       const torch::Tensor& grad, const torch::Tensor& noise, double h,
                       double diffusion, double temperature);

// ---------------------------------------------------------------------------------------------
// Santa (Chen, Ding, Li, Gan & Carin, AISTATS 2016), elementwise; f = ∇Ũ, β = inverse temperature.
// Preconditioner (both integrators):  v ← σv + (1−σ)/N² f⊙f  (v ← f⊙f/N² when `first`);
//                                     g ← 1 ⊘ sqrt(λ + sqrt(v)).
// Euler (Alg. 1), exploration:  α ← α + (u⊙u − η/β);
//                               u ← [η/β (1 − g_prev⊘g) ⊘ u] + sqrt(2η g_prev/β) ⊙ ζ + (1−α)⊙u − η g⊙f
//               refinement:     u ← (1−α)⊙u − η g⊙f;
//               then θ ← θ + g⊙u, g_prev ← g.
// SSI (Alg. 2, merged half steps, θ stored at the half-step position where f is evaluated):
//   u ← e^{−α/2}⊙u;  u ← u − η g⊙f [+ sqrt(2η g_prev/β)⊙ζ + precond term];  u ← e^{−α/2}⊙u;
//   θ ← θ + g⊙u;  α ← α + (u⊙u − η/β) (exploration only);  g_prev ← g.
// `noise` is ignored in refinement. The bracketed preconditioner term is used only with
// `precond_term`, its denominator u replaced by sign(u)·max(|u|, 1e-3·sqrt(η/β)).
struct SantaScalars {
  double lr = 0;            // η
  double sigma = 0.999;     // σ
  double eps = 1e-8;        // λ
  double data_size = 1;     // N
  double beta = 1;          // β_t
  double noise_g2 = 0;      // > 0: noise sqrt(2η G₂/β)⊙ζ with this constant G₂ instead of g_prev
  bool exploring = true;
  bool precond_term = false;
  bool first = false;
  bool alpha_fixed_point = false;  // SSI, first step: α ← asinh(g), the thermostat's fixed point sinh α = g
};
void santa_euler_update(torch::Tensor& theta, torch::Tensor& u, torch::Tensor& alpha,
                        torch::Tensor& v, torch::Tensor& g_prev, const torch::Tensor& grad,
                        const torch::Tensor& noise, const SantaScalars& s);
void santa_ssi_update(torch::Tensor& theta, torch::Tensor& u, torch::Tensor& alpha,
                      torch::Tensor& v, torch::Tensor& g_prev, const torch::Tensor& grad,
                      const torch::Tensor& noise, const SantaScalars& s);

// ---------------------------------------------------------------------------------------------
// Optimizer baselines (no noise), PyTorch conventions.
//   sgd:       θ ← θ − η g
//   momentum:  b ← μ b + g  (b ← g on the first step);  d = nesterov ? g + μ b : b;  θ ← θ − η d
//   rmsprop:   V ← αV + (1−α) g⊙g;  θ ← θ − η g ⊘ (sqrt(V) + eps)
//   adam:      m ← β1 m + (1−β1) g;  s ← β2 s + (1−β2) g⊙g;  t = step number (1-based);
//              θ ← θ − η (m/(1−β1^t)) ⊘ (sqrt(s/(1−β2^t)) + eps)
void sgd_update(torch::Tensor& theta, const torch::Tensor& grad, double lr);
void momentum_update(torch::Tensor& theta, torch::Tensor& buf, const torch::Tensor& grad,
                     double lr, double momentum, bool nesterov, bool first);
void rmsprop_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad, double lr,
                    double alpha, double eps);
void adam_update(torch::Tensor& theta, torch::Tensor& m, torch::Tensor& s,
                 const torch::Tensor& grad, double lr, double beta1, double beta2, double eps,
                 int64_t t);

}  // namespace sgmcmc::rules
