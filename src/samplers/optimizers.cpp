#include "samplers/optimizers.h"

#include "kernels/update/update_rules.h"
#include "samplers/validate.h"

namespace sgmcmc {

void SgdOptions::validate() const { check_positive("sgd", "lr", lr_); }
void SgdMomentumOptions::validate() const {
  check_positive("sgd-momentum", "lr", lr_);
  check_range("sgd-momentum", "momentum", momentum_, 0, 1, false, /*hi_open=*/true);
}
void RmspropOptions::validate() const {
  check_positive("rmsprop", "lr", lr_);
  check_range("rmsprop", "alpha", alpha_, 0, 1, /*lo_open=*/true);
  check_positive("rmsprop", "eps", eps_);
}
void AdamOptions::validate() const {
  check_positive("adam", "lr", lr_);
  check_range("adam", "beta1", beta1_, 0, 1, false, true);
  check_range("adam", "beta2", beta2_, 0, 1, false, true);
  check_positive("adam", "eps", eps_);
}

Sgd::Sgd(std::vector<ParamGroup> groups, at::Generator generator, SgdOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()), 0.0) {}

void Sgd::step() {
  torch::NoGradGuard no_grad;
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t) {
    rules::sgd_update(p, g, lr);
  });
  ++step_count_;
}

SgdMomentum::SgdMomentum(std::vector<ParamGroup> groups, at::Generator generator,
                         SgdMomentumOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()), 0.0),
      options_(options) {
  for (const auto& p : parameters()) buf_.push_back(torch::zeros_like(p));
}

void SgdMomentum::step() {
  torch::NoGradGuard no_grad;
  const bool first = step_count_ == 0;
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    rules::momentum_update(p, buf_[i], g, lr, options_.momentum(), options_.nesterov(), first);
  });
  ++step_count_;
}

std::vector<std::pair<std::string, torch::Tensor*>> SgdMomentum::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < buf_.size(); ++i) out.emplace_back(std::to_string(i) + ".momentum", &buf_[i]);
  return out;
}

Rmsprop::Rmsprop(std::vector<ParamGroup> groups, at::Generator generator, RmspropOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()), 0.0),
      options_(options) {
  for (const auto& p : parameters()) square_avg_.push_back(torch::zeros_like(p));
}

void Rmsprop::step() {
  torch::NoGradGuard no_grad;
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    rules::rmsprop_update(p, square_avg_[i], g, lr, options_.alpha(), options_.eps());
  });
  ++step_count_;
}

std::vector<std::pair<std::string, torch::Tensor*>> Rmsprop::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < square_avg_.size(); ++i)
    out.emplace_back(std::to_string(i) + ".square_avg", &square_avg_[i]);
  return out;
}

Adam::Adam(std::vector<ParamGroup> groups, at::Generator generator, AdamOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()), 0.0),
      options_(options) {
  for (const auto& p : parameters()) state_.push_back({torch::zeros_like(p), torch::zeros_like(p)});
}

void Adam::step() {
  torch::NoGradGuard no_grad;
  const int64_t t = step_count_ + 1;
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    rules::adam_update(p, state_[i].exp_avg, state_[i].exp_avg_sq, g, lr, options_.beta1(),
                       options_.beta2(), options_.eps(), t);
  });
  ++step_count_;
}

std::vector<std::pair<std::string, torch::Tensor*>> Adam::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < state_.size(); ++i) {
    out.emplace_back(std::to_string(i) + ".exp_avg", &state_[i].exp_avg);
    out.emplace_back(std::to_string(i) + ".exp_avg_sq", &state_[i].exp_avg_sq);
  }
  return out;
}

}  // namespace sgmcmc
