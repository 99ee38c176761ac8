#include "train/run_plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace sgmcmc {

RunPlan make_run_plan(const ExperimentConfig& cfg, int64_t train_size, bool collects_samples) {
  RunPlan p;
  p.train_size = train_size;
  p.batch_size = cfg.train.batch_size;
  p.collects_samples = collects_samples;
  if (p.batch_size < 0) {  // auto: a fiftieth of the set, 32 to 500 examples (never more than the set)
    p.batch_size = std::min<int64_t>(std::clamp<int64_t>(train_size / 50, 32, 500), std::max<int64_t>(train_size, 1));
    p.resolved["train.batch_size"] = static_cast<double>(p.batch_size);
  }
  if (p.batch_size > train_size)
    throw std::invalid_argument(cfg.source + ": train.batch_size " + std::to_string(p.batch_size) +
                                " exceeds the training set (" + std::to_string(train_size) + " examples)");
  const int64_t spe = train_size / p.batch_size;
  p.steps_per_epoch = spe;
  int64_t epochs = cfg.train.epochs;
  if (cfg.train.steps <= 0 && epochs < 0) {  // auto: about RunPlan::kAutoSteps steps, at least 10 epochs
    epochs = std::max<int64_t>((RunPlan::kAutoSteps + spe - 1) / spe, 10);
    p.resolved["train.epochs"] = static_cast<double>(epochs);
  }
  p.total_steps = cfg.train.steps > 0 ? cfg.train.steps : epochs * spe;
  if (cfg.train.burn_in_steps >= 0) {
    p.burn_in_steps = cfg.train.burn_in_steps;
  } else if (cfg.train.burn_in >= 0) {
    p.burn_in_steps = static_cast<int64_t>(std::llround(cfg.train.burn_in * spe));
  } else {  // auto: the first tenth of the run
    p.burn_in_steps = p.total_steps / 10;
    p.resolved["train.burn_in_steps"] = static_cast<double>(p.burn_in_steps);
  }
  if (collects_samples && p.burn_in_steps >= p.total_steps)
    throw std::invalid_argument(cfg.source + ": train.burn_in: burn-in (" + std::to_string(p.burn_in_steps) +
                                " steps) must be shorter than the run (" + std::to_string(p.total_steps) + " steps)");
  p.thin = cfg.train.thin > 0 ? cfg.train.thin : spe;
  p.eval_every = cfg.train.eval_every_steps > 0 ? cfg.train.eval_every_steps : cfg.train.eval_every * spe;
  // Auto epochs of a few steps each (a small set in one or a few batches: thousands of epochs): a sample
  // every thousandth and an evaluation every hundredth of the run, not every epoch.
  if (p.resolved.count("train.epochs") && epochs > 1000) {
    if (cfg.train.thin <= 0) {
      p.thin = std::max<int64_t>(spe, p.total_steps / 1000);
      p.resolved["train.thin"] = static_cast<double>(p.thin);
    }
    if (cfg.train.eval_every_steps <= 0 && cfg.train.eval_every == 1) {
      p.eval_every = std::max<int64_t>(spe, p.total_steps / 100);
      p.resolved["train.eval_every_steps"] = static_cast<double>(p.eval_every);
    }
  }
  p.gibbs_every = cfg.prior.gibbs_every_steps > 0 ? cfg.prior.gibbs_every_steps : cfg.prior.gibbs_every_epochs * spe;
  p.gibbs_start = cfg.prior.gibbs_start_steps >= 0 ? cfg.prior.gibbs_start_steps : cfg.prior.gibbs_start_epochs * spe;
  return p;
}

int64_t RunPlan::auto_graph_steps() const {
  int64_t every = std::min(eval_every, steps_per_epoch);
  if (gibbs_every > 0) every = std::min(every, gibbs_every);
  if (collects_samples) every = std::min(every, thin);
  every = std::max<int64_t>(1, std::min(every, total_steps));
  if (every <= kMaxAutoBlock) return every;
  for (int64_t k = kMaxAutoBlock; 4 * k >= kMaxAutoBlock; --k)
    if (every % k == 0) return k;
  return kMaxAutoBlock;
}

int64_t RunPlan::auto_eval_lag(bool device_queues) const {
  if (!device_queues) return 0;
  int64_t every = eval_every;
  if (gibbs_every > 0) every = std::min(every, gibbs_every);
  return std::min(kAutoEvalLag, every / 2);
}

int64_t RunPlan::next_due(int64_t step) const {
  // the first multiple of `every` above `after`
  const auto next_multiple = [](int64_t after, int64_t every) { return (after / every + 1) * every; };
  int64_t due = std::min(total_steps, next_multiple(step, eval_every));
  if (gibbs_every > 0) due = std::min(due, next_multiple(std::max(step, gibbs_start), gibbs_every));
  if (collects_samples) {
    const int64_t after = std::max(step, burn_in_steps);
    due = std::min(due, burn_in_steps + next_multiple(after - burn_in_steps, thin));
  }
  return std::max(due, step + 1);
}

}  // namespace sgmcmc
