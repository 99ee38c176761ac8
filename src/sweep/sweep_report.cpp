// The reports of a sweep: summary.csv (a row per run) and summary.md (a table per part, the selected
// points, the runs not done).
#include "sweep/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

namespace sgmcmc {
namespace {

// A CSV cell: 6 significant digits, "" for a non-finite value.
std::string fmt(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

std::string fmt4(double v) {
  std::ostringstream s;
  s << std::setprecision(4) << v;
  return s.str();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string stat_text(const Stat& s) {
  if (s.n == 0) return "–";
  return fmt4(s.mean) + (s.n > 1 ? " ± " + fmt4(s.sd) : "");
}

// ---------------------------------------------------------------------------------------------
// summary.csv

// Varying keys of all runs in first-seen order; "seed" has its own column.
std::vector<std::string> csv_keys(const std::vector<SweepRun>& runs) {
  std::vector<std::string> keys;
  for (const auto& r : runs)
    for (const auto& [k, v] : r.varying)
      if (k != "seed" && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  return keys;
}

std::set<std::string> csv_metrics(const std::vector<RunOutcome>& outcomes) {
  std::set<std::string> metrics;
  for (const auto& o : outcomes)
    for (const auto& [k, v] : o.values) metrics.insert(k);
  return metrics;
}

void csv_row(std::ostream& s, const SweepSpec& spec, const SweepRun& r, const RunOutcome& o,
             const std::vector<std::string>& keys, const std::set<std::string>& metrics) {
  s << csv_field(r.name) << "," << csv_field(spec.parts[r.part].name) << "," << csv_field(r.point) << "," << r.seed
    << "," << o.status;
  for (const auto& k : keys) {
    std::string v;
    for (const auto& [kk, vv] : r.varying)
      if (kk == k) v = vv;
    s << "," << csv_field(v);
  }
  for (const auto& m : metrics) {
    auto it = o.values.find(m);
    s << "," << (it == o.values.end() ? "" : fmt(it->second));
  }
  s << "\n";
}

// ---------------------------------------------------------------------------------------------
// summary.md

// The select metric, the test metric and the report metrics, without repeats.
std::vector<std::string> md_metrics(const SweepPart& p) {
  std::vector<std::string> metrics = {p.select.metric, p.select.test};
  for (const auto& m : p.select.report)
    if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
  return metrics;
}

// "Base `...`; set `...`; seeds 1 2 (assigned to `...`)".
void md_part_setup(std::ostream& s, const SweepPart& p) {
  s << "Base `" << (p.base_path.empty() ? std::string("(inline)") : p.base_path) << "`";
  if (!p.set.empty()) {
    s << "; set";
    for (const auto& a : p.set) s << " `" << a << "`";
  }
  if (!p.seeds.empty()) {
    s << "; seeds";
    for (const auto& x : p.seeds) s << " " << x;
    if (p.seed_keys != std::vector<std::string>{"seed"}) {
      s << " (assigned to";
      for (const auto& k : p.seed_keys) s << " `" << k << "`";
      s << ")";
    }
  }
}

// ". Selection: min `val_error` per `key`; `*` = selected."
void md_part_selection(std::ostream& s, const SweepPart& p) {
  s << ". Selection: " << (p.select.maximize ? "max " : "min ") << "`" << p.select.metric << "`";
  if (!p.select.group_by.empty()) {
    s << " per";
    for (const auto& k : p.select.group_by) s << " `" << k << "`";
  }
  s << "; `*` = selected.\n\n";
}

void md_table_header(std::ostream& s, const std::vector<std::string>& keys, const std::vector<std::string>& metrics) {
  auto shorts = short_names(keys);
  s << "|";
  for (const auto& k : keys) s << " " << shorts[k] << " |";
  s << " n |";
  for (const auto& m : metrics) s << " " << m << " |";
  s << " |\n|";
  for (size_t i = 0; i < keys.size() + metrics.size() + 2; ++i) s << "---|";
  s << "\n";
}

// One table row: the point's values, n done / runs, a cell per metric, "*" when selected.
void md_point_row(std::ostream& s, const PointRows& pr, const std::vector<RunOutcome>& outcomes,
                  const std::vector<std::string>& keys, const std::vector<std::string>& metrics, bool selected) {
  s << "|";
  for (const auto& k : keys) s << " " << value_at(pr, k) << " |";
  size_t done = 0;
  for (size_t i : pr.runs) done += outcomes[i].status == "done";
  s << " " << done << "/" << pr.runs.size() << " |";
  for (const auto& m : metrics) s << " " << stat_text(point_stat(pr, outcomes, m)) << " |";
  s << " " << (selected ? "*" : "") << " |\n";
}

// "`run`: status (message)" for every run of the point that is not done.
void collect_not_done(const PointRows& pr, const std::vector<SweepRun>& runs, const std::vector<RunOutcome>& outcomes,
                      std::vector<std::string>& not_done) {
  for (size_t i : pr.runs)
    if (outcomes[i].status != "done")
      not_done.push_back("`" + runs[i].name + "`: " + outcomes[i].status +
                         (outcomes[i].message.empty() ? "" : " (" + outcomes[i].message + ")"));
}

// "- Best [for group] by metric: **label**, metric mean ± sd, ..." per group.
void md_best(std::ostream& s, const SweepPart& p, const std::map<std::string, std::string>& best,
             const std::vector<PointRows>& points, const std::vector<RunOutcome>& outcomes,
             const std::vector<std::string>& metrics) {
  if (best.empty()) s << "No point has a finite `" << p.select.metric << "` for every seed: nothing selected.\n";
  for (const auto& [g, label] : best) {
    s << "- Best" << (g.empty() ? "" : " for " + g) << " by " << p.select.metric << ": **" << label << "**";
    for (const auto& pr : points) {
      if (pr.label != label) continue;
      for (const auto& m : metrics) s << ", " << m << " " << stat_text(point_stat(pr, outcomes, m));
    }
    s << "\n";
  }
}

void md_part(std::ostream& s, const SweepSpec& spec, size_t part, const std::vector<SweepRun>& runs,
             const std::vector<RunOutcome>& outcomes) {
  const SweepPart& p = spec.parts[part];
  const auto metrics = md_metrics(p);
  const auto keys = point_keys(p);
  const auto points = points_of(part, runs);
  const auto best = best_points(spec, part, runs, outcomes);
  std::set<std::string> best_labels;
  for (const auto& [g, l] : best) best_labels.insert(l);
  s << "\n";
  if (!p.name.empty()) s << "## " << p.name << "\n\n";
  md_part_setup(s, p);
  md_part_selection(s, p);
  md_table_header(s, keys, metrics);
  std::vector<std::string> not_done;
  for (const auto& pr : points) {
    md_point_row(s, pr, outcomes, keys, metrics, best_labels.count(pr.label) > 0);
    collect_not_done(pr, runs, outcomes, not_done);
  }
  s << "\n";
  md_best(s, p, best, points, outcomes, metrics);
  if (!not_done.empty()) {
    s << "\nNot done (" << not_done.size() << "):\n";
    for (const auto& f : not_done) s << "- " << f << "\n";
  }
}

}  // namespace

std::string summary_csv(const SweepSpec& spec, const std::vector<SweepRun>& runs, const std::vector<RunOutcome>& outcomes) {
  const auto keys = csv_keys(runs);
  const auto metrics = csv_metrics(outcomes);
  std::ostringstream s;
  s << "run,part,point,seed,status";
  for (const auto& k : keys) s << "," << csv_field(k);
  for (const auto& m : metrics) s << "," << csv_field(m);
  s << "\n";
  for (size_t i = 0; i < runs.size(); ++i) csv_row(s, spec, runs[i], outcomes[i], keys, metrics);
  return s.str();
}

std::string summary_md(const SweepSpec& spec, const std::vector<SweepRun>& runs, const std::vector<RunOutcome>& outcomes) {
  std::ostringstream s;
  s << "# Sweep " << spec.name << "\n\n";
  s << "Sweep file `" << spec.source << "`, " << runs.size()
    << " runs. Cells: mean ± sample std over seeds (one value when n = 1); n = runs done / in the point.\n";
  for (size_t part = 0; part < spec.parts.size(); ++part) md_part(s, spec, part, runs, outcomes);
  return s.str();
}

}  // namespace sgmcmc
