// sampler.lr: auto (also the default when a config gives no lr): the step size chosen for the user by
// short pilot runs, before the run itself.
//
// Each trial starts from the run's own initialisation (same seed), takes `steps` steps of the
// configured sampler at one step size on the training split, and is scored by the validation NLL of
// the posterior predictive averaged over 8 iterates of the trial's last quarter (without a validation
// split, a sixth of the training rows held out for the trials); a trial whose loss or predictions stop
// being finite counts as unstable. The search scores a grid of factors of 4 from 4^-5 to 4^2 times
// the sampler's default step and refines the best by factors of 2. The choice (select_lr):
//  - the plateau: the steps around the best whose validation NLL the validation split cannot tell
//    from the best's (a paired comparison over the validation points: mean difference within two
//    standard errors), as far as they run contiguously;
//  - half the plateau's top. Within the plateau the lowest score is the noise's pick (Boston's 45
//    validation rows: 3.9e-7 to 2.5e-5 by the lowest score), and a trial cannot see mixing, which
//    favours the larger steps in a run 50 times longer; the step above the top is measurably worse
//    or unstable, and the run keeps a factor of 2 from it;
//  - a stability margin: when a step up to 4 times that was unstable, the largest stable step at or
//    below half of it, since a long run meets more of the gradient noise than a trial.
// Two more rounds keep the chain at the temperature asked for (docs/calibration.md):
//  - the noise precision at the posterior's scale: a Gaussian likelihood whose τ is Gibbs-sampled
//    starts at noise_precision (1 by default) while its posterior may be 10 or 100 times that, and
//    the likelihood's curvature, and its gradient's noise, grow with τ. A fit by Adam (10 trials
//    long, at its default step, with τ's Gibbs step) gives τ̂ = n / Σ r² over the validation points'
//    residuals r (the training residuals of a fit that can overfit would put τ̂ far too high);
//    where τ̂ is more than kTauShift times τ₀, the search is run again with every trial at τ̂
//    (around the first choice × τ₀/τ̂);
//  - the gradient-noise cap: the minibatch gradient's noise measured at the end of the trial
//    nearest the choice (train/gradient_noise.h), as a ratio r to the noise the sampler injects,
//    scaled to the choice (r grows linearly with the step); the chain then samples at about
//    T·(1 + r) (the effective temperature), and where r exceeds kMaxNoiseRatio the step is cut to
//    bring it there.
// Before the search, where train.batch_size is auto and the sampler's temperature can be spoiled by
// minibatch noise (Sampler::checks_gradient_noise), the batch: the largest of the auto batch doubled
// (up to the whole training set) whose step costs at most kBatchCost times the auto batch's, or whose
// run's steps take at most kBatchRunSeconds, both measured here (the choice goes into config.yaml). A small model on a small data set is bound by the step's fixed costs, and there the whole set
// costs little more than a minibatch and has no minibatch noise at all; a large model keeps its batch.
// The trials, the choice and the seconds spent go into summary.json ("lr_auto") and the chosen values
// into the run's config.yaml, so a resumed run does not search again.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/experiment_config.h"
#include "train/run_setup.h"

