#include "train/lr_pilot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "compat.h"
#include "core/error_text.h"
#include "train/evaluator.h"
#include "train/gradient_noise.h"
#include "train/minibatches.h"
#include "train/posterior_predictive.h"
#include "train/step_runner.h"

namespace sgmcmc {
namespace {

std::string text(double x) { return number_text(x, 3); }

std::string exact(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

ExperimentConfig with_lr(const ExperimentConfig& config, double lr, double tau) {
  ExperimentConfig c = config;
  if (lr > 0) c.sampler.set("lr", exact(lr));
  if (std::isfinite(tau)) c.model.set("noise_precision", exact(tau));
  c.lr_auto = false;
  c.output.save_samples = "false";
  return c;
}

// Whether the config's likelihood Gibbs-samples a Gaussian noise precision (model.noise_prior: gamma, the
// default of a Gaussian likelihood: models/likelihood.h).
bool samples_noise(const ExperimentConfig& config, const Model& model) {
  OptionMap m = config.model;  // a copy: its read marks stay here
  return model.likelihood_hyperparameters().count("tau") > 0 &&
         m.get_string("noise_prior", "gamma") == "gamma";
}

}  // namespace

LrTrial run_lr_trial(const ExperimentConfig& config, const RunPlace& place, double lr, int64_t steps,
                     const TrialOptions& options) {
  LrTrial t;
  t.lr = lr;
  t.settling = options.gibbs_noise;
  try {
    RunSetup s = make_run_setup(with_lr(config, lr, options.tau), place);
    Model& model = *s.dm.model;
    // Without a validation split (a CSV without data.val_fraction), the trials hold out a sixth of the
    // training rows (a seeded draw, the same for every trial) and train on the rest.
    Batch train = s.dm.data.train, val = s.dm.data.val;
    if (val.size() == 0) {
      auto gen = compat::make_generator(torch::kCPU, config.seed * 2 + 7);
      const auto perm = torch::randperm(train.size(), gen, torch::kLong).to(train.targets.device());
      const int64_t hold = std::max<int64_t>(train.size() / 6, 1);
      val = Batch{train.inputs.index_select(0, perm.slice(0, 0, hold)), train.targets.index_select(0, perm.slice(0, 0, hold))};
      train = Batch{train.inputs.index_select(0, perm.slice(0, hold)), train.targets.index_select(0, perm.slice(0, hold))};
    }
    const int64_t batch = std::min(s.plan.batch_size, train.size());
    const double grad_scale = static_cast<double>(train.size()) / static_cast<double>(batch);
    LossMeter loss(s.dm.device);
    MinibatchStream batches(train.size(), batch, model.minibatch_chains(), s.dm.device, s.gen_dev);
    StepRunner runner(model, *s.sampler, *s.prior, train, grad_scale, batch, loss, /*graph=*/false, s.dm.device,
                      s.gen_dev);
    runner.use_model_backward(s.config.train.backward == "auto");
    const int64_t n = std::min<int64_t>(steps, std::max<int64_t>(s.plan.total_steps, 1));
    Evaluator eval(s.dm.data, s.config.train.eval_batch_size);
    // The score: the validation NLL of the posterior predictive averaged over 8 iterates spread
    // evenly over the trial's last quarter, the quantity the run reports. A single iterate's NLL is
    // noisy and, for a regression likelihood, far from the averaged predictive's (Boston: 3.2 against
    // the run's 2.5 at every step size, so it ranked steps by noise). Over the last quarter only: on
    // App. H.1's 200-step trials an average over the second half rewarded the spread of a noisy early
    // chain and chose 3x the tuned step (docs/first_try.md).
    PosteriorPredictive predictive(s.dm.data.task == Task::kRegression && !s.dm.data.clip);
    const int64_t from = (3 * n) / 4, every = std::max<int64_t>((n - from) / 8, 1);
    // A settling trial draws τ from its conditional 40 times over the trial.
    const int64_t gibbs_every = std::max<int64_t>(n / 40, 1);
    int scored = 0;
    for (int64_t k = 0; k < n; ++k) {
      s.sampler->set_lr(s.schedule->at(k));
      runner.step(batches.next());
      if (k % 25 == 24 && !loss.finite()) return t;  // blown up: unstable
      if (options.gibbs_noise && (k + 1) % gibbs_every == 0) {
        model.gibbs_step_likelihood(train, s.gen_dev);
        const double tau = tau_of(model);
        if (!std::isfinite(tau) || tau <= 0) return t;
      }
      if (k + 1 > from && (k + 1 - from) % every == 0) {
        const double tau = tau_of(model);
        const auto p = eval.predict_chains(model, val);
        if (!torch::isfinite(p).all().item<bool>() || !std::isfinite(tau)) return t;
        predictive.add("val", p, val.targets, tau);
        predictive.end_sample();
        ++scored;
      }
    }
    if (!loss.finite() || scored == 0) return t;
    const auto points = eval.pointwise_nll(predictive.summary("val"), val, tau_of(model),
                                           predictive.log_density_sum("val"), predictive.count())
                            .to(torch::kCPU);
    const double nll = points.mean().item<double>();
    if (!std::isfinite(nll)) return t;
    t.val_nll = nll;
    t.points = points;
    t.stable = true;
    if (model.likelihood_hyperparameters().count("tau")) t.tau = tau_of(model);
    if (options.gibbs_noise) {
      // The fit's τ̂ from the validation points' residuals (n / Σ r²), not its training residuals: a fit
      // with about as many weights as rows overfits (Boston's 409 rows, 751 weights: τ's Gibbs draw on
      // the training residuals 44–58, the validation points' 6–11, and the run's test NLL 2.63 against
      // 2.52 over splits 0–4), and the pilot would choose a step for a posterior far narrower than the
      // chain's.
      const auto f = eval.predict(model, val).to(torch::kFloat64).reshape(-1);
      const double ss = (f - val.targets.to(torch::kFloat64).reshape(-1)).square().sum().item<double>();
      t.tau = ss > 0 ? static_cast<double>(val.size()) / ss : NAN;
    }
    if (options.probe && s.sampler->checks_gradient_noise()) {
      GradientNoiseProbe probe(config.seed, grad_scale, batch);
      for (double r : probe.ratios(model, *s.sampler, train, n))
        if (std::isfinite(r) && !(r <= t.noise_ratio)) t.noise_ratio = r;
    }
  } catch (const std::invalid_argument&) {
    throw;  // bad input: not a property of the step size
  } catch (const std::exception&) {
    t.stable = false;  // an overflow inside the step (LibTorch's "cannot be converted ... without overflow")
  }
  return t;
}

double step_seconds(RunSetup& s, int64_t batch) {
  const Batch& train = s.dm.data.train;
  const int64_t n = std::min(batch, train.size());
  LossMeter loss(s.dm.device);
  MinibatchStream batches(train.size(), n, s.dm.model->minibatch_chains(), s.dm.device, s.gen_dev);
  StepRunner runner(*s.dm.model, *s.sampler, *s.prior, train, static_cast<double>(train.size()) / n, n, loss,
                    /*graph=*/false, s.dm.device, s.gen_dev);
  runner.use_model_backward(s.config.train.backward == "auto");
  for (int k = 0; k < 3; ++k) runner.step(batches.next());
  double best = INFINITY;
  for (int r = 0; r < 3; ++r) {
    if (s.dm.device.is_cuda()) torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 10; ++k) runner.step(batches.next());
    if (s.dm.device.is_cuda()) torch::cuda::synchronize();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 10);
  }
  return best;
}

