// One training run: the loop and its phases, each a call into a unit with one responsibility.
// Internal to src/train (run_training() is the interface).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/async_read.h"
#include "train/distributed_run.h"
#include "train/console.h"
#include "train/convergence_trace.h"
#include "train/divergence_guard.h"
#include "train/evaluator.h"
#include "train/gradient_noise.h"
#include "train/health.h"
#include "train/metrics_log.h"
#include "train/minibatches.h"
#include "train/phase_clock.h"
#include "train/phase_graph.h"
#include "train/posterior_predictive.h"
#include "train/run_directory.h"
#include "train/run_setup.h"
#include "train/step_runner.h"
#include "train/trainer.h"

namespace sgmcmc {

class TrainingRun {
 public:
  using Clock = std::chrono::steady_clock;

  // Loads the checkpoint when resuming, then creates the run directory: everything that can be
  // wrong with the inputs has been reported before it is touched.
  // `dist`: the process group of a distributed run (train/distributed_run.h); default: one process.
  TrainingRun(RunSetup setup, RunDirectory dir, const RunOptions& options, Clock::time_point start,
              DistributedRun dist = DistributedRun());
  RunSummary run();

 private:
  enum class Stop { kNone, kFinished, kStepLimit, kSignal };

  Stop stop_reason(int signal) const;
  void step();  // one step, or a block of train.graph_steps where one fits (block_fits)
  bool block_fits() const;
  void step_block();
  void gibbs_step();
  void collect_sample();
  void evaluate(bool sample_fresh);
  Metrics evaluation_row(bool sample_fresh, const PosteriorPredictive& predictive);
  // The row in last_ logged, shown and checked (health; `probe`: the gradient-noise probe's ratios when
  // it ran at this evaluation), for the evaluation of `step`.
  void report_evaluation(int64_t step, const std::optional<std::vector<double>>& probe);
  std::optional<std::vector<double>> gradient_noise_probe();
  // train.eval_lag: the deferred evaluation's row read, completed and reported, then (`then_checkpoint`)
  // the checkpoint that follows an evaluation; nothing when none is pending.
  void complete_evaluation(bool then_checkpoint = true);
  // At an evaluation: the state check, then checkpoint.pt if output.checkpoint and it is due
  // (output.checkpoint_every_seconds); `force`: written regardless (a signal's stop).
  void checkpoint(bool force);
  bool checkpoint_due();
  RunSummary finish(Stop stop, int signal);

  // checkpoint.cpp
  void save_checkpoint() const;
  void load_checkpoint(const std::string& file);
  // resume_checks.cpp: the checkpoint's config against this run's (a change that alters the chain is
  // an error); a run that had already finished when resumed (nothing to do, nothing written).
  void check_resumed_config(torch::serialize::InputArchive& ar, const std::string& file) const;
  bool finished_before() const;
  RunSummary already_finished() const;
  bool finished_before_ = false;
  // summary.json from the latest evaluation; `status` adds keys ("diverged", "interrupted").
  RunSummary write_summary(bool finished, const nlohmann::ordered_json& status) const;
  std::map<std::string, double> summary_values() const;
  double session_seconds() const;
  // Since this session's loop began: the rates' clock (the pilot and the setup are not stepping).
  double loop_seconds() const;
  double steps_per_second() const;
  // The scalars saved with a sample or final.pt: step, the prior precisions, τ.
  std::map<std::string, double> state_scalars() const;
  Metrics ood_row(int64_t samples, const PredictiveSummary& current_test, const PosteriorPredictive& predictive);
  torch::Tensor reported_test_prediction();
  int64_t sample_file_stride() const;
  // The config keys left at `auto` and their values for this data set (train/run_plan.h).
  std::map<std::string, double> auto_values() const;
  // The prior's learned precisions and the likelihood's, by name (the health check's input).
  std::map<std::string, double> precisions() const;

