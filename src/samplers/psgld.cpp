#include "samplers/psgld.h"

#include "kernels/update_rules.h"
#include "samplers/validate.h"

namespace sgmcmc {

void PsgldOptions::validate() const {
  check_positive("psgld", "lr", lr_);
  check_nonnegative("psgld", "temperature", temperature_);
  check_range("psgld", "alpha", alpha_, 0, 1, /*lo_open=*/true);
  check_positive("psgld", "eps", eps_);
}

Psgld::Psgld(std::vector<ParamGroup> groups, at::Generator generator, PsgldOptions options)
    : Sampler(std::move(groups), std::move(generator), (options.validate(), options.lr()),
              options.temperature()),
      options_(options) {
  for (const auto& p : parameters()) state_.push_back({torch::zeros_like(p)});
}

void Psgld::step() {
  torch::NoGradGuard no_grad;
  const bool first = step_count_ == 0;
  for_each_param([&](torch::Tensor& p, const torch::Tensor& g, double lr, size_t i) {
    auto noise = randn_like(p);
    rules::psgld_update(p, state_[i].square_avg, g, noise, lr, temperature_, options_.alpha(),
                        options_.eps(), first);
  });
  ++step_count_;
}

std::map<std::string, double> Psgld::diagnostics() const {
  double sum = 0, n = 0;
  for (const auto& s : state_) {
    sum += (s.square_avg.sqrt() + options_.eps()).reciprocal().sum().item<double>();
    n += static_cast<double>(s.square_avg.numel());
  }
  return {{"preconditioner_mean", n > 0 ? sum / n : 0.0}};
}

std::vector<std::pair<std::string, torch::Tensor*>> Psgld::state_tensors() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (size_t i = 0; i < state_.size(); ++i)
    out.emplace_back(std::to_string(i) + ".square_avg", &state_[i].square_avg);
  return out;
}

}  // namespace sgmcmc
