#include "train/lr_pilot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
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
  return {{"lr", lr},           {"why", why},         {"plateau", {plateau_low, plateau_high}},
          {"steps_per_trial", steps_per_trial}, {"seconds", seconds}, {"trials", t}};
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
    const auto points = eval.pointwise_nll(predictive.summary("val"), val, tau_of(model),
                                           predictive.log_density_sum("val"), predictive.count())
                            .to(torch::kCPU);
    const double nll = points.mean().item<double>();
    if (!std::isfinite(nll)) return t;
    t.val_nll = nll;
    t.points = points;
    t.stable = true;
  } catch (const std::invalid_argument&) {
    throw;  // bad input: not a property of the step size
  } catch (const std::exception&) {
    t.stable = false;  // an overflow inside the step (LibTorch's "cannot be converted ... without overflow")
  }
  return t;
}

bool indistinguishable(const LrTrial& a, const LrTrial& b) {
  if (!a.stable || !b.stable) return false;
  if (!a.points.defined() || !b.points.defined() || a.points.numel() != b.points.numel() || a.points.numel() < 2)
    return a.val_nll == b.val_nll;
  const auto d = (a.points - b.points).to(torch::kFloat64);
  const double mean = d.mean().item<double>(), sd = d.std().item<double>();
  return std::abs(mean) <= 2 * sd / std::sqrt(static_cast<double>(d.numel()));
}

LrSelection select_lr(const std::vector<LrTrial>& trials) {
  std::vector<LrTrial> by_lr(trials);
  std::sort(by_lr.begin(), by_lr.end(), [](const LrTrial& a, const LrTrial& b) { return a.lr < b.lr; });
  int64_t best = -1;
  for (size_t i = 0; i < by_lr.size(); ++i)
    if (by_lr[i].stable && (best < 0 || by_lr[i].val_nll < by_lr[best].val_nll)) best = static_cast<int64_t>(i);
  if (best < 0) throw std::invalid_argument("sampler.lr: auto: no stable trial");
  // the plateau: contiguous in step size, each step indistinguishable from the best
  int64_t lo = best, hi = best;
  while (lo > 0 && indistinguishable(by_lr[lo - 1], by_lr[best])) --lo;
  while (hi + 1 < static_cast<int64_t>(by_lr.size()) && indistinguishable(by_lr[hi + 1], by_lr[best])) ++hi;
  LrSelection s;
  s.best_lr = by_lr[best].lr;
  s.best_nll = by_lr[best].val_nll;
  s.low = by_lr[lo].lr;
  s.high = by_lr[hi].lr;
  // Half the plateau's top: the trials cannot see mixing, which favours the larger steps in a run 50
  // times longer, and the step above the top is measurably worse or unstable, so the run keeps a
  // factor of 2 from it.
  s.lr = s.high / 2;
  s.why = "best validation NLL " + text(s.best_nll) + " at " + text(s.best_lr);
  s.why += lo != hi ? "; " + text(s.low) + " to " + text(s.high) + " score the same on the validation points; half of " +
                          text(s.high) + " chosen"
                    : "; half of it chosen";
  // The stability margin: when a larger step within a factor of 4 of the choice was unstable, the
  // largest stable step tried at or below half the choice (else half the choice): a long run meets
  // more of the gradient noise than a trial.
  for (const auto& t : by_lr)
    if (t.lr > s.lr && t.lr <= s.lr * 4 && !t.stable) {
      s.unstable_at = t.lr;
      break;
    }
  if (s.unstable_at > 0) {
    const double limit = s.lr / 2;
    double lr = limit;
    for (const auto& t : by_lr)
      if (t.lr <= limit && t.stable) lr = t.lr;
    s.lr = lr;
    s.why += "; " + text(s.lr) + " chosen, since " + text(s.unstable_at) + " was unstable";
  }
  return s;
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

  std::set<double> tried;
  auto trial = [&](double lr) {
    if (tried.insert(lr).second) choice.trials.push_back(run_lr_trial(config, place, lr, choice.steps_per_trial));
  };
  // A grid of factors of 4 from 4^-5 to 4^2 times the default step (too small a step underfits in the
  // trial, too large a one is noisy or unstable; the score is not always monotone in between, so the
  // whole grid is scored), then the best refined by factors of 2.
  for (int k = -5; k <= 2; ++k) trial(centre * std::pow(4.0, k));
  if (std::none_of(choice.trials.begin(), choice.trials.end(), [](const LrTrial& t) { return t.stable; }))
    throw std::invalid_argument(config.source + ": sampler.lr: auto found no stable step size between " +
                                text(centre * std::pow(4.0, -5)) + " and " + text(centre * 16) +
                                " (check the data, the model and the prior; or give sampler.lr)");
  const double best = select_lr(choice.trials).best_lr;
  for (double lr : {best * 2, best / 2}) trial(lr);
  const LrSelection pick = select_lr(choice.trials);
  choice.lr = pick.lr;
  choice.plateau_low = pick.low;
  choice.plateau_high = pick.high;
  choice.why = pick.why + " (" + std::to_string(choice.trials.size()) + " trials of " +
               std::to_string(choice.steps_per_trial) + " steps)";
  choice.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return choice;
}

}  // namespace sgmcmc
