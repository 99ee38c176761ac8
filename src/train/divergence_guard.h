// The divergence guard: the minibatch loss is checked every step on the CPU (one host read); on an
// accelerator (where that read would synchronise every step) the accumulated loss and the
// parameters are checked at every evaluation and sample, before anything is saved, so checkpoint.pt
// is never written from non-finite state and the last good checkpoint survives.
//
// On a divergence the guard calls `report` (the run writes its summary.json) and throws
// RunDiverged with the step, the sampler, its step size, the likely cause and the last good
// checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/option_map.h"

namespace sgmcmc {

// The likely cause of a divergence, from the sampler's name and (resolved) options.
std::string divergence_hint(const std::string& sampler, const OptionMap& options);

class DivergenceGuard {
 public:
  using Report = std::function<void(int64_t step, const std::string& what)>;

  DivergenceGuard(std::string sampler, const OptionMap& options, std::vector<torch::Tensor> params,
                  bool check_every_step, std::string checkpoint_file, Report report);

  // After a step on the CPU: the minibatch's nll. `step` is the step's number (1-based).
  void check_step_loss(int64_t step, const torch::Tensor& batch_nll, double lr);
  // Parameters (and, with `loss_finite` false, the accumulated loss) before a sample, an evaluation
  // or a checkpoint. The parameters are read once per step: a sample, an evaluation and a
  // checkpoint of the same step see the same parameters, and each read is a device sync.
  void check_state(int64_t step, double lr, bool loss_finite = true);
  // check_state in two halves, for a caller that reads the check with other values (the evaluation's
  // MetricsBatch: one read, one sync): the device scalar Σ 0·θ (NaN when any parameter is not finite;
  // undefined when `step` is already checked), then its value.
  torch::Tensor state_sum(int64_t step) const;
  // Whether state_sum(step) has anything to check (θ was not yet found finite at this step).
  bool state_due(int64_t step) const { return step != checked_step_; }
  void resolve_state(int64_t step, double lr, double state_sum);
  // A checkpoint of `step` was written: the last good one.
  void checkpoint_written(int64_t step) { last_checkpoint_ = step; }

  // `hint`: what to try, when not the sampler's step-size hint (divergence_hint).
  [[noreturn]] void diverge(int64_t step, double lr, const std::string& what, const std::string& hint = "");

  // Called from a handler: a LibTorch error raised by the numbers themselves ("value cannot be
  // converted to type float without overflow", which c10 throws as std::runtime_error, or a c10::Error
  // about non-finite values) is a divergence at `step`; anything else is rethrown as it is.
  [[noreturn]] void diverge_on_error(int64_t step, double lr, const std::exception& error);
  static bool is_numeric_error(const std::string& message);

 private:
  std::string sampler_;
  const OptionMap& options_;
  std::vector<torch::Tensor> params_;
  bool check_every_step_;
  std::string checkpoint_file_;
  Report report_;
  int64_t last_checkpoint_ = -1;
  int64_t checked_step_ = -1;  // the step whose parameters check_state found finite
};

}  // namespace sgmcmc
