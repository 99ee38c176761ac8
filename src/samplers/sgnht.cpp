#include "samplers/sgnht.h"

#include <stdexcept>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<SgnhtOptions>& sgnht_option_table() {
  using T = OptionTable<SgnhtOptions>;
  static const T table("sgnht", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "h, the step (drift h²·∇Ũ)"),
      T::real("diffusion", SGMCMC_FIELD(diffusion), Range::nonnegative(), "A, the injected noise's diffusion"),
      T::choice("integrator", SGMCMC_FIELD(integrator), {"euler", "ssi"}, "euler | ssi (symmetric splitting)"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the injected noise's variance (1: the posterior; 0: no noise)"),
      T::optional_real("xi_init", SGMCMC_FIELD(xi_init), Range::finite(), "diffusion",
          "the thermostat ξ's initial value"),
  });
  return table;
}

void SgnhtOptions::validate() const {
  sgnht_option_table().check(*this);
}

Sgnht::Sgnht(std::vector<ParamGroup> groups, at::Generator generator, SgnhtOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options) {
  for (const auto& p : parameters()) {
    momentum_.push_back(torch::zeros_like(p));
    dim_ += static_cast<double>(p.numel());
  }
  xi_ = torch::tensor(options_.xi_init().value_or(options_.diffusion()), torch::kFloat64);
}

void Sgnht::step() {
  torch::NoGradGuard no_grad;
  const bool ssi = options_.integrator() == "ssi";
  const double xi = xi_.item<double>();
  double sum_p2 = 0;
  double h_xi = lr_;  // ξ moves with the base step size
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    auto noise = randn_like(p);
    if (ssi) {
      rules::sgnht_ssi_update(p, momentum_[i], g, noise, lr, xi, options_.diffusion(), temperature_);
    } else {
      rules::sgnht_euler_update(p, momentum_[i], g, noise, lr, xi, options_.diffusion(), temperature_);
    }
  });
  for (const auto& m : momentum_) sum_p2 += m.to(torch::kFloat64).pow(2).sum().item<double>();
  if (dim_ > 0) xi_ += (sum_p2 / dim_ - temperature_) * h_xi;
  ++step_count_;
}

std::map<std::string, double> Sgnht::diagnostics() const {
  return {{"thermostat_mean", xi_.item<double>()}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Sgnht::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < momentum_.size(); ++i)
    out.emplace_back(std::to_string(i) + ".momentum", &momentum_[i]);
  out.emplace_back("thermostat", &xi_);
  return out;
}

}  // namespace sgmcmc
