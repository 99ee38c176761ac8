#include "samplers/santa.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<SantaOptions>& santa_option_table() {
  using T = OptionTable<SantaOptions>;
  static const T table("santa", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "η, the step"),
      T::real("sigma", SGMCMC_FIELD(sigma), Range::interval(0, 1, true, false), "σ, decay of the RMS average v"),
      T::real("eps", SGMCMC_FIELD(eps), Range::positive(), "λ in the preconditioner 1/sqrt(λ + sqrt(v))"),
      T::real("data_size", SGMCMC_FIELD(data_size), Range::positive(), "N, dividing f⊙f in v"),
      T::real("friction", SGMCMC_FIELD(friction), Range::nonnegative(), "C: the thermostat starts at α₀ = sqrt(η)·C"),
      T::integer("burnin", SGMCMC_FIELD(burnin), Range::at_least(0),
          "exploration steps (annealed thermostat) before refinement"),
      T::real("anneal_a", SGMCMC_FIELD(anneal_a), Range::positive(), "a in β_t = a·(t+1)^γ / T"),
      T::real("anneal_gamma", SGMCMC_FIELD(anneal_gamma), Range::nonnegative(), "γ in β_t = a·(t+1)^γ / T"),
      T::flag("precond_term", SGMCMC_FIELD(precond_term),
          "keep the Itô term of ∇G (divides by u; numerically hazardous)"),
      T::choice("integrator", SGMCMC_FIELD(integrator), {"euler", "ssi"},
          "euler | ssi (symmetric splitting; stable for every g)"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::positive(), "T, dividing β_t"),
      T::real("noise_g2", SGMCMC_FIELD(noise_g2), Range::nonnegative(),
          "> 0: the authors' code's constant G₂ in the noise (0: the paper's g)"),
      T::choice("thermostat_init", SGMCMC_FIELD(thermostat_init), {"friction", "fixed_point"},
          "friction (α₀ = sqrt(η)·C) | fixed_point (α ← asinh(g) at step 1; ssi)"),
      T::real("grad_decay", SGMCMC_FIELD(grad_decay), Range::interval(0, 1, false, true),
          "EMA weight of the previous gradient (the authors' decay_grad; 0: off)"),
      T::real("explore_eps", SGMCMC_FIELD(explore_eps), Range::nonnegative(),
          "> 0: λ during exploration (0: eps throughout)"),
  });
  return table;
}

void SantaOptions::validate() const {
  santa_option_table().check(*this);
  if (thermostat_init_ == "fixed_point" && integrator_ != "ssi")
    throw std::invalid_argument("santa.thermostat_init: fixed_point needs integrator: ssi (Euler's fixed point exists only for g < 1/2)");
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
