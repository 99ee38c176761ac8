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
  int64_t eval_lag = 0;         // steps before a deferred evaluation's row is read (train.eval_lag resolved)
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
  // train.graph_steps: auto where the step is captured: the shortest interval between due events (the
  // evaluation's, the Gibbs step's, the samples' thinning), so that blocks fill the steps between them,
  // up to kMaxAutoBlock steps; a longer interval takes its largest divisor up to kMaxAutoBlock where that
  // is at least kMaxAutoBlock / 4, else kMaxAutoBlock (single steps then finish each interval). On an H200,
  // App. H.1's 100-step epochs as one launch: 40.8–42.2 µs a step against 46.2 (docs/performance.md).
  static constexpr int64_t kMaxAutoBlock = 256;
  int64_t auto_graph_steps() const;
  // train.eval_lag: auto: on a GPU (`device_queues`: the host's work can overlap queued steps)
  // kAutoEvalLag steps, at most half the interval between evaluations or Gibbs steps (a Gibbs step reads
  // a deferred row first); 0 on the CPU, where nothing is queued.
  static constexpr int64_t kAutoEvalLag = 20;
  int64_t auto_eval_lag(bool device_queues) const;
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