namespace {

// What the trials start from: the grid's centre (the sampler's own default step), τ₀, whether τ settles
// by Gibbs steps, and the batch (with train.batch_size auto: the largest doubling of the auto batch whose
// step costs at most kBatchCost times, or whose run takes at most kBatchRunSeconds; timed on one setup:
// the steps move its parameters, read first). Fills choice.batch_size / step_seconds / steps_per_trial.
struct PilotStart {
  double centre = 0, tau0 = NAN;
  bool settle = false;
};

PilotStart start_pilot(ExperimentConfig& config, const RunPlace& place, LrChoice& choice) {
  ExperimentConfig probe_config = config;
  probe_config.output.save_samples = "false";
  RunSetup probe = make_run_setup(probe_config, place);
  const int64_t N = probe.plan.train_size;
  if (N < 12)
    throw std::invalid_argument(config.source + ": sampler.lr: auto needs a training set of at least 12 examples to "
                                "score step sizes on (give a number for sampler.lr)");
  PilotStart p;
  p.centre = probe.sampler->lr();
  p.settle = samples_noise(probe.config, *probe.dm.model) && probe.sampler->is_sampler();
  p.tau0 = tau_of(*probe.dm.model);
  const int64_t n = probe.plan.batch_size;
  if (config.train.batch_size < 0 && probe.sampler->checks_gradient_noise() && n < N) {
    choice.step_seconds_auto = step_seconds(probe, n);
    choice.batch_size = n;
    choice.step_seconds = choice.step_seconds_auto;
    for (int64_t b = std::min(2 * n, N); b <= N; b = b == N ? N + 1 : std::min(2 * b, N)) {
      const double t = step_seconds(probe, b);
      ExperimentConfig at_b = config;
      at_b.train.batch_size = b;
      const double run_seconds = t * static_cast<double>(make_run_plan(at_b, N, true).total_steps);
      if (t > LrChoice::kBatchCost * choice.step_seconds_auto && run_seconds > LrChoice::kBatchRunSeconds) break;
      choice.batch_size = b;
      choice.step_seconds = t;
    }
    config.train.batch_size = choice.batch_size;
  }
  choice.steps_per_trial = pilot_steps(make_run_plan(config, N, probe.plan.collects_samples).total_steps);
  return p;
}

// τ̂ from a fit that does not depend on the step: Adam at its default step (invariant to the gradient's
// scale, so stable whatever τ becomes) for 10 trials' length, with τ's Gibbs step (the prior's and the
// likelihood's balance), τ̂ read from its validation residuals. A sampler's own chain at the first choice
// does not settle: its step, chosen at τ₀, is too large for the curvature at the posterior's τ, and a chain
// that cannot fit keeps τ low (a self-consistent, hot state).
LrTrial tau_fit(const ExperimentConfig& config, const RunPlace& place, int64_t steps) {
  ExperimentConfig fit = config;
  fit.sampler = OptionMap("sampler");
  fit.sampler.set("name", "adam");
  fit.schedule = OptionMap("schedule");
  fit.lr_scaling = "total";
  TrialOptions s;
  s.gibbs_noise = true;
  LrTrial t = run_lr_trial(fit, place, 0, steps, s);
  t.lr = 0;
  return t;
}

}  // namespace

