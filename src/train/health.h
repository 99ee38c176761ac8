// The run's health beside the divergence guard: a chain that has blown up into finite nonsense, or a
// Gibbs step that has collapsed a precision, passes the finiteness checks; these checks catch it.
//
// At every evaluation (a metrics row):
//   loss          the training loss (mean per-datum nll of the steps since the last row) above
//                 L0 + 10·max(|L0|, 1), L0 the first row's: the chain has left where it started for
//                 far worse fits;
//   trivial       the reported predictive on test is worse than the trivial predictor: a test NLL above
//                 the uniform predictive's (log K) for classification, a test RMSE above the training
//                 mean's for regression (both computed by the same Evaluator). Mid-run only once there
//                 is one (the averaged predictive after burn-in, an optimizer's iterate); at the end
//                 a sampler without samples is judged by its last iterate;
//   precision     a prior precision λ_g or a likelihood precision τ outside [1e-3, 1e7]: λ < 1e-3 is a
//                 prior standard deviation above 30 (the weights are unconstrained), λ > 1e7 one below
//                 3e-4 (the prior has shrunk the weights to nothing); τ likewise in standardised units.
//   noise         the minibatch gradient's noise r times the noise the sampler injects (train/gradient_noise.h):
//                 the chain then samples at about T·(1 + r), its effective temperature (for SGLD and
//                 SGHMC on a Gaussian target exactly so to first order in the step: the stationary
//                 variance is (T + ηV/(2α))/k for SGHMC, (T + ηV/2)/k for SGLD); the check fires when
//                 that is more than 20 % above T (r > 0.2 in a parameter group). Probed at the 1st,
//                 2nd, 4th, … evaluation.
// (Injected noise swamping the gradient, e.g. a temperature far above 1, shows as the loss and
// trivial checks: the weights wander into finite nonsense.)
// Each check warns once, when it first fires, and is recorded in summary.json's `health`. A run whose
// final predictive is worse than the trivial one exits with kExitUnhealthy (core/signals.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sgmcmc {

struct HealthWarning {
  int64_t step = 0;
  std::string check;    // loss | trivial | precision | noise
  std::string message;  // one line, with what to try
};

class HealthCheck {
 public:
  static constexpr double kLossFactor = 10.0;
  // trivial_message: a final training loss this many times the loss's scale above the first one has grown
  static constexpr double kGrowthFactor = 0.25;
  static constexpr double kMinPrecision = 1e-3, kMaxPrecision = 1e7;
  // r above this: an effective temperature more than 20 % above the one asked for.
  static constexpr double kMaxGradientNoiseRatio = 0.2;

  // `trivial`: the trivial predictor's test metrics (test_nll for classification, test_rmse for
  // regression); `sampler`: named in the advice; `temperature`: the T the sampler was asked for.
  HealthCheck(bool classification, std::map<std::string, double> trivial, std::string sampler,
              double temperature = 1.0);

  // Checks one metrics row and the run's precisions (λ's and τ's by name); returns the warnings that
  // fired for the first time.
  std::vector<HealthWarning> check(int64_t step, const std::map<std::string, double>& row,
                                   const std::map<std::string, double>& precisions);
  // One gradient-noise probe: per sampler group, Sampler::gradient_noise_ratio (NaN: not applicable).
  std::vector<HealthWarning> check_gradient_noise(int64_t step, const std::vector<double>& ratios);
  // Whether `row` (the final one) reports a predictive worse than the trivial one.
  bool worse_than_trivial(const std::map<std::string, double>& row) const;
  // One line for `row`'s reported metric against the trivial predictor's, with what to try: a smaller
  // step where the training loss has grown since the first row, else a larger one or a longer run.
  std::string trivial_message(const std::map<std::string, double>& row) const;
  // The line for a chain that ended stalled (ConvergenceTrace: nothing traced moved between samples).
  static std::string stalled_message();

  const std::vector<HealthWarning>& warnings() const { return warnings_; }
  // T·(1 + the largest gradient-noise ratio probed): the chain's effective temperature at its hottest
  // probe; NaN before a probe (or where the question does not apply).
  double max_effective_temperature() const {
    return noise_step_ >= 0 ? temperature_ * (1 + noise_max_ratio_) : NAN;
  }
  // What a checkpoint keeps (JSON text): the loss's reference, the warnings that fired, the probes'
  // record; a resumed run warns, judges and reports as the uninterrupted one. load_state throws
  // std::invalid_argument on text it did not write.
  std::string save_state() const;
  void load_state(const std::string& text);
  // {"ok", "worse_than_trivial", "stalled", "warnings": [{"step", "check", "message"}], "trivial": {...}, and after a
  // probe "gradient_noise": {"step", "ratio" (the latest probe's, max over groups), "max_ratio",
  // "effective_temperature" (T·(1 + ratio)), "max_effective_temperature", "temperature" (T)}}
  // A final stall (`stalled`) is one more warning there, at `step`, and makes "ok" false.
  nlohmann::ordered_json to_json(bool final_worse_than_trivial, bool stalled = false, int64_t step = 0) const;

 private:
  // The reported test metric of a row: the averaged predictive's, else the current sample's.
  double reported(const std::map<std::string, double>& row, const std::string& metric) const;
  void fire(int64_t step, const std::string& check, const std::string& message, std::vector<HealthWarning>& out);

  bool classification_;
  std::map<std::string, double> trivial_;
  std::string sampler_;
  double temperature_ = 1.0;
  double first_loss_ = 0;
  bool have_first_loss_ = false;
  std::vector<HealthWarning> warnings_;
  int64_t noise_step_ = -1;  // the latest probe's step (-1: none applied)
  double noise_ratio_ = 0, noise_max_ratio_ = 0;
};

}  // namespace sgmcmc
