// The search over step sizes and the choice among trials (train/lr_pilot.h), apart from the binary's trials
// (lr_pilot.cpp): with the samplers it is all of the core that sgmcmc._C's lr search links, so a module built
// without the trainer (SGMCMC_PYTHON_ONLY) takes it without the models, readers and run setup.
#include "train/lr_pilot.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error_text.h"

namespace sgmcmc {
namespace {

std::string text(double x) { return number_text(x, 3); }

// The gradient-noise cap, from the probed trial nearest the pick: choice.lr ≤ kMaxNoiseRatio's step.
// Returns what it did, for the record ("" when the pick stands).
std::string cap_by_noise(LrChoice& choice, const std::vector<LrTrial>& current, double pick) {
  const LrTrial* nearest = nullptr;
  for (const auto& t : current)
    if (t.stable && std::isfinite(t.noise_ratio) &&
        (!nearest || std::abs(std::log(t.lr / pick)) < std::abs(std::log(nearest->lr / pick))))
      nearest = &t;
  choice.uncapped_lr = pick;
  choice.lr = pick;
  if (!nearest) return "";
  choice.noise_ratio = nearest->noise_ratio * pick / nearest->lr;
  choice.lr = noise_capped_lr(pick, nearest->lr, nearest->noise_ratio, LrChoice::kMaxNoiseRatio);
  if (!(choice.lr < pick)) return "";
  return "; the minibatch noise there is " + text(choice.noise_ratio) + "x the injected, so " + text(choice.lr) +
         " (at most " + text(LrChoice::kMaxNoiseRatio) + "x: effective temperature within " +
         text(100 * LrChoice::kMaxNoiseRatio) + " %)";
}

}  // namespace

nlohmann::ordered_json LrChoice::to_json() const {
  nlohmann::ordered_json t = nlohmann::ordered_json::array();
  for (const auto& x : trials) {
    nlohmann::ordered_json j = {{"lr", x.lr}, {"val_nll", x.stable ? x.val_nll : NAN}, {"stable", x.stable},
                                {"round", x.round}};
    if (x.settling) j["settling"] = true;
    if (std::isfinite(x.tau)) j["tau"] = x.tau;
    if (std::isfinite(x.noise_ratio)) j["noise_ratio"] = x.noise_ratio;
    t.push_back(j);
  }
  nlohmann::ordered_json j = {{"lr", lr},           {"why", why},         {"plateau", {plateau_low, plateau_high}},
                              {"steps_per_trial", steps_per_trial}, {"seconds", seconds}};
  j["uncapped_lr"] = uncapped_lr;
  j["noise_ratio"] = std::isfinite(noise_ratio) ? nlohmann::ordered_json(noise_ratio) : nlohmann::ordered_json();
  j["max_noise_ratio"] = kMaxNoiseRatio;
  j["tau"] = std::isfinite(tau) ? nlohmann::ordered_json(tau) : nlohmann::ordered_json();
  if (batch_size > 0)
    j["batch"] = {{"batch_size", batch_size}, {"step_seconds", step_seconds}, {"step_seconds_auto", step_seconds_auto}};
  j["trials"] = t;
  return j;
}

int64_t pilot_steps(int64_t total_steps) { return std::clamp<int64_t>(total_steps / 50, 100, 1000); }

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

double noise_capped_lr(double lr, double measured_at, double ratio, double cap) {
  if (!(std::isfinite(ratio) && ratio > 0 && measured_at > 0)) return lr;
  return std::min(lr, measured_at * cap / ratio);
}

LrSearch::LrSearch(LrChoice& choice, Trial trial, Say say)
    : choice_(choice), run_(std::move(trial)), say_(std::move(say)) {}

void LrSearch::tell(const std::string& line) const {
  if (say_) say_(line);
}

double LrSearch::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void LrSearch::trial(double lr) {
  if (!tried_.insert(lr).second) return;
  LrTrial t = run_(lr);
  t.round = number_;
  tell("  trial " + std::to_string(choice_.trials.size() + 1) + ": lr " + text(lr) + " -> " +
       (t.stable ? "validation NLL " + text(t.val_nll) : std::string("unstable")) + " (" +
       std::to_string(std::lround(elapsed())) + " s)");
  choice_.trials.push_back(t);
  current_.push_back(t);
}

std::optional<LrSelection> LrSearch::round(double centre, int low, int high) {
  ++number_;
  current_.clear();
  tried_.clear();
  for (int k = low; k <= high; ++k) trial(centre * std::pow(4.0, k));
  if (std::none_of(current_.begin(), current_.end(), [](const LrTrial& t) { return t.stable; })) return std::nullopt;
  const double best = select_lr(current_).best_lr;
  for (double lr : {best * 2, best / 2}) trial(lr);
  return select_lr(current_);
}

void LrSearch::finish(const LrSelection& pick, const std::string& tau_why) {
  const std::string cap_why = cap_by_noise(choice_, current_, pick.lr);
  choice_.plateau_low = pick.low;
  choice_.plateau_high = pick.high;
  std::string batch_why;
  if (choice_.batch_size > 0)
    batch_why = "; batch " + std::to_string(choice_.batch_size) + " (a step " + text(1e3 * choice_.step_seconds) +
                " ms against " + text(1e3 * choice_.step_seconds_auto) + " ms at the auto batch)";
  choice_.why = pick.why + tau_why + cap_why + batch_why + " (" + std::to_string(choice_.trials.size()) +
                " trials of " + std::to_string(choice_.steps_per_trial) + " steps)";
  choice_.seconds = elapsed();
}

LrChoice search_lr(double centre, int64_t steps_per_trial, const LrSearch::Trial& trial, const LrSearch::Say& say) {
  if (!(std::isfinite(centre) && centre > 0))
    throw std::invalid_argument("lr auto: the grid's centre must be a finite step size > 0, got " + text(centre));
  if (steps_per_trial < 1) throw std::invalid_argument("lr auto: a trial needs at least 1 step");
  LrChoice choice;
  choice.steps_per_trial = steps_per_trial;
  LrSearch search(choice, trial, say);
  search.tell("lr auto: trials of " + std::to_string(steps_per_trial) + " steps around " + text(centre));
  const auto pick = search.round(centre, LrSearch::kLow, LrSearch::kHigh);
  if (!pick)
    throw std::invalid_argument("lr auto found no stable step size between " +
                                text(centre * std::pow(4.0, LrSearch::kLow)) + " and " +
                                text(centre * std::pow(4.0, LrSearch::kHigh)) +
                                " (check the model, the data and the loss; or give lr)");
  search.finish(*pick, "");
  return choice;
}

}  // namespace sgmcmc
