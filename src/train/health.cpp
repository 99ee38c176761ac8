#include "train/health.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/error_text.h"

namespace sgmcmc {
namespace {

std::string num(double x) { return number_text(x, 4); }

double get(const std::map<std::string, double>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? NAN : it->second;
}

}  // namespace

HealthCheck::HealthCheck(bool classification, std::map<std::string, double> trivial, std::string sampler,
                         double temperature)
    : classification_(classification), trivial_(std::move(trivial)), sampler_(std::move(sampler)),
      temperature_(temperature) {}

double HealthCheck::reported(const std::map<std::string, double>& row, const std::string& metric) const {
  const double averaged = get(row, "test_" + metric);
  return std::isfinite(averaged) ? averaged : get(row, "sample_test_" + metric);
}

bool HealthCheck::worse_than_trivial(const std::map<std::string, double>& row) const {
  const std::string metric = classification_ ? "nll" : "rmse";
  const double got = reported(row, metric), trivial = get(trivial_, "test_" + metric);
  return std::isfinite(got) && std::isfinite(trivial) && got > trivial;
}

std::string HealthCheck::trivial_message(const std::map<std::string, double>& row) const {
  const std::string metric = classification_ ? "nll" : "rmse";
  const double loss = get(row, "train_loss");
  // grown by more than a minibatch's noise: a quarter of the loss's scale (a stalled chain's minibatch
  // losses wander by a few hundredths)
  const bool grew = have_first_loss_ && std::isfinite(loss) &&
                    loss > first_loss_ + kGrowthFactor * std::max(std::fabs(first_loss_), 1.0);
  return "the test " + metric + " " + num(reported(row, metric)) + " is worse than the trivial predictor's " +
         num(get(trivial_, "test_" + metric)) + (classification_ ? " (uniform)" : " (the training mean)") +
         (grew ? "; the training loss grew from " + num(first_loss_) + " to " + num(loss) +
                     ": try a smaller sampler.lr (or sampler.lr: auto)"
               : "; the training loss did not grow, so the step is not too large: try a larger sampler.lr or a "
                 "longer run (or sampler.lr: auto)");
}

std::string HealthCheck::stalled_message() {
  return "the chain has stalled: no traced weight, prediction or log-likelihood changed between samples; "
         "sampler.lr is too small to move the parameters: give a larger one (or sampler.lr: auto)";
}

void HealthCheck::fire(int64_t step, const std::string& check, const std::string& message,
                       std::vector<HealthWarning>& out) {
  for (const auto& w : warnings_)
    if (w.check == check) return;  // each check warns once
  warnings_.push_back({step, check, message});
  out.push_back(warnings_.back());
}

std::vector<HealthWarning> HealthCheck::check(int64_t step, const std::map<std::string, double>& row,
                                              const std::map<std::string, double>& precisions) {
  std::vector<HealthWarning> out;
  const std::string advice = "; try a smaller sampler.lr (or sampler.lr: auto)";
  const double loss = get(row, "train_loss");
  if (std::isfinite(loss)) {
    if (!have_first_loss_) {
      first_loss_ = loss;
      have_first_loss_ = true;
    } else if (loss > first_loss_ + kLossFactor * std::max(std::fabs(first_loss_), 1.0)) {
      fire(step, "loss", "the training loss is " + num(loss) + ", far above its first value " + num(first_loss_) +
                             ": the " + sampler_ + " chain is moving away from the data" + advice, out);
    }
  }
  // Mid-run, only a reported predictive (the averaged one, or an optimizer's point estimate) is
  // judged: a sampler's single iterate during burn-in is expected to be poor (BPMF from its random
  // factors is worse than the training mean for its first few thousand steps).
  const std::string metric = classification_ ? "nll" : "rmse";
  if (std::isfinite(get(row, "test_" + metric)) && worse_than_trivial(row))
    fire(step, "trivial", trivial_message(row), out);
  for (const auto& [name, value] : precisions) {
    if (!std::isfinite(value) || (value >= kMinPrecision && value <= kMaxPrecision)) continue;
    fire(step, "precision",
         name + " = " + num(value) + (value < kMinPrecision ? " has collapsed" : " has exploded") + " (outside [" +
             num(kMinPrecision) + ", " + num(kMaxPrecision) + "])" +
             (value < kMinPrecision ? ": the parameters have grown without bound" : ": the parameters have shrunk to zero") +
             advice,
         out);
  }
  return out;
}

std::vector<HealthWarning> HealthCheck::check_gradient_noise(int64_t step, const std::vector<double>& ratios) {
  std::vector<HealthWarning> out;
  double worst = NAN;
  size_t worst_group = 0;
  for (size_t g = 0; g < ratios.size(); ++g)
    if (std::isfinite(ratios[g]) && !(ratios[g] <= worst)) {
      worst = ratios[g];
      worst_group = g;
    }
  if (!std::isfinite(worst)) return out;
  noise_step_ = step;
  noise_ratio_ = worst;
  noise_max_ratio_ = std::max(noise_max_ratio_, worst);
  if (worst > kMaxGradientNoiseRatio)
    fire(step, "noise",
         "the minibatch gradient's noise is " + num(worst) + "x the noise " + sampler_ + " injects" +
             (ratios.size() > 1 ? " (parameter group " + std::to_string(worst_group) + ")" : std::string()) +
             ": the chain samples at an effective temperature of about " + num(temperature_ * (1 + worst)) +
             ", not " + num(temperature_) + ", and its spread is the minibatches', not the posterior's; divide "
             "sampler.lr by " + num(worst / kMaxGradientNoiseRatio * 2) + " or use sampler.lr: auto, or a larger "
             "train.batch_size (docs/calibration.md)",
         out);
  return out;
}

std::string HealthCheck::save_state() const {
  nlohmann::json j;
  j["first_loss"] = first_loss_;
  j["have_first_loss"] = have_first_loss_;
  j["noise"] = {noise_step_, noise_ratio_, noise_max_ratio_};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& w : warnings_) list.push_back({w.step, w.check, w.message});
  j["warnings"] = list;
  return j.dump();
}

