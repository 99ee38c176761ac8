// Running a sweep: every run of expand(spec) into OUT/<run name>, resumable, then OUT/summary.csv
// and OUT/summary.md (src/sweep/sweep_report.h).
//
// Per run directory: summary.json with "finished": true -> done, skipped (its summary is reused);
// checkpoint.pt without a finished summary.json -> resumed (RunOptions.resume) with the sweep's
// config; otherwise started afresh (a partial directory is replaced). A run that throws or whose
// child process exits non-zero is "failed" in the summary and does not stop the others; running
// the sweep again retries it.
// jobs == 1: runs in this process, one after another (run_training). jobs > 1: child processes of
// `exe` (`exe train BASE --set ... --out DIR -q`, or `exe train --resume DIR`), at most `jobs` at
// once, each with train.threads = max(1, cores / jobs) (unless the sweep sets train.threads) and, for CUDA configs, device cuda:(slot mod
// device count); their output goes to OUT/logs/<run>.log.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "sweep/sweep_config.h"
#include "sweep/sweep_summary.h"

namespace sgmcmc {

struct SweepOptions {
  std::string out_dir;               // default runs/sweeps/<spec.name>
  int jobs = 1;
  bool dry_run = false;              // list the runs and what would happen to each
  bool report_only = false;          // rewrite summary.csv / summary.md from the runs' directories; run nothing
  bool overwrite = false;            // rerun finished runs too
  bool quiet = false;                // no per-evaluation lines from the runs
  std::string exe = "/proc/self/exe";  // binary for child processes
  int cores = 0;                     // CPU cores to split among jobs (0 = hardware concurrency)
  int64_t stop_after_steps = -1;     // tests: stop every run started/resumed now after this many steps
};

// What happens to a run directory now: "done", "resume" or "new".
std::string run_state(const std::string& run_dir);

// Runs (or lists) the sweep; returns one outcome per run of expand(spec). Writes summary.csv and
// summary.md (not for dry runs). Throws std::invalid_argument when a run's config is invalid
// (every config is checked before anything runs).
std::vector<RunOutcome> run_sweep(const SweepSpec& spec, const SweepOptions& options, std::ostream& log);

}  // namespace sgmcmc
