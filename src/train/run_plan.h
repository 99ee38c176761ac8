// The run's schedule in steps: how long, when to sample, evaluate and take Gibbs steps. Pure
// arithmetic on the config and the training-set size; checked once, before anything runs.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "config/experiment_config.h"

namespace sgmcmc {

struct RunPlan {
  static constexpr int64_t kAutoSteps = 10000;  // train.epochs: auto aims at this many steps
  int64_t train_size = 0;       // N
  int64_t batch_size = 0;       // n (per chain)
  int64_t steps_per_epoch = 1;  // N / n (each shuffled epoch drops its remainder)
  int64_t total_steps = 0;
  int64_t burn_in_steps = 0;
  int64_t thin = 1;             // steps between averaged samples
  int64_t eval_every = 1;       // steps between evaluations
  int64_t gibbs_every = 0;      // steps between Gibbs steps (0 = never)
  int64_t gibbs_start = 0;      // Gibbs steps only after this many steps (prior.gibbs_start_*: a warm-up)
  bool collects_samples = true; // samplers average a posterior predictive; optimizers do not
  // Derived by make_run_setup (the config is never written back):
  bool graph = false;           // the step captured once and replayed (train.graph, auto resolved)
  int64_t graph_steps = 1;      // steps per captured block (train.graph_steps resolved; 1 without graph)
  double base_lr = 0;           // the schedule's base step: sampler.lr, divided by N under lr_scaling: per_datum
  std::map<std::string, double> resolved;  // the `auto` keys and what they became (summary.json "auto")

  // N/n: the minibatch likelihood's scale in Ũ = (N/n)·nll(batch) + prior.
  double grad_scale() const { return static_cast<double>(train_size) / static_cast<double>(batch_size); }
  double epoch(int64_t step) const { return static_cast<double>(step) / static_cast<double>(steps_per_epoch); }

  bool gibbs_due(int64_t step) const { return gibbs_every > 0 && step > gibbs_start && step % gibbs_every == 0; }
  bool sample_due(int64_t step) const {
    return collects_samples && step > burn_in_steps && (step - burn_in_steps) % thin == 0;
  }
  bool eval_due(int64_t step) const { return step % eval_every == 0 || step == total_steps; }
  // The first step after `step` at which a Gibbs step, a sample or an evaluation is due (total_steps
  // at the latest): the steps in between need nothing of the host (train.graph_steps' blocks).
  int64_t next_due(int64_t step) const;
  // At an evaluation step: checkpoint.pt is due every `every_seconds` of wall clock (0: at every
  // evaluation) and at the last step, `since_last` seconds after the previous checkpoint.
  bool checkpoint_due(int64_t step, double every_seconds, double since_last) const {
    return every_seconds <= 0 || step >= total_steps || since_last >= every_seconds;
  }
};

// The plan of `config` for a training set of `train_size` examples. Throws std::invalid_argument
// "<config file>: train...." when the batch exceeds the set or the burn-in is not shorter than the run.
RunPlan make_run_plan(const ExperimentConfig& config, int64_t train_size, bool collects_samples);

}  // namespace sgmcmc