void HealthCheck::load_state(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    first_loss_ = j.at("first_loss").get<double>();
    have_first_loss_ = j.at("have_first_loss").get<bool>();
    const auto& n = j.at("noise");
    noise_step_ = n.at(0).get<int64_t>();
    noise_ratio_ = n.at(1).get<double>();
    noise_max_ratio_ = n.at(2).get<double>();
    warnings_.clear();
    for (const auto& w : j.at("warnings"))
      warnings_.push_back({w.at(0).get<int64_t>(), w.at(1).get<std::string>(), w.at(2).get<std::string>()});
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("health state: ") + e.what());
  }
}

nlohmann::ordered_json HealthCheck::to_json(bool final_worse_than_trivial, bool stalled, int64_t step) const {
  nlohmann::ordered_json j;
  j["ok"] = warnings_.empty() && !final_worse_than_trivial && !stalled;
  j["worse_than_trivial"] = final_worse_than_trivial;
  j["stalled"] = stalled;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& w : warnings_) list.push_back({{"step", w.step}, {"check", w.check}, {"message", w.message}});
  if (stalled) list.push_back({{"step", step}, {"check", "stalled"}, {"message", stalled_message()}});
  j["warnings"] = list;
  nlohmann::ordered_json trivial = nlohmann::ordered_json::object();
  for (const auto& [k, v] : trivial_) trivial[k] = v;
  j["trivial"] = trivial;
  if (noise_step_ >= 0)
    j["gradient_noise"] = {{"step", noise_step_},
                           {"ratio", noise_ratio_},
                           {"max_ratio", noise_max_ratio_},
                           {"temperature", temperature_},
                           {"effective_temperature", temperature_ * (1 + noise_ratio_)},
                           {"max_effective_temperature", temperature_ * (1 + noise_max_ratio_)}};
  return j;
}

}  // namespace sgmcmc
