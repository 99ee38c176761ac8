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
// The trials, the choice and the seconds spent go into summary.json ("lr_auto") and the chosen value
// into the run's config.yaml, so a resumed run does not search again.
#pragma once

#include <cstdint>
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
  double lr = 0;
  std::vector<LrTrial> trials;  // in the order tried
  int64_t steps_per_trial = 0;
  double seconds = 0;
  std::string why;              // one line: "best validation NLL 0.412 at 1e-06; ..."
  double plateau_low = 0, plateau_high = 0;  // the steps the validation points cannot tell from the best
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

// Runs the search for `config` (its sampler.lr is ignored).
LrChoice choose_lr(const ExperimentConfig& config, const RunPlace& place = {});

// One trial: the config at step size `lr` for `steps` steps, scored as above.
LrTrial run_lr_trial(const ExperimentConfig& config, const RunPlace& place, double lr, int64_t steps);

}  // namespace sgmcmc
