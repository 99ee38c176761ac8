// Outcomes of a sweep's runs: reading a run's summary.json, and aggregating the runs of a grid
// point over seeds (mean ± sample std, selection of the best point on the validation metric).
// The reports built from them: sweep_report.h.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sweep/sweep_config.h"

namespace sgmcmc {

// Outcome of one run, for the summary.
struct RunOutcome {
  std::string status;                     // done | failed | pending
  std::string message;                    // failure message (one line)
  std::map<std::string, double> values;   // numeric keys of summary.json
};

// The scalar top-level keys of a summary.json (a JSON object, parsed with nlohmann-json): numbers
// as doubles, null -> NaN, true/false -> 1/0 (so {"finished": 1/0} is included); strings, objects
// and arrays are skipped. A file that does not exist gives an empty map (a run not started); a
// file that cannot be read or is not a JSON object throws std::invalid_argument("<path>: ...").
std::map<std::string, double> read_summary_json(const std::string& path);

// The runs of one grid point of a part, in run order.
struct PointRows {
  std::string label;                                        // SweepRun::point
  std::vector<std::pair<std::string, std::string>> values;  // varying key -> value (of its first run)
  std::vector<size_t> runs;                                 // indices into the runs
};

// The grid points of part `part`, in run order.
std::vector<PointRows> points_of(size_t part, const std::vector<SweepRun>& runs);

// The value of `key` for a point, "" when it does not vary there.
std::string value_at(const PointRows& point, const std::string& key);

// Mean ± sample std of the finite values of a metric over a point's runs.
struct Stat {
  int n = 0;                // finite values
  double mean = NAN, sd = NAN;  // sd: NaN for n < 2
  bool all_finite = false;  // every run has a finite value (and there is at least one run)
};

Stat stat_of(const std::vector<double>& xs);

// A run's value of `key`: NaN unless the run is done and has the key.
double value_of(const RunOutcome& outcome, const std::string& key);

// stat_of(value_of(...)) over the runs of a point.
Stat point_stat(const PointRows& point, const std::vector<RunOutcome>& outcomes, const std::string& key);

// The best point (label) of each group of a part: group label ("" without group_by) -> point.
// Points whose select metric is not finite for every seed are not eligible.
std::map<std::string, std::string> best_points(const SweepSpec& spec, size_t part, const std::vector<SweepRun>& runs,
                                               const std::vector<RunOutcome>& outcomes);

}  // namespace sgmcmc
