// The sampler interface: optimizer-style classes that update parameters in place.
//
// A sampler reads ∇Ũ from each parameter's `.grad`, where the caller (the trainer, or a synthetic
// target) has formed
//     ∇Ũ(θ) = (N/n) Σ_{i in batch} ∇(−log p(x_i | θ)) + ∇(−log p(θ)).
// (With a prior fold, fold_prior_into_next_step, the caller leaves λθ out and the step adds it.)
// It knows nothing of models, data or priors. Per-parameter state (momentum, thermostat,
// preconditioner) lives in a typed struct on the parameter's device; `save`/`load` write it to a
// checkpoint archive. All randomness comes from the `at::Generator` handed in at construction.
//
// Flat groups and fused updates: at construction every group whose parameters allow it
// (FlatGroup::eligible: one float dtype, one device) is laid out in one contiguous buffer, the
// parameters and their `.grad` becoming views into it, and the samplers' state tensors are views
// into one buffer per group too. A step is then one fused kernel per group (kernels/update/fused_update.h)
// with the noise generated inside it. `set_fused(false)` runs the same step as ATen ops over each
// parameter (kernels/update/update_rules.h) with the SAME noise (kernels::philox_normal of the same
// stream): the two paths agree to float rounding (tests/test_fused.cpp). Groups that cannot be
// flattened take the ATen path with at::randn noise.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/update/fused_update.h"
#include "samplers/flat_params.h"
#include "samplers/step_params_buffer.h"

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
  // True when the update is defined at temperature 0 (a noise-free run; a staged schedule's
  // exploration). False for the optimizers (no noise to switch off) and samplers that need T > 0.
  virtual bool runs_at_zero_temperature() const { return is_sampler(); }

  // One update from the gradients already in `.grad`.
  virtual void step() = 0;
  // Calls `closure` to fill `.grad`, then `step()`; returns what the closure returned (Ũ). HMC overrides it.
  virtual torch::Tensor step(const Closure& closure);
  // True when the step reads the value the closure returns (HMC's Metropolis test), not only `.grad`:
  // the trainer's closure then computes Ũ = (N/n)·nll, which is otherwise one kernel a step for nothing.
  virtual bool reads_closure_value() const { return false; }
  // False when step(closure) may call the closure more than once (HMC's leapfrog): the trainer then
  // adds the step's loss itself rather than letting the model's backward pass add every call's.
  virtual bool calls_closure_once() const { return true; }

  // Zeroes every gradient in place (keeps its storage).
  void zero_grad();

  // The base learning rate / step size; a schedule writes it before each step.
  double lr() const { return lr_; }
  void set_lr(double lr);
  // Group g's multiplier of lr() (ParamGroup::lr_scale): a Python param group's own lr, or a
  // schedule that moves groups apart. std::invalid_argument unless finite and > 0.
  void set_lr_scale(size_t group, double scale);
  // Temperature T scaling the injected noise variance (T = 1 samples the posterior).
  double temperature() const { return temperature_; }
  void set_temperature(double t);
  // Number of completed steps.
  int64_t steps() const { return step_count_; }

  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  std::vector<torch::Tensor> parameters() const;

  // Fused kernels on (the default) or off (the per-parameter ATen reference path, same noise).
  void set_fused(bool on) { fused_ = on; }
  bool fused() const { return fused_; }
  // True if every group is one flat buffer (see above).
  bool flat() const;

  // Whole-step graphs (train.graph). In kPrepare mode `step(closure)` does only the host's
  // part of a step: it computes the step's scalars, draws the CPU noise keys and counts the step,
  // writing the folded scalars of every group to a buffer on the device (StepParamsBuffer), without
  // calling the closure or launching anything. launch_prepared() then launches the step's fused
  // kernels, which read those buffers when they run. The launches can thus be captured once in a
  // CUDA graph (after the closure's forward and backward) and replayed after each step's host part;
  // on the CPU, prepare + closure + launch_prepared() is the eager step bit for bit
  // (tests/test_graph.cpp). kPrepare needs graph_capturable().
  // `block_rows` > 1: up to that many steps can be prepared as one block (below), for a graph that
  // replays several steps (train.graph_steps); the buffers are sized here, before any capture.
  enum class StepMode { kEager, kPrepare };
  void set_step_mode(StepMode mode, int64_t block_rows = 1);
  StepMode step_mode() const { return mode_; }
  // Launches the prepared step: row 0, or step `row` of the last block.
  void launch_prepared(int64_t row = 0);
  // A block of prepared steps: between begin_prepared_block() and end_prepared_block(), the k-th
  // step(closure) in kPrepare mode prepares row k (at most block_rows of them), and
  // end_prepared_block() moves the block's scalars to the device in one copy and returns its length.
  // The steps are prepared in order, so each draws the same noise keys and offsets as it would alone.
  void begin_prepared_block();
  int64_t end_prepared_block();
  // The fused rule of every group in the last prepared step or block, row by row (a graph captured
  // for one list of rules is replayed while the list stays the same; Santa's switches once, at the
  // end of its burn-in).
  std::vector<int> prepared_rules() const;
  // True if step() is the fused update of step_params for this sampler's options.
  virtual bool has_fused_step() const { return false; }
  // True if kPrepare works: a fused step, every group flat, fused() on.
  bool graph_capturable() const { return has_fused_step() && flat() && fused_; }

  // The prior's gradient folded into the next step. `fold[g]`: ranges of flat group g
  // (kernels::PriorFold) whose .grad holds the likelihood's gradient only; the step reads ∇Ũ =
  // .grad + λθ there: inside the fused kernel, or added into .grad first on any other path
  // (samplers without a fused step, fused() off, groups of other devices). Consumed by the next
  // step(); step(closure) takes it from its closure. std::invalid_argument unless flat() and one
  // entry per group.
  void fold_prior_into_next_step(const std::vector<kernels::PriorFold>& fold);
  // Where the elements of parameter `p` start in the flat buffers: (group, element offset); nullopt
  // if p is no parameter of a flat group.
  std::optional<std::pair<size_t, int64_t>> flat_position(const torch::Tensor& p) const;

  // The minibatch gradient's noise against the noise the sampler injects, for group g (the health
  // check's "noise" entry, train/gradient_noise.h). `grad_variance`: an estimate of the variance of
  // ∇Ũ's minibatch noise per coordinate, flat over the group's parameters in order. Returns the mean
  // over the group of (variance that noise adds to a step) / (variance the sampler injects there).
  // Above 1 the minibatch noise dominates: the chain's spread is set by the gradient's noise, not by
  // the posterior (Welling & Teh 2011 §4's condition, Chen et al. 2014's β̂ ≤ α). NaN where the
  // question does not apply: optimizers, T = 0, samplers whose thermostat absorbs the gradient
  // noise (SGNHT, mSGNHT, Santa), Metropolis-corrected HMC; and an empty `grad_variance`.
  double gradient_noise_ratio(size_t group, const torch::Tensor& grad_variance) const;
  // False where gradient_noise_ratio is NaN whatever the variance (then nothing need be measured).
  virtual bool checks_gradient_noise() const { return false; }

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

  // A state tensor for every parameter (filled with `fill`, shaped like it): `param[i]` for the
  // i-th parameter in group order; for a flat group, views into one buffer `group[g]`.
  struct StateBuffer {
    std::vector<torch::Tensor> param;
    std::vector<torch::Tensor> group;  // undefined for groups that are not flat
  };
  StateBuffer make_state(double fill) const;

  // One step over every parameter. When every group is flat, fused() is on and `rule` is given:
  // one fused kernel per group over θ, the groups' buffers of `state` (in the rule's order) and the
  // gradient. Otherwise `ref(param, grad, noise, lr, index)` for every parameter with a gradient,
  // with the noise the fused kernel would have drawn (flat groups) or at::randn (other groups);
  // with `noise = false` no noise tensor is made (ref gets an undefined tensor), but the same
  // generator draws happen, so switching paths mid-run keeps the random stream aligned.
  // `s.lr` is set per group (lr() × lr_scale).
  template <typename Ref>
  void step_params(std::optional<kernels::FusedRule> rule, kernels::FusedScalars s,
                   const std::vector<const StateBuffer*>& state, bool noise, Ref&& ref);

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

  // gradient_noise_ratio for a sampler that checks_gradient_noise(), T > 0 and a non-empty variance.
  virtual double noise_ratio(size_t group, const torch::Tensor& grad_variance) const { return NAN; }
  // Group g's step size: lr() × its lr_scale.
  double group_lr(size_t g) const { return lr_ * groups_[g].lr_scale; }
  // Group g's elements of `state`, flat in parameter order (the group's buffer when it is flat).
  torch::Tensor group_state(const StateBuffer& state, size_t g) const;

  // Adds the pending fold of flat group g into its .grad (the paths that are not a fused kernel).
  void add_folded_prior(size_t g);

  std::vector<ParamGroup> groups_;
  std::vector<std::unique_ptr<FlatGroup>> flat_;  // per group; null if the group is not flat
  std::vector<kernels::PriorFold> fold_;          // per group, for the next step; empty: none
  bool fused_ = true;
  // kPrepare: per group, the rule and state of the prepared launch and its scalars' buffer.
  struct PreparedLaunch {
    kernels::FusedRule rule = kernels::FusedRule::kNoise;
    std::vector<torch::Tensor> state;
    bool ready = false;
  };
  // Row `row` of a prepared step, every group ready; std::logic_error naming `who` otherwise.
  const std::vector<PreparedLaunch>& prepared_row(int64_t row, const char* who) const;
  StepMode mode_ = StepMode::kEager;
  std::vector<std::vector<PreparedLaunch>> prepared_;  // [row][group]
  bool block_ = false;       // between begin_ and end_prepared_block
  int64_t block_row_ = 0;    // the row the next prepared step writes
  int64_t prepared_rows_ = 1;  // rows of the last prepared step or block
  std::vector<std::unique_ptr<StepParamsBuffer>> step_buffers_;
  at::Generator generator_;
  double lr_;
  double temperature_;
  int64_t step_count_ = 0;
};

