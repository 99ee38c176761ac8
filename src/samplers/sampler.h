// The sampler interface: optimizer-style classes that update parameters in place.
//
// A sampler reads ∇Ũ from each parameter's `.grad`, where the caller (the trainer, or a synthetic
// target) has formed
//     ∇Ũ(θ) = (N/n) Σ_{i in batch} ∇(−log p(x_i | θ)) + ∇(−log p(θ)).
// It knows nothing of models, data or priors. Per-parameter state (momentum, thermostat,
// preconditioner) lives in a typed struct on the parameter's device; `save`/`load` write it to a
// checkpoint archive. All randomness comes from the `at::Generator` handed in at construction.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sgmcmc {

// Recomputes Ũ at the current parameters, fills every parameter's `.grad` with ∇Ũ and returns Ũ
// (a scalar tensor). Needed by samplers that evaluate the gradient more than once a step (HMC).
using Closure = std::function<torch::Tensor()>;

// Parameters that share a learning-rate multiplier (e.g. BPMF's bias terms).
struct ParamGroup {
  ParamGroup() = default;
  explicit ParamGroup(std::vector<torch::Tensor> p, double scale = 1.0)
      : params(std::move(p)), lr_scale(scale) {}
  std::vector<torch::Tensor> params;
  double lr_scale = 1.0;
};

class Sampler {
 public:
  Sampler(std::vector<ParamGroup> groups, at::Generator generator, double lr, double temperature);
  virtual ~Sampler() = default;
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Registry name, e.g. "sghmc".
  virtual std::string name() const = 0;
  // False for the optimizers (sgd, adam, ...): they inject no noise and produce point estimates.
  virtual bool is_sampler() const { return true; }

  // One update from the gradients already in `.grad`.
  virtual void step() = 0;
  // Calls `closure` to fill `.grad`, then `step()`; returns Ũ. HMC overrides it.
  virtual torch::Tensor step(const Closure& closure);

  // Zeroes every gradient in place (keeps its storage).
  void zero_grad();

  // The base learning rate / step size; a schedule writes it before each step.
  double lr() const { return lr_; }
  void set_lr(double lr);
  // Temperature T scaling the injected noise variance (T = 1 samples the posterior).
  double temperature() const { return temperature_; }
  void set_temperature(double t);
  // Number of completed steps.
  int64_t steps() const { return step_count_; }

  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  std::vector<torch::Tensor> parameters() const;

  // Scalar diagnostics for logging (e.g. "thermostat_mean"); empty by default.
  virtual std::map<std::string, double> diagnostics() const { return {}; }

  // Checkpointing: the step count, lr, temperature and every state tensor.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 protected:
  // Every state tensor with a stable name, for save/load. Samplers with state override it.
  virtual std::vector<std::pair<std::string, torch::Tensor*>> state_tensors() { return {}; }

  // Standard normal noise shaped like `like`, on its device, from this sampler's generator.
  torch::Tensor randn_like(const torch::Tensor& like);

  // Calls f(param, grad, group_lr, index) for every parameter that has a gradient, in a fixed order.
  template <typename F>
  void for_each_param(F&& f) {
    size_t index = 0;
    for (auto& group : groups_) {
      for (auto& p : group.params) {
        const auto& g = p.grad();
        if (g.defined()) f(p, g, lr_ * group.lr_scale, index);
        ++index;
      }
    }
  }

  std::vector<ParamGroup> groups_;
  at::Generator generator_;
  double lr_;
  double temperature_;
  int64_t step_count_ = 0;
};

using SamplerPtr = std::unique_ptr<Sampler>;

}  // namespace sgmcmc
