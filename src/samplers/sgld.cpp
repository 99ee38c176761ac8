#include "samplers/sgld.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<SgldOptions>& sgld_option_table() {
  using T = OptionTable<SgldOptions>;
  static const T table("sgld", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "step size η on ∇Ũ"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the injected noise's variance (1: the posterior; 0: no noise)"),
  });
  return table;
}

void SgldOptions::validate() const {
  sgld_option_table().check(*this);
}

Sgld::Sgld(std::vector<ParamGroup> groups, at::Generator generator, SgldOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()) {}

void Sgld::step() {
  torch::NoGradGuard no_grad;
  kernels::FusedScalars s;
  s.temperature = temperature_;
  step_params(kernels::FusedRule::kSgld, s, {}, /*noise=*/true,
              [&](torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& noise, double lr, size_t) {
                rules::sgld_update(p, g, noise, lr, temperature_);
              });
  ++step_count_;
}

double Sgld::noise_ratio(size_t group, const torch::Tensor& grad_variance) const {
  return group_lr(group) * grad_variance.mean().item<double>() / (2.0 * temperature_);
}

}  // namespace sgmcmc
