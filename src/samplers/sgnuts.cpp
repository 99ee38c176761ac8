#include "samplers/sgnuts.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<SgnutsOptions>& sgnuts_option_table() {
  using T = OptionTable<SgnutsOptions>;
  static const T table("sgnuts", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "η, the leapfrog step (η² is SGHMC's lr)"),
      T::integer("adapt_trajectories", SGMCMC_FIELD(adapt_trajectories), Range::at_least(1),
          "trajectories run to their U-turn, whose lengths the later ones draw from (burn-in)"),
      T::integer("max_leapfrog", SGMCMC_FIELD(max_leapfrog), Range::at_least(2), "the longest trajectory"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the refreshed momentum's variance (1: the posterior; 0: no noise)"),
  });
  return table;
}

void SgnutsOptions::validate() const {
  sgnuts_option_table().check(*this);
}

Sgnuts::Sgnuts(std::vector<ParamGroup> groups, at::Generator generator, SgnutsOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()), options.temperature()),
      options_(options) {
  for (const auto& p : parameters()) {
    momentum_.push_back(torch::zeros_like(p));
    theta0_.push_back(torch::zeros_like(p));
    r0_.push_back(torch::zeros_like(p));
  }
  counters_ = torch::zeros({3}, torch::kInt64);
  lengths_ = torch::zeros({options_.adapt_trajectories()}, torch::kInt64);
}

bool Sgnuts::turned_back() const {
  // Σ over every parameter of (θ − θ₀)·r and (θ − θ₀)·r₀, one read of both.
  const auto params = const_cast<Sgnuts*>(this)->parameters();
  torch::Tensor sums;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto d = (params[i].detach() - theta0_[i]).reshape(-1).to(torch::kFloat64);
    const auto s = torch::stack({d.dot(momentum_[i].reshape(-1).to(torch::kFloat64)),
                                 d.dot(r0_[i].reshape(-1).to(torch::kFloat64))});
    sums = sums.defined() ? sums + s : s;
  }
  const auto v = sums.to(torch::kCPU);
  return v[0].item<double>() < 0 || v[1].item<double>() < 0;
}

void Sgnuts::step() {
  torch::NoGradGuard no_grad;
  auto c = counters_.accessor<int64_t, 1>();
  const bool boundary = c[0] == 0;
  if (boundary && c[2] >= options_.adapt_trajectories()) {  // adapted: a recorded length, drawn
    const auto pick = torch::randint(0, c[2], {1}, generator_, torch::TensorOptions().dtype(torch::kInt64)
                                                                   .device(parameters()[0].device()));
    c[1] = lengths_[pick.to(torch::kCPU).item<int64_t>()].item<int64_t>();
  }
  auto params = parameters();
  if (boundary)
    for (size_t i = 0; i < params.size(); ++i) theta0_[i].copy_(params[i].detach());
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    torch::Tensor noise = boundary ? randn_like(p) : torch::Tensor();
    rules::stochastic_hmc_update(p, momentum_[i], g, noise, lr, 0.0, temperature_, boundary);
    if (boundary) r0_[i].copy_(momentum_[i]);
  });
  ++step_count_;
  const int64_t k = ++c[0];
  if (c[1] > 0) {  // a drawn length
    if (k >= c[1]) c[0] = 0;
    return;
  }
  if (k >= options_.max_leapfrog() || (k >= 2 && turned_back())) {
    if (c[2] < options_.adapt_trajectories()) lengths_[c[2]++] = k;
    c[0] = 0;
  }
}

std::vector<int64_t> Sgnuts::lengths() const {
  const int64_t n = counters_[2].item<int64_t>();
  const auto l = lengths_.narrow(0, 0, n).contiguous();
  return std::vector<int64_t>(l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + n);
}

std::map<std::string, double> Sgnuts::diagnostics() const {
  const auto l = lengths();
  double mean = 0;
  for (auto x : l) mean += static_cast<double>(x) / static_cast<double>(l.size());
  return {{"trajectory_length_mean", l.empty() ? NAN : mean},
          {"trajectory_length", static_cast<double>(counters_[1].item<int64_t>())}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Sgnuts::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < momentum_.size(); ++i) {
    out.emplace_back(std::to_string(i) + ".momentum", &momentum_[i]);
    out.emplace_back(std::to_string(i) + ".theta0", &theta0_[i]);
    out.emplace_back(std::to_string(i) + ".r0", &r0_[i]);
  }
  out.emplace_back("counters", &counters_);
  out.emplace_back("lengths", &lengths_);
  return out;
}

}  // namespace sgmcmc
