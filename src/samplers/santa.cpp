#include "samplers/santa.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update_rules.h"
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
}

Santa::Santa(std::vector<ParamGroup> groups, at::Generator generator, SantaOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options) {
  for (const auto& group : groups_) {
    const double eta = lr_ * group.lr_scale;
    for (const auto& p : group.params) {
      State s;
      s.u = randn_like(p).mul_(std::sqrt(eta));
      s.alpha = torch::full_like(p, std::sqrt(eta) * options_.friction());
      s.v = torch::zeros_like(p);
      s.g_prev = torch::zeros_like(p);
      state_.push_back(std::move(s));
    }
  }
}

double Santa::inverse_temperature(int64_t t) const {
  return options_.anneal_a() * std::pow(static_cast<double>(t + 1), options_.anneal_gamma()) /
         temperature_;
}

void Santa::step() {
  if (!(temperature_ > 0)) throw std::invalid_argument("santa.temperature: must be > 0");
  torch::NoGradGuard no_grad;
  rules::SantaScalars s;
  s.sigma = options_.sigma();
  s.eps = options_.eps();
  s.data_size = options_.data_size();
  s.beta = inverse_temperature(step_count_);
  s.exploring = step_count_ < options_.burnin();
  s.precond_term = options_.precond_term();
  s.first = step_count_ == 0;
  const bool ssi = options_.integrator() == "ssi";
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    s.lr = lr;
    auto& st = state_[i];
    torch::Tensor noise = s.exploring ? randn_like(p) : torch::zeros_like(p);
    if (ssi) {
      rules::santa_ssi_update(p, st.u, st.alpha, st.v, st.g_prev, g, noise, s);
    } else {
      rules::santa_euler_update(p, st.u, st.alpha, st.v, st.g_prev, g, noise, s);
    }
  });
  ++step_count_;
}

std::map<std::string, double> Santa::diagnostics() const {
  double sum = 0, n = 0;
  for (const auto& s : state_) {
    sum += s.alpha.to(torch::kFloat64).sum().item<double>();
    n += static_cast<double>(s.alpha.numel());
  }
  const int64_t last = step_count_ > 0 ? step_count_ - 1 : 0;
  return {{"inverse_temperature", inverse_temperature(last)},
          {"exploring", last < options_.burnin() ? 1.0 : 0.0},
          {"thermostat_mean", n > 0 ? sum / n : 0.0}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Santa::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < state_.size(); ++i) {
    const std::string k = std::to_string(i);
    out.emplace_back(k + ".u", &state_[i].u);
    out.emplace_back(k + ".alpha", &state_[i].alpha);
    out.emplace_back(k + ".v", &state_[i].v);
    out.emplace_back(k + ".g_prev", &state_[i].g_prev);
  }
  return out;
}

}  // namespace sgmcmc
