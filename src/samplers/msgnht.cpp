#include "samplers/msgnht.h"

#include <stdexcept>

#include "kernels/update_rules.h"
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
      options_(options) {
  const double xi0 = options_.xi_init().value_or(options_.diffusion());
  for (const auto& p : parameters())
    state_.push_back({torch::zeros_like(p), torch::full_like(p, xi0)});
}

void Msgnht::step() {
  torch::NoGradGuard no_grad;
  const bool ssi = options_.integrator() == "ssi";
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    auto noise = randn_like(p);
    auto& s = state_[i];
    if (ssi) {
      rules::msgnht_ssi_update(p, s.momentum, s.thermostat, g, noise, lr, options_.diffusion(), temperature_);
    } else {
      rules::msgnht_euler_update(p, s.momentum, s.thermostat, g, noise, lr, options_.diffusion(), temperature_);
    }
  });
  ++step_count_;
}

std::map<std::string, double> Msgnht::diagnostics() const {
  double sum = 0, n = 0;
  for (const auto& s : state_) {
    sum += s.thermostat.to(torch::kFloat64).sum().item<double>();
    n += static_cast<double>(s.thermostat.numel());
  }
  return {{"thermostat_mean", n > 0 ? sum / n : 0.0}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Msgnht::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < state_.size(); ++i) {
    out.emplace_back(std::to_string(i) + ".momentum", &state_[i].momentum);
    out.emplace_back(std::to_string(i) + ".thermostat", &state_[i].thermostat);
  }
  return out;
}

}  // namespace sgmcmc
