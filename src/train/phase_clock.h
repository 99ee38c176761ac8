// Where a run's wall clock goes, phase by phase: setup (from the start of run_training to the first
// step: data, model, run directory), steps, Gibbs steps, samples (a sample's predictions on test, val and
// OOD, its trace values), evaluations (metrics rows), checkpoints (the state check and the file) and the
// finish (final.pt, the reliability diagram). summary.json reports them as time.<phase> seconds.
//
// On CUDA a change of phase is an event on the device's stream, not a synchronisation: the host goes on
// queueing the next phase's work while the device still runs the steps (a synchronisation there left the
// GPU idle while the host issued each phase's ~100 ops, ~20 µs of host time each), and each phase is
// charged the device's time between the events that open and close it, so the step work still queued is
// charged to the steps and not to the phase that happens to read a result first. Events are timed once
// the device has passed them; seconds() estimates the ones it has not reached yet by the host's clock.
// The first change (out of setup) synchronises once and anchors the device's clock to the host's.
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
  // CUDA: times the phase changes the device has passed (`marks_`, oldest first) into seconds_
  void resolve() const;

  struct Marks;  // CUDA: the phase changes' events (phase_clock.cpp)
  torch::Device device_;
  Phase current_ = kSetup;
  std::unique_ptr<at::RecordFunction> scope_;  // the current phase's profiler scope (when observed)
  Clock::time_point since_;
  mutable std::array<double, kPhases> seconds_{};  // resolve() times changes the device has passed
  std::unique_ptr<Marks> marks_;
};

}  // namespace sgmcmc