  RunSetup s_;
  double temperature_;          // the configured temperature (the cyclical schedule's exploration runs at 0)
  DistributedRun dist_;
  const ExperimentConfig& cfg_;
  Model& model_;
  const Dataset& data_;
  RunDirectory dir_;
  RunOptions opt_;
  Clock::time_point start_, loop_start_;
  PhaseClock phases_;           // summary.json's time.<phase>
  Clock::time_point last_checkpoint_;  // this session's latest checkpoint (its start before the first)
  Evaluator eval_;
  PosteriorPredictive predictive_;
  ConvergenceTrace trace_;
  LossMeter loss_;
  MinibatchStream batches_;
  StepRunner steps_;
  Console console_;
  DivergenceGuard guard_;
  HealthCheck health_;
  GradientNoiseProbe noise_probe_;
  int64_t evaluations_ = 0;     // the run's evaluations so far (GradientNoiseProbe::due)
  std::unique_ptr<MetricsLog> log_;
  int64_t step_ = 0, step_at_start_ = 0, rows_at_resume_ = 0;
  std::string metrics_at_resume_;  // metrics.csv as the checkpoint knew it
  int64_t stride_at_resume_ = -1;  // the checkpoint's save_every_ (-1: not recorded)
  bool told_first_epoch_ = false;
  int64_t save_every_ = 0;      // every how many samples one is written to samples/ (0: none)
  double wall_before_ = 0;
  double gemm_lt_before_ = 0;   // the process's cuBLASLt measuring seconds when this run began
  Metrics last_;                // the latest evaluation row
  torch::Tensor current_test_;  // the current sample's test prediction, when computed at a sample

  // The device halves of collect_sample and evaluation_row (train.graph_epoch captures them; the
  // host halves read their outputs).
  struct SampleOut {
    torch::Tensor test_loglik, weights, predictions;  // the trace's values
    torch::Tensor current_test;          // the chain mean on test
  };
  struct EvalOut {
    MetricsBatch batch = MetricsBatch(true);
    torch::Tensor packed;                // batch.pack(): every value, to be read to the host
    size_t loss_at = 0, state_at = 0;
    bool state = false;                  // θ's finiteness in the batch (DivergenceGuard)
    std::vector<std::pair<std::string, size_t>> queued;  // (metric prefix, batch index)
    torch::Tensor current_test;          // the current iterate's test prediction, as used
    PredictiveSummary now;               // the current iterate's members on test (ood_row)
  };
  SampleOut sample_device(double tau);
  EvalOut evaluation_device(bool sample_fresh, const PosteriorPredictive& predictive, double tau, bool check_state);
  // The inputs' addresses of a captured phase (train/phase_graph.h): θ, the splits, the sums.
  std::vector<int64_t> phase_key(const PosteriorPredictive& predictive) const;
  // An evaluation whose row is read later (train.eval_lag): its device work and the copy of its values
  // are queued at its step; `out` is the phase's outputs, which stay as they are until the next
  // evaluation. Completed `eval_lag` steps later, and always before the next Gibbs step, sample,
  // evaluation and the run's end (so that λ, the predictive and the outputs are still the ones read).
  struct PendingEvaluation {
    Metrics row;                         // the row's host values at its step
    int64_t step = 0;
    double lr = 0;
    int64_t loss_steps = 0;
    EvalOut* out = nullptr;
    AsyncHostRead values;                // out->packed
    AsyncHostRead lambda;                // the Gibbs step's device draw, if the host has not read it
    std::optional<std::vector<double>> probe;  // the gradient-noise probe's ratios (run at the step)
  };
  bool eval_lag_on() const;
  // evaluation_row and the deferred path share its halves: queue_evaluation (at the step), then, once
  // the values are read, host_columns and finish_evaluation.
  void queue_evaluation(bool sample_fresh, const PosteriorPredictive& predictive, PendingEvaluation& p, EvalOut& other);
  void host_columns(Metrics& row) const;
  Metrics finish_evaluation(PendingEvaluation& p, const PosteriorPredictive& predictive);
  void begin_evaluation(bool sample_fresh);
  std::optional<PendingEvaluation> pending_eval_;
  PhaseGraph<SampleOut> sample_graph_;
  PhaseGraph<EvalOut> eval_graph_;
  PhaseGraph<torch::Tensor> gibbs_graph_;  // the prior's draw on the device (GaussianPrior::draw_on_device)
  torch::Tensor sample_count_;  // the predictive's sample count on the device (float64, 0-dim)
  std::map<std::string, double> convergence_all_ranks_;  // chains mode: R̂ / ESS over every rank's chains
};

}  // namespace sgmcmc
