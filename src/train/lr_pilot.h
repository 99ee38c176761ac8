// sampler.lr: auto (also the default when a config gives no lr): the step size chosen for the user by
// short pilot runs, before the run itself.
//
// Each trial starts from the run's own initialisation (same seed), takes `steps` steps of the
// configured sampler at one step size on the training split, and is scored by the validation NLL of
// the posterior predictive averaged over 8 iterates of the trial's last quarter (without a validation
// split, a sixth of the training rows held out for the trials); a trial whose loss or predictions stop
// being finite counts as unstable. The search scores a grid of factors of 4
// from 4^-5 to 4^2 times the sampler's default step, refines the best by factors of 2, and keeps a
// stability margin: when a step up to 4 times the best was unstable, the choice is the largest stable
// step at or below half the best, since a long run meets more of the gradient noise than a trial. The trials, the choice
// and the seconds spent go into summary.json ("lr_auto") and the chosen value into the run's
// config.yaml, so a resumed run does not search again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment_config.h"
#include "train/run_setup.h"

namespace sgmcmc {

struct LrTrial {
  double lr = 0;        // in the config's units (sampler.lr, before lr_scaling)
  double val_nll = 0;   // NaN when unstable
  bool stable = false;
};

struct LrChoice {
  double lr = 0;
  std::vector<LrTrial> trials;  // in the order tried
  int64_t steps_per_trial = 0;
  double seconds = 0;
  std::string why;              // one line: "best validation NLL 0.412 of 9 trials; ..."
  nlohmann::ordered_json to_json() const;
};

// The pilot's length in steps for a run of `total_steps`: a fiftieth of it, 100 to 1,000 steps (about
// 10 trials: a fifth of the run at most, a tenth for App. H.1 in full).
int64_t pilot_steps(int64_t total_steps);

// Runs the search for `config` (its sampler.lr is ignored).
LrChoice choose_lr(const ExperimentConfig& config, const RunPlace& place = {});

// One trial: the config at step size `lr` for `steps` steps; the validation NLL of the last iterate.
LrTrial run_lr_trial(const ExperimentConfig& config, const RunPlace& place, double lr, int64_t steps);

}  // namespace sgmcmc
