// train/phase_clock.h: a run's wall clock by phase.
#include "train/phase_clock.h"

namespace sgmcmc {

namespace {

const char* const kNames[PhaseClock::kPhases] = {"setup", "steps", "gibbs", "samples", "eval", "checkpoint", "finish"};
const char* const kScopes[PhaseClock::kPhases] = {"sgmcmc::phase.setup",   "sgmcmc::phase.steps",
                                                  "sgmcmc::phase.gibbs",   "sgmcmc::phase.samples",
                                                  "sgmcmc::phase.eval",    "sgmcmc::phase.checkpoint",
                                                  "sgmcmc::phase.finish"};

void synchronize(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.has_index() ? d.index() : -1);
}

}  // namespace

PhaseClock::PhaseClock(Clock::time_point start, torch::Device device) : device_(device), since_(start) {
  open_scope();
}

PhaseClock::~PhaseClock() = default;

void PhaseClock::open_scope() {
  scope_.reset();  // ends the previous phase's scope first
  auto scope = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (!scope->isActive()) return;  // nobody observes: nothing to keep
  scope->before(kScopes[current_]);
  scope_ = std::move(scope);
}

void PhaseClock::enter(Phase p) {
  if (p == current_) return;
  synchronize(device_);
  const auto now = Clock::now();
  seconds_[current_] += std::chrono::duration<double>(now - since_).count();
  since_ = now;
  current_ = p;
  open_scope();
}

std::map<std::string, double> PhaseClock::seconds() const {
  std::map<std::string, double> out;
  for (int i = 0; i < kPhases; ++i) out[std::string("time.") + kNames[i]] = seconds_[i];
  out[std::string("time.") + kNames[current_]] += std::chrono::duration<double>(Clock::now() - since_).count();
  return out;
}

}  // namespace sgmcmc
