#include "samplers/psgld.h"

#include <cmath>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<PsgldOptions>& psgld_option_table() {
  using T = OptionTable<PsgldOptions>;
  static const T table("psgld", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "step size η on ∇Ũ"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the injected noise's variance (1: the posterior; 0: no noise)"),
      T::real("alpha", SGMCMC_FIELD(alpha), Range::interval(0, 1, true, false), "decay of the RMS average V of g⊙g"),
      T::real("eps", SGMCMC_FIELD(eps), Range::positive(), "added to sqrt(V) in the preconditioner 1/(eps + sqrt(V))"),
  });
  return table;
}

void PsgldOptions::validate() const {
  psgld_option_table().check(*this);
}

Psgld::Psgld(std::vector<ParamGroup> groups, at::Generator generator, PsgldOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options), square_avg_(make_state(0.0)) {}

void Psgld::step() {
  torch::NoGradGuard no_grad;
  const bool first = step_count_ == 0;
  kernels::FusedScalars s;
  s.temperature = temperature_;
  s.alpha = options_.alpha();
  s.eps = options_.eps();
  s.first = first;
  step_params(kernels::FusedRule::kPsgld, s, {&square_avg_}, /*noise=*/true,
              [&](torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& noise, double lr, size_t i) {
                rules::psgld_update(p, square_avg_.param[i], g, noise, lr, temperature_, options_.alpha(),
                                    options_.eps(), first);
              });
  ++step_count_;
}

double Psgld::noise_ratio(size_t group, const torch::Tensor& grad_variance) const {
  if (steps() == 0) return NAN;
  const auto g = (group_state(square_avg_, group).sqrt() + options_.eps()).reciprocal();
  return group_lr(group) * (g * grad_variance.to(g.options())).mean().item<double>() / (2.0 * temperature_);
}

std::map<std::string, double> Psgld::diagnostics() const {
  double sum = 0, n = 0;
  for (const auto& v : square_avg_.param) {
    sum += (v.sqrt() + options_.eps()).reciprocal().sum().item<double>();
    n += static_cast<double>(v.numel());
  }
  return {{"preconditioner_mean", n > 0 ? sum / n : 0.0}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Psgld::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < square_avg_.param.size(); ++i)
    out.emplace_back(std::to_string(i) + ".square_avg", &square_avg_.param[i]);
  return out;
}

}  // namespace sgmcmc
