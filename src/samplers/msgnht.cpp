#include "samplers/msgnht.h"

#include <stdexcept>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<MsgnhtOptions>& msgnht_option_table() {
  using T = OptionTable<MsgnhtOptions>;
  static const T table("msgnht", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "h, the step (drift h²·∇Ũ)"),
      T::real("diffusion", SGMCMC_FIELD(diffusion), Range::nonnegative(), "D, the injected noise's diffusion"),
      T::choice("integrator", SGMCMC_FIELD(integrator), {"euler", "ssi"}, "euler | ssi (symmetric splitting)"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the injected noise's variance (1: the posterior; 0: no noise)"),
      T::optional_real("xi_init", SGMCMC_FIELD(xi_init), Range::finite(), "diffusion",
          "the thermostats ξ's initial value"),
  });
  return table;
}

void MsgnhtOptions::validate() const {
  msgnht_option_table().check(*this);
}

Msgnht::Msgnht(std::vector<ParamGroup> groups, at::Generator generator, MsgnhtOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options),
      momentum_(make_state(0.0)),
      thermostat_(make_state(options_.xi_init().value_or(options_.diffusion()))) {}

void Msgnht::step() {
  torch::NoGradGuard no_grad;
  const bool ssi = options_.integrator() == "ssi";
  kernels::FusedScalars fs;
  fs.diffusion = options_.diffusion();
  fs.temperature = temperature_;
  step_params(ssi ? kernels::FusedRule::kMsgnhtSsi : kernels::FusedRule::kMsgnhtEuler, fs,
              {&momentum_, &thermostat_}, /*noise=*/true,
              [&](torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& noise, double lr, size_t i) {
                auto& mom = momentum_.param[i];
                auto& xi = thermostat_.param[i];
                if (ssi) {
                  rules::msgnht_ssi_update(p, mom, xi, g, noise, lr, options_.diffusion(), temperature_);
                } else {
                  rules::msgnht_euler_update(p, mom, xi, g, noise, lr, options_.diffusion(), temperature_);
                }
              });
  ++step_count_;
}

std::map<std::string, double> Msgnht::diagnostics() const {
  double sum = 0, n = 0;
  for (const auto& xi : thermostat_.param) {
    sum += xi.to(torch::kFloat64).sum().item<double>();
    n += static_cast<double>(xi.numel());
  }
  return {{"thermostat_mean", n > 0 ? sum / n : 0.0}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Msgnht::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < momentum_.param.size(); ++i) {
    out.emplace_back(std::to_string(i) + ".momentum", &momentum_.param[i]);
    out.emplace_back(std::to_string(i) + ".thermostat", &thermostat_.param[i]);
  }
  return out;
}

}  // namespace sgmcmc
