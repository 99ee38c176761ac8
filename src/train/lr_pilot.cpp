#include "train/lr_pilot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>

#include "compat.h"
#include "core/error_text.h"
#include "train/evaluator.h"
#include "train/minibatches.h"
#include "train/posterior_predictive.h"
#include "train/step_runner.h"

namespace sgmcmc {
namespace {

std::string text(double x) { return number_text(x, 3); }

ExperimentConfig with_lr(const ExperimentConfig& config, double lr) {
  ExperimentConfig c = config;
  std::ostringstream s;
  s.precision(17);
  s << lr;
  c.sampler.set("lr", s.str());
  c.lr_auto = false;
  c.output.save_samples = "false";
  return c;
}

}  // namespace

nlohmann::ordered_json LrChoice::to_json() const {
  nlohmann::ordered_json t = nlohmann::ordered_json::array();
  for (const auto& x : trials) t.push_back({{"lr", x.lr}, {"val_nll", x.stable ? x.val_nll : NAN}, {"stable", x.stable}});
  return {{"lr", lr}, {"why", why}, {"steps_per_trial", steps_per_trial}, {"seconds", seconds}, {"trials", t}};
}

int64_t pilot_steps(int64_t total_steps) { return std::clamp<int64_t>(total_steps / 50, 100, 1000); }

LrTrial run_lr_trial(const ExperimentConfig& config, const RunPlace& place, double lr, int64_t steps) {
  LrTrial t;
  t.lr = lr;
  try {
    RunSetup s = make_run_setup(with_lr(config, lr), place);
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
    MinibatchStream batches(train.size(), batch, model.chains(), s.dm.device, s.gen_dev);
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
    PosteriorPredictive predictive(s.dm.data.standardized_targets);
    const int64_t from = (3 * n) / 4, every = std::max<int64_t>((n - from) / 8, 1);
    int scored = 0;
    for (int64_t k = 0; k < n; ++k) {
      s.sampler->set_lr(s.schedule->at(k));
      runner.step(batches.next());
      if (k % 25 == 24 && !loss.finite()) return t;  // blown up: unstable
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
    const double nll = eval.metrics(predictive.summary("val"), val, tau_of(model), predictive.log_density_sum("val"),
                                    predictive.count()).at("nll");
    if (!std::isfinite(nll)) return t;
    t.val_nll = nll;
    t.stable = true;
  } catch (const std::invalid_argument&) {
    throw;  // bad input: not a property of the step size
  } catch (const std::exception&) {
    t.stable = false;  // an overflow inside the step (LibTorch's "cannot be converted ... without overflow")
  }
  return t;
}

LrChoice choose_lr(const ExperimentConfig& config, const RunPlace& place) {
  const auto start = std::chrono::steady_clock::now();
  LrChoice choice;
  // The sampler's own default step (the config has no lr under auto) is the grid's centre; the plan
  // gives the pilot's length.
  double centre = 0;
  {
    ExperimentConfig probe_config = config;
    probe_config.output.save_samples = "false";
    const RunSetup probe = make_run_setup(probe_config, place);
    if (probe.dm.data.train.size() < 12)
      throw std::invalid_argument(config.source + ": sampler.lr: auto needs a training set of at least 12 examples to "
                                  "score step sizes on (give a number for sampler.lr)");
    choice.steps_per_trial = pilot_steps(probe.plan.total_steps);
    centre = probe.sampler->lr();
  }

  std::map<double, LrTrial> tried;
  auto trial = [&](double lr) -> const LrTrial& {
    auto it = tried.find(lr);
    if (it != tried.end()) return it->second;
    LrTrial t = run_lr_trial(config, place, lr, choice.steps_per_trial);
    choice.trials.push_back(t);
    return tried.emplace(lr, t).first->second;
  };
  auto better = [](const LrTrial& a, const LrTrial& b) { return a.stable && (!b.stable || a.val_nll < b.val_nll); };
  // A grid of factors of 4 from 4^-5 to 4^2 times the default step (too small a step underfits in the
  // trial, too large a one is noisy or unstable; the score is not always monotone in between, so the
  // whole grid is scored), then the best refined by factors of 2.
  LrTrial best;
  for (int k = -5; k <= 2; ++k) {
    const LrTrial& t = trial(centre * std::pow(4.0, k));
    if (better(t, best)) best = t;
  }
  if (!best.stable)
    throw std::invalid_argument(config.source + ": sampler.lr: auto found no stable step size between " +
                                text(centre * std::pow(4.0, -5)) + " and " + text(centre * 16) +
                                " (check the data, the model and the prior; or give sampler.lr)");
  for (double lr : {best.lr * 2, best.lr / 2}) {
    const LrTrial& t = trial(lr);
    if (better(t, best)) best = t;
  }
  // The stability margin: when a larger step within a factor of 4 was unstable, the largest stable
  // step tried at or below half the best (else half the best): a long run meets more of the gradient
  // noise than a trial.
  bool edge = false;
  double unstable_at = 0;
  for (auto it = tried.upper_bound(best.lr); it != tried.end() && it->first <= best.lr * 4; ++it)
    if (!it->second.stable) {
      edge = true;
      unstable_at = it->first;
      break;
    }
  choice.lr = best.lr;
  if (edge) {
    choice.lr = best.lr / 2;
    for (auto it = tried.begin(); it != tried.end() && it->first <= best.lr / 2; ++it)
      if (it->second.stable) choice.lr = it->first;
  }
  choice.why = "best validation NLL " + text(best.val_nll) + " at " + text(best.lr) + " of " +
               std::to_string(choice.trials.size()) + " trials of " + std::to_string(choice.steps_per_trial) +
               " steps" + (edge ? "; " + text(choice.lr) + " chosen, since " + text(unstable_at) + " was unstable" : "");
  choice.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return choice;
}

}  // namespace sgmcmc
