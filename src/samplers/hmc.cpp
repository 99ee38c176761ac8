#include "samplers/hmc.h"

#include <cmath>
#include <stdexcept>


namespace sgmcmc {

const OptionTable<HmcOptions>& hmc_option_table() {
  using T = OptionTable<HmcOptions>;
  static const T table("hmc", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "leapfrog step size ε (not ε²)"),
      T::integer("leapfrog_steps", SGMCMC_FIELD(leapfrog_steps), Range::at_least(1), "L leapfrog steps per proposal"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::positive(), "T: samples exp(-U/T) (1: the posterior)"),
  });
  return table;
}

void HmcOptions::validate() const {
  hmc_option_table().check(*this);
}

Hmc::Hmc(std::vector<ParamGroup> groups, at::Generator generator, HmcOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options),
      counts_(torch::zeros({2}, torch::kFloat64)) {}

void Hmc::step() {
  throw std::logic_error("hmc: step() needs a closure that recomputes U and its gradient; call step(closure)");
}

torch::Tensor Hmc::eval(const Closure& closure) {
  zero_grad();
  torch::Tensor u;
  {
    torch::AutoGradMode enable(true);
    u = closure();
  }
  return u.detach().to(torch::kFloat64);
}

torch::Tensor Hmc::step(const Closure& closure) {
  if (!(temperature_ > 0)) throw std::invalid_argument("hmc.temperature: must be > 0");
  auto params = parameters();
  std::vector<double> eps;
  for (const auto& g : groups_)
    for (size_t k = 0; k < g.params.size(); ++k) eps.push_back(lr_ * g.lr_scale);

  torch::Tensor u0 = eval(closure);
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> theta0, grad0, r;
  double kinetic0 = 0;
  for (auto& p : params) {
    theta0.push_back(p.detach().clone());
    grad0.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    auto ri = randn_like(p).mul_(std::sqrt(temperature_));
    kinetic0 += 0.5 * ri.to(torch::kFloat64).pow(2).sum().item<double>();
    r.push_back(ri);
  }
  auto kick = [&](double scale) {
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].grad().defined()) r[i].add_(params[i].grad(), -scale * eps[i]);
  };
  kick(0.5);
  torch::Tensor u1;
  const int64_t L = options_.leapfrog_steps();
  for (int64_t l = 0; l < L; ++l) {
    for (size_t i = 0; i < params.size(); ++i) params[i].add_(r[i], eps[i]);
    {
      torch::AutoGradMode enable(true);
      u1 = eval(closure);
    }
    kick(l + 1 == L ? 0.5 : 1.0);
  }
  double kinetic1 = 0;
  for (auto& ri : r) kinetic1 += 0.5 * ri.to(torch::kFloat64).pow(2).sum().item<double>();
  const double dH = (u1.item<double>() + kinetic1) - (u0.item<double>() + kinetic0);
  const double uniform = at::rand({1}, generator_, torch::kFloat64).item<double>();
  const bool accept = std::isfinite(dH) && std::log(uniform) < -dH / temperature_;
  if (!accept) {
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].copy_(theta0[i]);
      if (grad0[i].defined()) params[i].mutable_grad().copy_(grad0[i]);
    }
  }
  counts_[0] += accept ? 1.0 : 0.0;
  counts_[1] += 1.0;
  ++step_count_;
  return accept ? u1 : u0;
}

double Hmc::acceptance_rate() const {
  double n = counts_[1].item<double>();
  return n > 0 ? counts_[0].item<double>() / n : 0.0;
}

std::map<std::string, double> Hmc::diagnostics() const { return {{"acceptance_rate", acceptance_rate()}}; }

std::vector<std::pair<std::string, torch::Tensor*>> Hmc::state_tensors() {
  return {{"hmc.counts", &counts_}};
}

}  // namespace sgmcmc
