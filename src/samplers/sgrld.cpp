#include "samplers/sgrld.h"

#include <cmath>
#include <stdexcept>

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

const OptionTable<SgrldOptions>& sgrld_option_table() {
  using T = OptionTable<SgrldOptions>;
  static const T table("sgrld", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "h, the step on ∇Ũ"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the injected noise's variance (1: the posterior; 0: no noise)"),
      T::choice("metric", SGMCMC_FIELD(metric), {"expanded_mean", "quadratic", "identity"},
          "the diagonal G: expanded_mean (|θ|, θ >= 0) | quadratic (1 + cθ²) | identity (SGLD)"),
      T::real("metric_scale", SGMCMC_FIELD(metric_scale), Range::positive(), "c of the quadratic metric"),
  });
  return table;
}

void SgrldOptions::validate() const { sgrld_option_table().check(*this); }

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
