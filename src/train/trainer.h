// The training loop shared by samplers and optimizers, over any Model and Dataset.
//
// Per step: a minibatch from indices shuffled each epoch (on the device, from the run's generator);
//   Ũ(θ) = (N/n) · nll(batch) + Σ_g λ_g ‖θ_g‖²/2,   ∇Ũ into .grad,   sampler.step(closure).
// Every Gibbs interval: λ_g ~ Gamma(α + n_g/2, β + ‖θ_g‖²/2) (samplers only; the optimizers keep λ
// fixed: it is their weight decay) and the model's likelihood hyperparameters.
// After burn-in, every `thin` steps the current sample's predictive probabilities (or means) on the
// test and validation sets are added to running sums, so samples need not be kept; evaluations
// report the averaged predictive (samplers) or the current iterate (optimizers).
// Run directory: config.yaml (resolved), metrics.csv, summary.json, checkpoint.pt, samples/.
//
// Where things live (src/train/): training_run.h the loop and its phases; run_setup the parts built
// from a config; run_plan the step arithmetic; minibatches the data order; step_runner one step
// (eager or captured); posterior_predictive the running sums; evaluator the metrics of a
// predictive on a split; convergence_trace R̂/ESS; divergence_guard; run_directory and
// metrics_log the files; console what is printed; predict.cpp `sgmcmc predict`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_config.h"
#include "metrics/predictive_metrics.h"
#include "train/run_directory.h"

namespace sgmcmc {

struct RunOptions {
  std::string out_dir;          // run directory ("" = output.dir, else runs/<name>-<timestamp>)
  bool overwrite = false;       // replace an existing run directory
  bool resume = false;          // continue from out_dir/checkpoint.pt
  bool quiet = false;           // no per-evaluation lines on stdout, no progress line
  int64_t stop_after_steps = -1;  // stop (with a checkpoint) once this many steps are done (tests)
  std::string lr_auto_json;     // set by run_training itself: the step-size pilot's record (summary.json)
  // --resume: the keys of this session's --set assignments; sampler.* and schedule.* among them may
  // differ from the checkpoint's config (train/checkpoint_check.h), any other chain key may not.
  std::vector<std::string> set_keys;
};

struct RunSummary {
  std::string run_dir;
  std::map<std::string, double> values;  // the numeric keys of summary.json
  bool finished = false;                 // false when stopped early by stop_after_steps
  int rank = 0;                          // this process's rank in a distributed run (0: prints)
  // The final predictive is worse than the trivial one (train/health.h): `sgmcmc train` exits with
  // kExitUnhealthy after writing everything; `health_message` says what and what to try.
  bool worse_than_trivial = false;
  bool stalled = false;         // a sampler's chain that did not move (the same exit)
  bool require_healthy = true;  // train.require_healthy
  std::string health_message;
};

// Runs (or resumes) a training run. Throws std::invalid_argument for configuration/data errors and
// std::runtime_error for I/O failures.
RunSummary run_training(const ExperimentConfig& config, const RunOptions& options);

// Re-averages the saved samples of a run (or its final parameters if it saved none) on the data set
// its config names, after `overrides` (e.g. "data.dir=/other"). Returns test_/val_ error, nll (or
// rmse) and "samples"; writes them to `out_json` unless empty.
std::map<std::string, double> predict_run(const std::string& run_dir, const std::vector<std::string>& overrides,
                                          const std::string& out_json, bool quiet);

struct PredictOptions {
  std::vector<std::string> overrides;  // --set
  std::string out_json;                // metrics ("" = none)
  // --data FILE.pt: a torch.save dict with "x" (and optionally "y"), or "x_test" (and "y_test");
  // the inputs reach the model as they are. Its predictive replaces the test split's.
  std::string data_file;
  // predictive.pt ("" = none): {"probs" [n, K] and "expected_entropy" [n] | "mean" [n] and
  // "variance" [n], "targets" [n] when known, "ood_probs" (and "ood_expected_entropy") with data.ood,
  // "samples": S, "per_sample": [S, n, K] | [S, n] with `per_sample`}, a dict Python's torch.load
  // opens. Regression outputs in the data's original units.
  std::string predictive_out;
  bool per_sample = false;
  bool quiet = false;
  // --last-sample: a sampler's run without samples/ predicts with its last iterate (final.pt); without
  // it such a run is refused (one sample is not the posterior the run's summary averaged).
  bool last_sample = false;
};
std::map<std::string, double> predict_run(const std::string& run_dir, const PredictOptions& options);

}  // namespace sgmcmc
