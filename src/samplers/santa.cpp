#include "samplers/santa.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"
#include "samplers/validate.h"

namespace sgmcmc {

void SantaOptions::validate() const {
  check_positive("santa", "lr", lr_);
  check_range("santa", "sigma", sigma_, 0, 1, /*lo_open=*/true);
  check_positive("santa", "eps", eps_);
  check_positive("santa", "data_size", data_size_);
  check_nonnegative("santa", "friction", friction_);
  if (burnin_ < 0) throw std::invalid_argument("santa.burnin: must be >= 0, got " + std::to_string(burnin_));
  check_positive("santa", "anneal_a", anneal_a_);
  check_nonnegative("santa", "anneal_gamma", anneal_gamma_);
  if (integrator_ != "euler" && integrator_ != "ssi")
    throw std::invalid_argument("santa.integrator: must be one of {euler, ssi}, got '" + integrator_ + "'");
  check_positive("santa", "temperature", temperature_);
  check_nonnegative("santa", "noise_g2", noise_g2_);
  if (thermostat_init_ != "friction" && thermostat_init_ != "fixed_point")
    throw std::invalid_argument("santa.thermostat_init: must be one of {friction, fixed_point}, got '" + thermostat_init_ + "'");
  if (thermostat_init_ == "fixed_point" && integrator_ != "ssi")
    throw std::invalid_argument("santa.thermostat_init: fixed_point needs integrator: ssi (Euler's fixed point exists only for g < 1/2)");
  check_range("santa", "grad_decay", grad_decay_, 0, 1, /*lo_open=*/false, /*hi_open=*/true);
  check_nonnegative("santa", "explore_eps", explore_eps_);
}

Santa::Santa(std::vector<ParamGroup> groups, at::Generator generator, SantaOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options),
      u_(make_state(0.0)),
      alpha_(make_state(0.0)),
      v_(make_state(0.0)),
      g_prev_(make_state(0.0)),
      grad_ema_(options_.grad_decay() > 0 ? make_state(0.0) : StateBuffer{}) {
  torch::NoGradGuard no_grad;
  size_t i = 0;
  for (const auto& group : groups_) {
    const double eta = lr_ * group.lr_scale;
    for (const auto& p : group.params) {
      u_.param[i].copy_(randn_like(p).mul_(std::sqrt(eta)));
      alpha_.param[i].fill_(std::sqrt(eta) * options_.friction());
      ++i;
    }
  }
}

double Santa::inverse_temperature(int64_t t) const {
  return options_.anneal_a() * std::pow(static_cast<double>(t + 1), options_.anneal_gamma()) /
         temperature_;
}

void Santa::smooth_gradients() {
  const double d = options_.grad_decay();
  auto smooth = [&](const torch::Tensor& g, torch::Tensor& ema) {
    if (step_count_ > 0) g.mul_(1 - d).add_(ema, d);  // in place on .grad
    ema.copy_(g);
  };
  size_t index = 0;
  for (size_t k = 0; k < groups_.size(); ++k) {
    if (FlatGroup* fg = flat_[k].get()) {  // one pass over the group's gradient buffer
      fg->rebind();
      smooth(fg->grad(), grad_ema_.group[k]);
      index += groups_[k].params.size();
      continue;
    }
    for (auto& p : groups_[k].params) {
      if (p.grad().defined()) smooth(p.grad(), grad_ema_.param[index]);
      ++index;
    }
  }
}

void Santa::step() {
  if (!(temperature_ > 0)) throw std::invalid_argument("santa.temperature: must be > 0");
  torch::NoGradGuard no_grad;
  if (options_.grad_decay() > 0) smooth_gradients();
  kernels::FusedScalars fs;
  fs.sigma = options_.sigma();
  fs.exploring = step_count_ < options_.burnin();
  fs.eps = fs.exploring && options_.explore_eps() > 0 ? options_.explore_eps() : options_.eps();
  fs.data_size = options_.data_size();
  fs.beta = inverse_temperature(step_count_);
  fs.precond_term = options_.precond_term();
  fs.first = step_count_ == 0;
  fs.temperature = temperature_;
  fs.noise_g2 = options_.noise_g2();
  fs.alpha_fixed_point = options_.thermostat_init() == "fixed_point";
  const bool ssi = options_.integrator() == "ssi";
  step_params(ssi ? kernels::FusedRule::kSantaSsi : kernels::FusedRule::kSantaEuler, fs,
              {&u_, &alpha_, &v_, &g_prev_}, /*noise=*/fs.exploring,
              [&](torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& noise, double lr, size_t i) {
                auto s = kernels::santa_scalars(fs);
                s.lr = lr;
                const torch::Tensor z = noise.defined() ? noise : torch::zeros_like(p);
                if (ssi) {
                  rules::santa_ssi_update(p, u_.param[i], alpha_.param[i], v_.param[i], g_prev_.param[i], g, z, s);
                } else {
                  rules::santa_euler_update(p, u_.param[i], alpha_.param[i], v_.param[i], g_prev_.param[i], g, z, s);
                }
              });
  ++step_count_;
}

std::map<std::string, double> Santa::diagnostics() const {
  double sum = 0, n = 0;
  for (const auto& a : alpha_.param) {
    sum += a.to(torch::kFloat64).sum().item<double>();
    n += static_cast<double>(a.numel());
  }
  const int64_t last = step_count_ > 0 ? step_count_ - 1 : 0;
  return {{"inverse_temperature", inverse_temperature(last)},
          {"exploring", last < options_.burnin() ? 1.0 : 0.0},
          {"thermostat_mean", n > 0 ? sum / n : 0.0}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Santa::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < u_.param.size(); ++i) {
    const std::string k = std::to_string(i);
    out.emplace_back(k + ".u", &u_.param[i]);
    out.emplace_back(k + ".alpha", &alpha_.param[i]);
    out.emplace_back(k + ".v", &v_.param[i]);
    out.emplace_back(k + ".g_prev", &g_prev_.param[i]);
    if (!grad_ema_.param.empty()) out.emplace_back(k + ".grad_ema", &grad_ema_.param[i]);
  }
  return out;
}

}  // namespace sgmcmc
