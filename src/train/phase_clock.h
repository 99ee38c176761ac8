// Where a run's wall clock goes, phase by phase: setup (from the start of run_training to the first
// step: data, model, run directory), steps, Gibbs steps, samples (a sample's predictions on test, val and
// OOD, its trace values), evaluations (metrics rows), checkpoints (the state check and the file) and the
// finish (final.pt, the reliability diagram). summary.json reports them as time.<phase> seconds.
//
// On an accelerator the device is synchronised at each change of phase, so the step work still queued
// is charged to the steps and not to the phase that happens to read a result first. Phases change only
// at Gibbs, sample and evaluation steps, which read results back to the host anyway; between them the
// steps run without a synchronisation.
//
// Each phase is also a RecordFunction user scope, "sgmcmc::phase.<name>", so that LibTorch's
// profilers (and bench/bench_epoch.cpp, which counts ops and host reads per phase) see the phases.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <ATen/record_function.h>
#include <torch/torch.h>

namespace sgmcmc {

class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;
  enum Phase { kSetup, kSteps, kGibbs, kSamples, kEval, kCheckpoint, kFinish, kPhases };

  // Starts in kSetup at `start`.
  PhaseClock(Clock::time_point start, torch::Device device);

  // Charges the time since the last change to the current phase and makes `p` current; nothing (no
  // synchronisation either) when `p` is already current.
  void enter(Phase p);
  ~PhaseClock();
  Phase current() const { return current_; }
  // Seconds per phase, the current one up to now: {"time.setup", ...}.
  std::map<std::string, double> seconds() const;

 private:
  void open_scope();

  torch::Device device_;
  Phase current_ = kSetup;
  std::unique_ptr<at::RecordFunction> scope_;  // the current phase's profiler scope (when observed)
  Clock::time_point since_;
  std::array<double, kPhases> seconds_{};
};

}  // namespace sgmcmc