using SamplerPtr = std::unique_ptr<Sampler>;

// ---------------------------------------------------------------------------------------------
namespace detail {
// The noise stream of one flat group for one step: on the CPU a fresh 64-bit key from `gen`; on CUDA
// nothing is drawn here (the kernel takes the key and offset from the generator's Philox state).
kernels::NoiseStream next_noise_stream(at::Generator& gen, const torch::Device& device);
}  // namespace detail

template <typename Ref>
void Sampler::step_params(std::optional<kernels::FusedRule> rule, kernels::FusedScalars s,
                          const std::vector<const StateBuffer*>& state, bool noise, Ref&& ref) {
  const bool all_flat = flat();
  size_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto& group = groups_[g];
    const double lr = lr_ * group.lr_scale;
    FlatGroup* fg = flat_[g].get();
    if (fg) {
      fg->rebind();
      const auto stream = detail::next_noise_stream(generator_, fg->data().device());
      const kernels::PriorFold* fold = g < fold_.size() && !fold_[g].empty() ? &fold_[g] : nullptr;
      if (all_flat && fused_ && rule) {
        s.lr = lr;
        std::vector<torch::Tensor> st;
        for (const auto* b : state) st.push_back(b->group[g]);
        if (mode_ == StepMode::kPrepare) {
          if (fold) throw std::logic_error("Sampler: a prior fold in a prepared step (kPrepare)");
          auto noise = stream;
#if defined(SGMCMC_WITH_CUDA)
          // the replayed kernel reads the generator's key and offset from the step's parameters
          if (fg->data().is_cuda()) noise = kernels::cuda_noise_stream(generator_, fg->numel());
#endif
          const int64_t row = block_ ? block_row_ : 0;
          if (row >= static_cast<int64_t>(prepared_.size()))
            throw std::logic_error("Sampler: a block of more prepared steps than set_step_mode's block_rows");
          if (block_) step_buffers_[g]->stage(row, *rule, s, noise, fg->data().scalar_type());
          else step_buffers_[g]->write(*rule, s, noise, fg->data().scalar_type());
          prepared_[static_cast<size_t>(row)][g] = {*rule, std::move(st), true};
        } else {
          auto theta = fg->data();
          if (fold && !theta.device().is_cpu()) {
            add_folded_prior(g);
            fold = nullptr;
          }
          kernels::fused_update(*rule, theta, st, fg->grad(), s, stream, &generator_, fold);
        }
        index += group.params.size();
        continue;
      }
      if (mode_ == StepMode::kPrepare)
        throw std::logic_error("Sampler: a prepared step (kPrepare) took the ATen path; check graph_capturable()");
      if (fold) add_folded_prior(g);
      std::vector<torch::Tensor> z;
      if (noise) {
        z = fg->split(kernels::philox_normal(fg->numel(), stream, fg->data().options(), &generator_));
      } else if (fg->data().is_cuda()) {
        // keep the CUDA generator's offset where a fused step (which always draws) leaves it
        (void)kernels::philox_normal(fg->numel(), stream, fg->data().options(), &generator_);
      }
      for (size_t k = 0; k < group.params.size(); ++k, ++index)
        ref(group.params[k], group.params[k].grad(), noise ? z[k] : torch::Tensor(), lr, index);
      continue;
    }
    for (auto& p : group.params) {
      const auto& grad = p.grad();
      if (grad.defined()) ref(p, grad, noise ? randn_like(p) : torch::Tensor(), lr, index);
      ++index;
    }
  }
  fold_.clear();
  if (mode_ == StepMode::kPrepare) {
    if (block_) ++block_row_;
    else prepared_rows_ = 1;
  }
}

}  // namespace sgmcmc
