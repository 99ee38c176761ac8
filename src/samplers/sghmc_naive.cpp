#include "samplers/sghmc_naive.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"

namespace sgmcmc {

const OptionTable<SghmcNaiveOptions>& sghmc_naive_option_table() {
  using T = OptionTable<SghmcNaiveOptions>;
  static const T table("sghmc-naive", {
      T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "η = ε², the step on ∇Ũ"),
      T::integer("resample_every", SGMCMC_FIELD(resample_every), Range::at_least(0),
          "steps between momentum draws v ~ N(0, ηT) (0: never)"),
      T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(),
          "T: scales the injected noise's variance (1: the posterior; 0: no noise)"),
  });
  return table;
}

void SghmcNaiveOptions::validate() const {
  sghmc_naive_option_table().check(*this);
}

SghmcNaive::SghmcNaive(std::vector<ParamGroup> groups, at::Generator generator,
                       SghmcNaiveOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options) {
  for (const auto& p : parameters()) momentum_.push_back(torch::zeros_like(p));
}

void SghmcNaive::step() {
  torch::NoGradGuard no_grad;
  const int64_t k = options_.resample_every();
  const bool resample = k > 0 && step_count_ % k == 0;
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    if (resample) momentum_[i].copy_(randn_like(p).mul_(std::sqrt(lr * temperature_)));
    rules::sghmc_naive_update(p, momentum_[i], g, lr);
  });
  ++step_count_;
}

std::vector<std::pair<std::string, torch::Tensor*>> SghmcNaive::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < momentum_.size(); ++i)
    out.emplace_back(std::to_string(i) + ".momentum", &momentum_[i]);
  return out;
}

}  // namespace sgmcmc
