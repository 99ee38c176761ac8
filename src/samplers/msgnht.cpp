#include "samplers/msgnht.h"

#include <stdexcept>

#include "kernels/update/update_rules.h"
#include "samplers/validate.h"

namespace sgmcmc {

void MsgnhtOptions::validate() const {
  check_positive("msgnht", "lr", lr_);
  check_nonnegative("msgnht", "diffusion", diffusion_);
  if (xi_init_ && !std::isfinite(*xi_init_))
    throw std::invalid_argument("msgnht.xi_init: must be finite, got " + fmt_value(*xi_init_));
  if (integrator_ != "euler" && integrator_ != "ssi")
    throw std::invalid_argument("msgnht.integrator: must be one of {euler, ssi}, got '" + integrator_ + "'");
  check_nonnegative("msgnht", "temperature", temperature_);
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
