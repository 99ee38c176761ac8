#include "samplers/sgrld.h"

#include <cmath>
#include <stdexcept>

#include "samplers/validate.h"

namespace sgmcmc {

namespace rules {

void sgrld_update(torch::Tensor& theta, const torch::Tensor& grad, const torch::Tensor& noise, double lr,
                  double temperature, const std::string& metric, double scale) {
  if (metric == "identity") {
    theta.add_(grad, -lr).add_(noise, std::sqrt(2 * lr * temperature));
    return;
  }
  torch::Tensor g, gamma;
  if (metric == "expanded_mean") {
    g = theta.abs();
    gamma = theta.sign();
  } else if (metric == "quadratic") {
    g = 1 + scale * theta * theta;
    gamma = (2 * scale) * theta;
  } else {
    throw std::invalid_argument("sgrld.metric: expected expanded_mean, quadratic or identity, got '" + metric + "'");
  }
  // the drift and the noise both at the step's start (G and Γ at θ_t), as eq. 7 writes them
  const auto drift = (gamma * temperature - g * grad) * lr;
  const auto spread = (g * (2 * lr * temperature)).sqrt_() * noise;
  theta.add_(drift).add_(spread);
  if (metric == "expanded_mean") theta.abs_();
}

}  // namespace rules

void SgrldOptions::validate() const {
  check_positive("sgrld", "lr", lr_);
  check_nonnegative("sgrld", "temperature", temperature_);
  if (metric_ != "expanded_mean" && metric_ != "quadratic" && metric_ != "identity")
    throw std::invalid_argument("sgrld.metric: expected expanded_mean, quadratic or identity, got '" + metric_ + "'");
  check_positive("sgrld", "metric_scale", metric_scale_);
}

Sgrld::Sgrld(std::vector<ParamGroup> groups, at::Generator generator, SgrldOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()), options.temperature()),
      options_(std::move(options)) {
  if (options_.metric() != "expanded_mean") return;
  for (const auto& group : groups_)
    for (const auto& p : group.params)
      if (p.is_floating_point() && p.numel() > 0 && p.detach().min().item<double>() < 0)
        throw std::invalid_argument("sgrld.metric: expanded_mean needs non-negative parameters (a point of the "
                                    "simplex's expanded mean); use metric: quadratic or identity for unconstrained ones");
}

void Sgrld::step() {
  torch::NoGradGuard no_grad;
  kernels::FusedScalars s;
  s.temperature = temperature_;
  step_params(std::nullopt, s, {}, /*noise=*/true,
              [&](torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& noise, double lr, size_t) {
                rules::sgrld_update(p, g, noise, lr, temperature_, options_.metric(), options_.metric_scale());
              });
  ++step_count_;
}

}  // namespace sgmcmc