LrChoice choose_lr(const ExperimentConfig& given, const RunPlace& place,
                   const std::function<void(const std::string&)>& say) {
  LrChoice choice;
  ExperimentConfig config = given;
  TrialOptions options;
  options.probe = true;
  LrSearch search(choice, [&](double lr) { return run_lr_trial(config, place, lr, choice.steps_per_trial, options); },
                  say);
  search.tell("sampler.lr: auto: the pilot starts (its data and model, then short trials of step sizes)");
  const PilotStart p = start_pilot(config, place, choice);
  search.tell("sampler.lr: auto: trials of " + std::to_string(choice.steps_per_trial) + " steps around " +
              text(p.centre) +
              (choice.batch_size > 0 ? " at batch " + std::to_string(choice.batch_size) : std::string()));
  std::optional<LrSelection> first = search.round(p.centre, LrSearch::kLow, LrSearch::kHigh);
  if (!first)
    throw std::invalid_argument(config.source + ": sampler.lr: auto found no stable step size between " +
                                text(p.centre * std::pow(4.0, LrSearch::kLow)) + " and " +
                                text(p.centre * std::pow(4.0, LrSearch::kHigh)) +
                                " (check the data, the model and the prior; or give sampler.lr)");
  LrSelection pick = *first;
  std::string tau_why;
  // τ at the posterior's scale (tau_fit). Only a τ̂ well above τ₀ moves the step (a larger τ, a larger
  // curvature and gradient noise: the first choice runs hot); a smaller one leaves it on the safe side. A
  // τ̂ past the health check's limit is a collapse, not a posterior. A point fit's residuals run a little
  // below the noise's, so τ̂ errs high, towards the smaller step.
  if (p.settle) {
    const LrTrial t = tau_fit(config, place, 10 * choice.steps_per_trial);
    search.tell("  fit for tau (Adam): tau " + (t.stable ? text(t.tau) : std::string("unstable")) + " (" +
                std::to_string(std::lround(search.elapsed())) + " s)");
    choice.trials.push_back(t);
    if (t.stable && std::isfinite(t.tau) && t.tau <= 1e7 && t.tau / p.tau0 >= LrChoice::kTauShift) {
      const double next_centre = pick.lr * p.tau0 / t.tau;  // the likelihood's curvature scales with τ
      options.tau = t.tau;
      choice.tau = t.tau;
      tau_why = "; tau fits at " + text(t.tau) + " (from " + text(p.tau0) + "): searched again there";
      if (auto second = search.round(next_centre, LrSearch::kRetryLow, LrSearch::kRetryHigh)) pick = *second;
    }
  }
  search.finish(pick, tau_why);
  return choice;
}

}  // namespace sgmcmc
