#include "train/run_plan.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace sgmcmc {

RunPlan make_run_plan(const ExperimentConfig& cfg, int64_t train_size, bool collects_samples) {
  RunPlan p;
  p.train_size = train_size;
  p.batch_size = cfg.train.batch_size;
  p.collects_samples = collects_samples;
  if (p.batch_size > train_size)
    throw std::invalid_argument(cfg.source + ": train.batch_size " + std::to_string(p.batch_size) +
                                " exceeds the training set (" + std::to_string(train_size) + " examples)");
  const int64_t spe = train_size / p.batch_size;
  p.steps_per_epoch = spe;
  p.total_steps = cfg.train.steps > 0 ? cfg.train.steps : cfg.train.epochs * spe;
  p.burn_in_steps = cfg.train.burn_in_steps >= 0 ? cfg.train.burn_in_steps
                                                 : static_cast<int64_t>(std::llround(cfg.train.burn_in * spe));
  if (collects_samples && p.burn_in_steps >= p.total_steps)
    throw std::invalid_argument(cfg.source + ": train.burn_in: burn-in (" + std::to_string(p.burn_in_steps) +
                                " steps) must be shorter than the run (" + std::to_string(p.total_steps) + " steps)");
  p.thin = cfg.train.thin > 0 ? cfg.train.thin : spe;
  p.eval_every = cfg.train.eval_every_steps > 0 ? cfg.train.eval_every_steps : cfg.train.eval_every * spe;
  p.gibbs_every = cfg.prior.gibbs_every_steps > 0 ? cfg.prior.gibbs_every_steps : cfg.prior.gibbs_every_epochs * spe;
  p.gibbs_start = cfg.prior.gibbs_start_steps >= 0 ? cfg.prior.gibbs_start_steps : cfg.prior.gibbs_start_epochs * spe;
  return p;
}

}  // namespace sgmcmc
