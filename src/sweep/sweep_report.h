// The reports of a sweep: summary.csv (one row per run) and summary.md (one table per part, the
// selected point, the runs not done), built from the outcomes of sweep_summary.h.
#pragma once

#include <string>
#include <vector>

#include "sweep/sweep_config.h"
#include "sweep/sweep_summary.h"

namespace sgmcmc {

// summary.csv: one row per run: run, part, point, seed, status, every varying key, then the
// metrics (union of all summary.json keys, sorted); empty cells for missing / non-finite values.
std::string summary_csv(const SweepSpec& spec, const std::vector<SweepRun>& runs,
                        const std::vector<RunOutcome>& outcomes);

// summary.md: per part a table per grid point of mean ± std over seeds (sample std) of the select
// metric, the test metric and the report metrics, n done / failed; then the best point by the
// select metric (per group_by group) with its test metric; failed runs listed with their messages.
// Points whose select metric is not finite for every seed are not eligible.
std::string summary_md(const SweepSpec& spec, const std::vector<SweepRun>& runs,
                       const std::vector<RunOutcome>& outcomes);

}  // namespace sgmcmc
