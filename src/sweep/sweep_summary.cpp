// Run outcomes: summary.json of a run (nlohmann-json), grid points, statistics over seeds, and the
// selection of the best point on the validation metric.
#include "sweep/sweep_summary.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace sgmcmc {
namespace {

// The scalar value of a summary.json key as a double; false for strings, objects and arrays.
bool scalar_value(const nlohmann::json& v, double& out) {
  if (v.is_null()) out = NAN;
  else if (v.is_boolean()) out = v.get<bool>() ? 1.0 : 0.0;
  else if (v.is_number()) out = v.get<double>();
  else return false;
  return true;
}

std::string group_label(const SweepPart& p, const PointRows& pr) {
  std::string g;
  for (const auto& k : p.select.group_by)
    for (const auto& [kk, v] : pr.values)
      if (kk == k) g += (g.empty() ? "" : " ") + k + "=" + v;
  return g;
}

}  // namespace

std::map<std::string, double> read_summary_json(const std::string& path) {
  std::map<std::string, double> out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;  // a run not started (yet)
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open summary");
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": invalid JSON: " + e.what());
  }
  if (!root.is_object()) throw std::invalid_argument(path + ": expected a JSON object, got " + root.type_name());
  for (const auto& [key, value] : root.items()) {
    double x = NAN;
    if (scalar_value(value, x)) out[key] = x;
  }
  return out;
}

std::vector<PointRows> points_of(size_t part, const std::vector<SweepRun>& runs) {
  std::vector<PointRows> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].part != part) continue;
    if (out.empty() || out.back().label != runs[i].point) {
      PointRows pr;
      pr.label = runs[i].point;
      pr.values = runs[i].varying;
      out.push_back(pr);
    }
    out.back().runs.push_back(i);
  }
  return out;
}

std::string value_at(const PointRows& point, const std::string& key) {
  std::string v;
  for (const auto& [k, x] : point.values)
    if (k == key) v = x;
  return v;
}

Stat stat_of(const std::vector<double>& xs) {
  Stat s;
  std::vector<double> v;
  for (double x : xs)
    if (std::isfinite(x)) v.push_back(x);
  s.n = static_cast<int>(v.size());
  s.all_finite = !xs.empty() && v.size() == xs.size();
  if (v.empty()) return s;
  double m = 0;
  for (double x : v) m += x;
  m /= v.size();
  double q = 0;
  for (double x : v) q += (x - m) * (x - m);
  s.mean = m;
  s.sd = v.size() > 1 ? std::sqrt(q / (v.size() - 1)) : NAN;
  return s;
}

double value_of(const RunOutcome& o, const std::string& key) {
  if (o.status != "done") return NAN;
  auto it = o.values.find(key);
  return it == o.values.end() ? NAN : it->second;
}

Stat point_stat(const PointRows& point, const std::vector<RunOutcome>& outcomes, const std::string& key) {
  std::vector<double> xs;
  for (size_t i : point.runs) xs.push_back(value_of(outcomes[i], key));
  return stat_of(xs);
}

std::map<std::string, std::string> best_points(const SweepSpec& spec, size_t part, const std::vector<SweepRun>& runs,
                                               const std::vector<RunOutcome>& outcomes) {
  const SweepPart& p = spec.parts.at(part);
  std::map<std::string, std::string> best;
  std::map<std::string, double> best_val;
  for (const auto& pr : points_of(part, runs)) {
    Stat s = point_stat(pr, outcomes, p.select.metric);
    if (!s.all_finite) continue;  // a failed or diverged seed disqualifies the point
    std::string g = group_label(p, pr);
    auto it = best_val.find(g);
    if (it == best_val.end() || (p.select.maximize ? s.mean > it->second : s.mean < it->second)) {
      best_val[g] = s.mean;
      best[g] = pr.label;
    }
  }
  return best;
}

}  // namespace sgmcmc
