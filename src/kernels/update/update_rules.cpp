#include "kernels/update/update_rules.h"

#include <algorithm>
#include <cmath>

namespace sgmcmc::rules {

void sgld_update(torch::Tensor& theta, const torch::Tensor& grad, const torch::Tensor& noise,
                 double lr, double temperature) {
  theta.add_(grad, -lr);
  if (temperature > 0) theta.add_(noise, std::sqrt(2.0 * lr * temperature));
}

}  // namespace sgmcmc::rules

namespace sgmcmc::rules {

void psgld_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad,
                  const torch::Tensor& noise, double lr, double temperature, double alpha,
                  double eps, bool first) {
  if (first) {
    v.copy_(grad * grad);
  } else {
    v.mul_(alpha).addcmul_(grad, grad, 1.0 - alpha);
  }
  auto G = (v.sqrt() + eps).reciprocal_();
  theta.addcmul_(G, grad, -lr);
  if (temperature > 0) theta.addcmul_(G.mul_(2.0 * lr * temperature).sqrt_(), noise);
}

namespace {
// Standard deviation of the injected velocity noise: sqrt(max(0, 2η(c·T − β̂))).
torch::Tensor sghmc_noise(const torch::Tensor& noise, double lr, double c, double temperature,
                          const torch::Tensor& beta_hat) {
  if (!beta_hat.defined()) return noise * std::sqrt(std::max(0.0, 2.0 * lr * c * temperature));
  auto var = (c * temperature - beta_hat).clamp_min_(0.0).mul_(2.0 * lr);
  return var.sqrt_().mul_(noise);
}
}  // namespace

void sghmc_euler_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad,
                        const torch::Tensor& noise, double lr, double alpha, double temperature,
                        const torch::Tensor& beta_hat) {
  v.mul_(1.0 - alpha).add_(grad, -lr);
  if (temperature > 0) v.add_(sghmc_noise(noise, lr, alpha, temperature, beta_hat));
  theta.add_(v);
}

void sghmc_ssi_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad,
                      const torch::Tensor& noise, double lr, double alpha, double temperature,
                      const torch::Tensor& beta_hat) {
  const double decay = std::exp(-alpha / 2);
  v.mul_(decay).add_(grad, -lr);
  if (temperature > 0) v.add_(sghmc_noise(noise, lr, std::sinh(alpha), temperature, beta_hat));
  v.mul_(decay);
  theta.add_(v);
}

void ema_variance_update(torch::Tensor& mean, torch::Tensor& var, const torch::Tensor& grad,
                         double decay, bool first) {
  if (first) {
    mean.copy_(grad);
    var.zero_();
    return;
  }
  auto d = grad - mean;
  mean.add_(d, 1.0 - decay);
  var.mul_(decay).addcmul_(d, d, (1.0 - decay) * decay);
}

void sghmc_naive_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad,
                        double lr) {
  v.add_(grad, -lr);
  theta.add_(v);
}

void stochastic_hmc_update(torch::Tensor& theta, torch::Tensor& r, const torch::Tensor& grad,
                           const torch::Tensor& noise, double lr, double alpha, double temperature, bool boundary) {
  if (boundary) {
    r.add_(grad, -0.5 * lr);
    r.mul_(alpha).add_(noise, std::sqrt(std::max(0.0, (1 - alpha * alpha) * temperature)));
    r.add_(grad, -0.5 * lr);
  } else {
    r.add_(grad, -lr);
  }
  theta.add_(r, lr);
}

void sgnht_euler_update(torch::Tensor& theta, torch::Tensor& p, const torch::Tensor& grad,
                        const torch::Tensor& noise, double h, double xi, double diffusion,
                        double temperature) {
  p.mul_(1.0 - h * xi).add_(grad, -h);
  if (temperature > 0) p.add_(noise, std::sqrt(2.0 * diffusion * h * temperature));
  theta.add_(p, h);
}

void sgnht_ssi_update(torch::Tensor& theta, torch::Tensor& p, const torch::Tensor& grad,
                      const torch::Tensor& noise, double h, double xi, double diffusion,
                      double temperature) {
  const double decay = std::exp(-xi * h / 2);
  p.mul_(decay).add_(grad, -h);
  if (temperature > 0) p.add_(noise, std::sqrt(2.0 * diffusion * h * temperature));
  p.mul_(decay);
  theta.add_(p, h);
}

void msgnht_euler_update(torch::Tensor& theta, torch::Tensor& p, torch::Tensor& xi,
                         const torch::Tensor& grad, const torch::Tensor& noise, double h,
                         double diffusion, double temperature) {
  p.addcmul_(xi, p, -h).add_(grad, -h);
  if (temperature > 0) p.add_(noise, std::sqrt(2.0 * diffusion * h * temperature));
  xi.addcmul_(p, p, h).add_(-temperature * h);
  theta.add_(p, h);
}

