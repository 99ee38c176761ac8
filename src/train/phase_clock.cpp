// train/phase_clock.h: a run's wall clock by phase.
#include "train/phase_clock.h"

#include <algorithm>
#include <deque>

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace sgmcmc {

namespace {

const char* const kPhaseNames[PhaseClock::kPhases] = {"setup", "steps", "gibbs", "samples", "eval", "checkpoint", "finish"};
const char* const kScopes[PhaseClock::kPhases] = {"sgmcmc::phase.setup",   "sgmcmc::phase.steps",
                                                  "sgmcmc::phase.gibbs",   "sgmcmc::phase.samples",
                                                  "sgmcmc::phase.eval",    "sgmcmc::phase.checkpoint",
                                                  "sgmcmc::phase.finish"};

void synchronize_device(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.has_index() ? d.index() : -1);
}

double seconds_between(PhaseClock::Clock::time_point a, PhaseClock::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

struct PhaseClock::Marks {
#if defined(SGMCMC_WITH_CUDA)
  struct Mark {
    Phase ended;                               // the phase this change closed
    std::unique_ptr<at::cuda::CUDAEvent> at;   // recorded on the stream at the change
    Clock::time_point host;                    // when the host made it
  };
  std::unique_ptr<at::cuda::CUDAEvent> passed;  // the newest change the device has passed
  Clock::time_point passed_host;                // that change's time on the host's clock
  std::deque<Mark> pending;                     // recorded, not yet passed (oldest first)

  static std::unique_ptr<at::cuda::CUDAEvent> record(const torch::Device& d) {
    auto e = std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault);  // timing on
    e->record(c10::cuda::getCurrentCUDAStream(d.index()));
    return e;
  }
#endif
};

PhaseClock::PhaseClock(Clock::time_point start, torch::Device device) : device_(device), since_(start) {
#if defined(SGMCMC_WITH_CUDA)
  if (device_.is_cuda() && device_.index() < 0) device_ = torch::Device(torch::kCUDA, c10::cuda::current_device());
#endif
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
  const bool cuda = device_.is_cuda();
#if defined(SGMCMC_WITH_CUDA)
  if (cuda && marks_) {  // an event where the device will be when it gets here; the host goes on
    const auto now = Clock::now();
    marks_->pending.push_back({current_, Marks::record(device_), now});
    since_ = now;
    current_ = p;
    resolve();
    open_scope();
    return;
  }
#endif
  if (cuda) synchronize_device(device_);  // setup's end (anchors the device's clock), or a build without CUDA
  const auto now = Clock::now();
  seconds_[current_] += seconds_between(since_, now);
  since_ = now;
  current_ = p;
#if defined(SGMCMC_WITH_CUDA)
  if (cuda) {
    marks_ = std::make_unique<Marks>();
    marks_->passed = Marks::record(device_);  // the stream is idle: passed at once
    marks_->passed_host = now;
  }
#endif
  open_scope();
}

void PhaseClock::resolve() const {
#if defined(SGMCMC_WITH_CUDA)
  if (!marks_) return;
  auto& m = *marks_;
  while (!m.pending.empty() && m.pending.front().at->query()) {
    auto& front = m.pending.front();
    const double dt = std::max(0.0, static_cast<double>(m.passed->elapsed_time(*front.at)) / 1e3);
    seconds_[front.ended] += dt;
    m.passed_host += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(dt));
    m.passed = std::move(front.at);
    m.pending.pop_front();
  }
#endif
}

std::map<std::string, double> PhaseClock::seconds() const {
  resolve();
  auto secs = seconds_;
  const auto now = Clock::now();
  if (marks_) {
#if defined(SGMCMC_WITH_CUDA)
    // the changes the device has not passed yet, and the current phase, by the host's clock from the
    // last one it passed
    auto t = marks_->passed_host;
    for (const auto& m : marks_->pending) {
      secs[m.ended] += std::max(0.0, seconds_between(t, m.host));
      t = std::max(t, m.host);
    }
    secs[current_] += std::max(0.0, seconds_between(t, now));
#endif
  } else {
    secs[current_] += seconds_between(since_, now);
  }
  std::map<std::string, double> out;
  for (int i = 0; i < kPhases; ++i) out[std::string("time.") + kPhaseNames[i]] = secs[i];
  return out;
}

}  // namespace sgmcmc
