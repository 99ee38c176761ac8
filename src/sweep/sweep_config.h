// Config-driven sweeps: a sweep file -> runs (name + overrides of a base config) -> summaries.
//
// Sweep file (YAML; unknown keys are errors "<file>: <key>: unknown key (did you mean ...)"):
//   name: mnist_stepsize          # sweep name (default: file stem); output dir runs/sweeps/<name>
//   base: ../mnist_bnn_sgld.yaml  # base config: a path (relative to the sweep file) or an inline mapping
//   set:  {train.epochs: 20}      # overrides applied to every run (dotted keys, as --set)
//   grid: {sampler.lr: [1e-5, 2e-5]}          # cartesian product over the keys, in file order
//   zip:                          # lists that vary together; a mapping (one group) or a list of groups;
//     - {sampler.name: [sgd, sgld], sampler.lr: [1e-4, 2e-5]}   # groups multiply with the grid
//   seeds: [1, 2, 3]              # replicates (innermost); default: the base config's seed
//   seed_keys: [seed, data.split] # keys each seed value is assigned to (default [seed])
//   select: {metric: val_error, mode: min, test: test_error, group_by: [sampler.name], report: [test_nll]}
//   parts:                        # optional sub-sweeps, each a mapping with the keys above plus a
//     - {name: mlp, base: ..., grid: ...}   # required `name`; top-level keys are their defaults
//                                           # (`set` lists are concatenated: top first)
// Runs are ordered part, zip/grid point (row-major, first key slowest), seed. Run directory names
// are the part name and "key=value" of every varying key joined by "_" (key = its last dotted
// component when that is unique in the part), e.g. "lr=1e-5_seed=1": stable (a function of the
// file only), readable and filesystem-safe ([A-Za-z0-9._=+-], others -> '_').
//
// This header: the sweep model, parsing (sweep_config.cpp) and expansion into runs
// (sweep_expand.cpp). Run outcomes and aggregation: sweep_summary.h; summary.md/csv: sweep_report.h.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sgmcmc {

using KeyValues = std::vector<std::pair<std::string, std::vector<std::string>>>;

struct SweepSelect {
  std::string metric = "val_error";  // validation metric to select on (never a test_ metric)
  bool maximize = false;             // mode: min | max
  std::string test;                  // reported test metric of the selected point (default test_<metric minus val_>)
  std::vector<std::string> group_by; // best point per value combination of these keys
  std::vector<std::string> report;   // more metrics in the table (mean ± std)
};

struct SweepPart {
  std::string name;                  // "" for a sweep without parts
  std::string base_path;             // resolved path of the base config ("" when inline)
  std::string base_inline;           // inline base config (YAML text)
  std::vector<std::string> set;      // "key=value"
  KeyValues grid;
  std::vector<KeyValues> zip;
  std::vector<std::string> seeds;
  std::vector<std::string> seed_keys = {"seed"};
  SweepSelect select;
};

struct SweepSpec {
  std::string source;                // the sweep file
  std::string name;
  std::vector<SweepPart> parts;      // at least one
};

struct SweepRun {
  std::string name;                  // directory name, unique within the sweep ("part/..." for parts)
  size_t part = 0;                   // index into SweepSpec::parts
  std::string point;                 // grid point label: the varying keys except the seed keys
  std::string seed;                  // "" when the sweep has no seeds
  std::vector<std::pair<std::string, std::string>> varying;  // varying key -> value (grid, zip, seed keys)
  std::vector<std::string> overrides;  // part.set + varying, as "key=value"
};

// Parses a sweep file. Throws std::invalid_argument "<file>: <key>: <what>" (one line).
SweepSpec load_sweep(const std::string& path);
SweepSpec parse_sweep(const std::string& yaml_text, const std::string& source, const std::string& base_dir = ".");

// True when the file is a sweep file (a mapping with `base:` or `parts:`), false for a plain config.
bool is_sweep_file(const std::string& path);

// A sweep of a plain config: `set` for every run, grid "key=v1,v2,..." entries, seeds (may be empty).
SweepSpec sweep_of_config(const std::string& config_path, const std::vector<std::string>& set,
                          const std::vector<std::string>& grid, const std::vector<std::string>& seeds);

// Command-line adjustments of a loaded sweep: extra overrides (appended to every part's set),
// seeds (replace, when non-empty), selection "metric[:min|max]" (when non-empty).
void adjust_sweep(SweepSpec& spec, const std::vector<std::string>& set, const std::vector<std::string>& seeds,
                  const std::string& metric);

// Every run of the sweep, in order. Names are unique (checked).
std::vector<SweepRun> expand(const SweepSpec& spec);

// The filesystem-safe form of a name component.
std::string safe_name(const std::string& text);

// The base config of a part as a file: base_path, or (inline) `dir`/<part or sweep name>.base.yaml written now.
std::string materialize_base(const SweepSpec& spec, size_t part, const std::string& dir);

// The varying keys of a part that make its grid points: zip keys (group by group), then grid keys.
std::vector<std::string> point_keys(const SweepPart& part);

// Short names of varying keys: the last dotted component when that is unique among `keys`.
std::map<std::string, std::string> short_names(const std::vector<std::string>& keys);

}  // namespace sgmcmc
