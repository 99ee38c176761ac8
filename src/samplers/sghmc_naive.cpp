#include "samplers/sghmc_naive.h"

#include <cmath>
#include <stdexcept>

#include "kernels/update/update_rules.h"
#include "samplers/validate.h"

namespace sgmcmc {

void SghmcNaiveOptions::validate() const {
  check_positive("sghmc-naive", "lr", lr_);
  if (resample_every_ < 0)
    throw std::invalid_argument("sghmc-naive.resample_every: must be >= 0, got " +
                                std::to_string(resample_every_));
  check_nonnegative("sghmc-naive", "temperature", temperature_);
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