void msgnht_ssi_update(torch::Tensor& theta, torch::Tensor& p, torch::Tensor& xi,
                       const torch::Tensor& grad, const torch::Tensor& noise, double h,
                       double diffusion, double temperature) {
  auto decay = (xi * (-h / 2)).exp_();
  p.mul_(decay).add_(grad, -h);
  if (temperature > 0) p.add_(noise, std::sqrt(2.0 * diffusion * h * temperature));
  p.mul_(decay);
  theta.add_(p, h);
  xi.addcmul_(p, p, h).add_(-temperature * h);
}

namespace {
// v update and the new preconditioner g = 1 ⊘ sqrt(λ + sqrt(v)).
torch::Tensor santa_precond(torch::Tensor& v, const torch::Tensor& grad, const SantaScalars& s) {
  const double inv_n2 = 1.0 / (s.data_size * s.data_size);
  if (s.first) {
    v.copy_(grad * grad).mul_(inv_n2);
  } else {
    v.mul_(s.sigma).addcmul_(grad, grad, (1.0 - s.sigma) * inv_n2);
  }
  auto g = v.sqrt().add_(s.eps).rsqrt_();
  return g;
}
// Noise plus the optional η/β (1 − g_prev⊘g) ⊘ u term (uses u before this step's update).
torch::Tensor santa_drive(const torch::Tensor& u, const torch::Tensor& g, const torch::Tensor& g_prev,
                          const torch::Tensor& noise, const SantaScalars& s) {
  auto out = s.noise_g2 > 0 ? noise * std::sqrt(2.0 * s.lr * s.noise_g2 / s.beta)
                            : (g_prev * (2.0 * s.lr / s.beta)).sqrt_().mul_(noise);
  if (s.precond_term) {
    const double floor = 1e-3 * std::sqrt(s.lr / s.beta);
    auto sign = torch::where(u >= 0, torch::ones_like(u), -torch::ones_like(u));
    auto denom = sign * u.abs().clamp_min(floor);
    out.add_((1.0 - g_prev / g).div_(denom).mul_(s.lr / s.beta));
  }
  return out;
}
}  // namespace

void santa_euler_update(torch::Tensor& theta, torch::Tensor& u, torch::Tensor& alpha,
                        torch::Tensor& v, torch::Tensor& g_prev, const torch::Tensor& grad,
                        const torch::Tensor& noise, const SantaScalars& s) {
  auto g = santa_precond(v, grad, s);
  if (s.first) g_prev.copy_(g);
  if (s.first && s.alpha_fixed_point) alpha.copy_(torch::asinh(g));  // (the sampler allows it for SSI only)
  if (s.exploring) {
    alpha.addcmul_(u, u).add_(-s.lr / s.beta);
    auto drive = santa_drive(u, g, g_prev, noise, s);
    u.mul_(1.0 - alpha).addcmul_(g, grad, -s.lr).add_(drive);
  } else {
    u.mul_(1.0 - alpha).addcmul_(g, grad, -s.lr);
  }
  theta.addcmul_(g, u);
  g_prev.copy_(g);
}

void santa_ssi_update(torch::Tensor& theta, torch::Tensor& u, torch::Tensor& alpha,
                      torch::Tensor& v, torch::Tensor& g_prev, const torch::Tensor& grad,
                      const torch::Tensor& noise, const SantaScalars& s) {
  auto g = santa_precond(v, grad, s);
  if (s.first) g_prev.copy_(g);
  if (s.first && s.alpha_fixed_point) alpha.copy_(torch::asinh(g));
  auto decay = (alpha * -0.5).exp_();
  torch::Tensor drive;
  if (s.exploring) drive = santa_drive(u, g, g_prev, noise, s);
  u.mul_(decay).addcmul_(g, grad, -s.lr);
  if (s.exploring) u.add_(drive);
  u.mul_(decay);
  theta.addcmul_(g, u);
  if (s.exploring) alpha.addcmul_(u, u).add_(-s.lr / s.beta);
  g_prev.copy_(g);
}

void sgd_update(torch::Tensor& theta, const torch::Tensor& grad, double lr) {
  theta.add_(grad, -lr);
}

void momentum_update(torch::Tensor& theta, torch::Tensor& buf, const torch::Tensor& grad,
                     double lr, double momentum, bool nesterov, bool first) {
  if (first) {
    buf.copy_(grad);
  } else {
    buf.mul_(momentum).add_(grad);
  }
  if (nesterov) {
    theta.add_(grad + momentum * buf, -lr);
  } else {
    theta.add_(buf, -lr);
  }
}

void rmsprop_update(torch::Tensor& theta, torch::Tensor& v, const torch::Tensor& grad, double lr,
                    double alpha, double eps) {
  v.mul_(alpha).addcmul_(grad, grad, 1.0 - alpha);
  theta.addcdiv_(grad, v.sqrt().add_(eps), -lr);
}

void adam_update(torch::Tensor& theta, torch::Tensor& m, torch::Tensor& s,
                 const torch::Tensor& grad, double lr, double beta1, double beta2, double eps,
                 int64_t t) {
  m.mul_(beta1).add_(grad, 1.0 - beta1);
  s.mul_(beta2).addcmul_(grad, grad, 1.0 - beta2);
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(t));
  auto denom = (s / bc2).sqrt_().add_(eps);
  theta.addcdiv_(m, denom, -lr / bc1);
}

}  // namespace sgmcmc::rules
