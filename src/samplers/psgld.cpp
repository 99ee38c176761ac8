#include "samplers/psgld.h"

#include <cmath>

#include "kernels/update/update_rules.h"
#include "samplers/validate.h"

namespace sgmcmc {

void PsgldOptions::validate() const {
  check_positive("psgld", "lr", lr_);
  check_nonnegative("psgld", "temperature", temperature_);
  check_range("psgld", "alpha", alpha_, 0, 1, /*lo_open=*/true);
  check_positive("psgld", "eps", eps_);
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