namespace sgmcmc {

struct LrTrial {
  double lr = 0;        // in the config's units (sampler.lr, before lr_scaling)
  double val_nll = 0;   // NaN when unstable
  bool stable = false;
  torch::Tensor points; // the NLL per validation point [n] (float64, CPU); its mean is val_nll
  double tau = NAN;     // the likelihood's τ at the trial's end (NaN: no Gaussian likelihood)
  double noise_ratio = NAN;  // the gradient-noise ratio at the trial's end (max over groups; NaN: not probed)
  int round = 1;             // the search round (2: at the fitted τ̂)
  bool settling = false;     // the fit for τ̂ (Adam, τ's Gibbs step on; not a candidate; lr 0)
};

// How a trial runs beyond its step size.
struct TrialOptions {
  double tau = NAN;          // the likelihood's τ at the start (NaN: the config's noise_precision)
  bool gibbs_noise = false;  // τ's Gibbs step during the trial (the fit for τ̂), else τ stays put
  bool probe = false;        // the gradient-noise probe at the trial's end (LrTrial::noise_ratio)
};

// What select_lr makes of the trials.
struct LrSelection {
  double lr = 0;                  // the choice
  double best_lr = 0, best_nll = 0;
  double low = 0, high = 0;       // the plateau's ends (tried steps)
  double unstable_at = 0;         // > 0: the unstable step that moved the choice down (the margin)
  std::string why;                // one line
};

struct LrChoice {
  // The cap on the minibatch noise's ratio to the injected noise: an effective temperature within 10 %
  // of the one asked for (measured against NUTS: docs/calibration.md).
  static constexpr double kMaxNoiseRatio = 0.1;
  // τ̂ this far (a factor) from the start value runs the search again at τ̂.
  static constexpr double kTauShift = 2.0;
  double lr = 0;
  std::vector<LrTrial> trials;  // in the order tried
  int64_t steps_per_trial = 0;
  double seconds = 0;
  std::string why;              // one line: "best validation NLL 0.412 at 1e-06; ..."
  double plateau_low = 0, plateau_high = 0;  // the steps the validation points cannot tell from the best
  double tau = NAN;             // τ̂ the second round's trials ran at (NaN: none, the config's own)
  double noise_ratio = NAN;     // the gradient-noise ratio expected at the choice, before the cap
  double uncapped_lr = 0;       // the choice before the gradient-noise cap
  // The batch (> 0 where the pilot chose it: train.batch_size auto) and the measured seconds a step at
  // the auto batch and at the chosen one.
  static constexpr double kBatchCost = 2.0, kBatchRunSeconds = 30.0;
  int64_t batch_size = 0;
  double step_seconds_auto = 0, step_seconds = 0;
  nlohmann::ordered_json to_json() const;
};

// The pilot's length in steps for a run of `total_steps`: a fiftieth of it, 100 to 1,000 steps (about
// 10 trials: a fifth of the run at most, a tenth for App. H.1 in full).
int64_t pilot_steps(int64_t total_steps);

// The choice among scored trials (any order): half the plateau's top with the stability margin, as
// in the header's comment. Throws std::invalid_argument when none is stable.
LrSelection select_lr(const std::vector<LrTrial>& trials);

// Two trials the validation points cannot tell apart: the mean of the paired differences of their
// per-point NLLs within two of its standard errors (trials without points: equal val_nll only).
bool indistinguishable(const LrTrial& a, const LrTrial& b);

// The search over step sizes, whatever runs a trial: the binary's run_lr_trial (choose_lr) and a Python
// loop's own steps (sgmcmc.choose_lr) go through it, so both choose by one grid, one refinement and one
// select_lr. Each trial is told (`say`: "  trial N: lr … -> validation NLL … (… s)") and kept in the
// choice's trials in the order tried. It lives in train/lr_search.cpp with search_lr, select_lr and
// LrChoice::to_json, apart from the binary's trials: the part the Python module links without the trainer.
class LrSearch {
 public:
  using Trial = std::function<LrTrial(double lr)>;
  using Say = std::function<void(const std::string&)>;
  // The grid of the first round, centre·4^k for k = kLow..kHigh (too small a step underfits in a trial,
  // too large a one is noisy or unstable; the score is not always monotone in between, so the whole grid
  // is scored), and of the round at a fitted τ̂ (around a centre that is already a choice).
  static constexpr int kLow = -5, kHigh = 2, kRetryLow = -2, kRetryHigh = 1;
  LrSearch(LrChoice& choice, Trial trial, Say say);
  // One round: the grid centre·4^k for k = low..high, then, where any was stable, the best refined by
  // factors of 2 (a step this round has tried is not tried again). nullopt where no grid step was stable.
  std::optional<LrSelection> round(double centre, int low, int high);
  // The choice from the last round's pick: the gradient-noise cap, the plateau and the one-line why
  // (`tau_why`: what the τ round did, or "").
  void finish(const LrSelection& pick, const std::string& tau_why);
  void tell(const std::string& line) const;
  double elapsed() const;
  const std::vector<LrTrial>& current() const { return current_; }  // this round's trials

 private:
  void trial(double lr);
  LrChoice& choice_;
  Trial run_;
  Say say_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int number_ = 0;  // the round now running (1, 2, …): LrTrial::round
  std::vector<LrTrial> current_;
  std::set<double> tried_;
};

// The pilot over a trial runner of the caller's own (Python's sgmcmc.choose_lr, whose trials are the
// user's steps and validation NLLs): the first round around `centre`, select_lr, and the gradient-noise
// cap where the trials carry a noise_ratio; choose_lr without the batch and τ rounds, which need the
// binary's data and model. Throws std::invalid_argument when no grid step is stable.
LrChoice search_lr(double centre, int64_t steps_per_trial, const LrSearch::Trial& trial,
                   const LrSearch::Say& say = {});

// Runs the search for `config` (its sampler.lr is ignored). `say`, where given, hears a line as the
// search starts and one per trial (the pilot can take minutes).
LrChoice choose_lr(const ExperimentConfig& config, const RunPlace& place = {},
                   const std::function<void(const std::string&)>& say = {});

// Seconds a training step of `setup` takes at minibatch size `batch` (the least of 3 timings of 10
// steps, after 3 steps of warm-up), at its sampler's step size; the steps move its parameters.
double step_seconds(RunSetup& setup, int64_t batch);

// One trial: the config at step size `lr` (<= 0: the sampler's own default) for `steps` steps, scored as above.
LrTrial run_lr_trial(const ExperimentConfig& config, const RunPlace& place, double lr, int64_t steps,
                     const TrialOptions& options = {});

// The step that brings the gradient-noise ratio `ratio` measured at step `measured_at` to at most
// `cap` at step `lr` (the ratio is linear in the step): min(lr, measured_at · cap / ratio); `lr` where
// the ratio is not finite or not positive.
double noise_capped_lr(double lr, double measured_at, double ratio, double cap);

}  // namespace sgmcmc
