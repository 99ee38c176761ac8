// Sweep files: parsing (one-line errors naming file and key), grid × zip × seeds expansion and run
// names, summaries (selection on the validation metric, never test), resuming a sweep after a
// stopped run (the final summary equals an uninterrupted sweep's), failed runs, --jobs 2 children.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "config/experiment_config.h"
#include "core/dir_lock.h"
#include "sweep/sweep_config.h"
#include "sweep/sweep_report.h"
#include "sweep/sweep_summary.h"
#include "sweep/sweep_runner.h"
#include "tiny_idx.h"
#include "train/trainer.h"
#include "error_of.h"
#include "proc_util.h"

namespace fs = std::filesystem;
using namespace sgmcmc;
using test_util::error_of;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A sweep file in a fresh directory next to an empty base config (base.yaml).
std::string sweep_file(const std::string& dir, const std::string& text) {
  write(fs::path(dir) / "base.yaml", "sampler: {name: sgld, lr: 1.0e-3}\n");
  write(fs::path(dir) / "s.yaml", text);
  return (fs::path(dir) / "s.yaml").string();
}

}  // namespace

TEST(SweepSpec, GridZipSeedsExpansionAndNames) {
  auto dir = test_util::temp_dir("sweep_expand");
  auto spec = load_sweep(sweep_file(dir, R"(
base: base.yaml
set: {train.epochs: 3}
grid:
  sampler.lr: [1.0e-3, 2.0e-3, 4.0e-3]
  model.hidden: [[10], [10, 10]]
zip: {sampler.name: [sgld, sghmc], prior.precision: [1, 10]}
seeds: [1, 2]
)"));
  EXPECT_EQ(spec.name, "s");
  ASSERT_EQ(spec.parts.size(), 1u);
  auto runs = expand(spec);
  // zip (2, varying together) × lr (3) × hidden (2) × seeds (2).
  ASSERT_EQ(runs.size(), 24u);
  // Order: zip slowest, then the grid keys in file order, seeds innermost.
  EXPECT_EQ(runs[0].name, "name=sgld_precision=1_lr=1.0e-3_hidden=10_seed=1");
  EXPECT_EQ(runs[1].name, "name=sgld_precision=1_lr=1.0e-3_hidden=10_seed=2");
  EXPECT_EQ(runs[3].name, "name=sgld_precision=1_lr=1.0e-3_hidden=10_10_seed=2");  // "10,10" made safe
  EXPECT_EQ(runs[23].name, "name=sghmc_precision=10_lr=4.0e-3_hidden=10_10_seed=2");
  EXPECT_EQ(runs[3].point, "name=sgld precision=1 lr=1.0e-3 hidden=10,10");
  EXPECT_EQ(runs[3].seed, "2");
  std::vector<std::string> expect = {"train.epochs=3",  "sampler.name=sgld", "prior.precision=1",
                                     "sampler.lr=1.0e-3", "model.hidden=10,10", "seed=2"};
  EXPECT_EQ(runs[3].overrides, expect);
  std::set<std::string> names;
  for (const auto& r : runs) {
    EXPECT_TRUE(std::regex_match(r.name, std::regex("[A-Za-z0-9._=+-]+"))) << r.name;
    names.insert(r.name);
  }
  EXPECT_EQ(names.size(), runs.size());
  // Stable: a function of the file only.
  auto again = expand(load_sweep(dir + "/s.yaml"));
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].name, again[i].name);
  // Every run's config builds.
  for (const auto& r : runs) EXPECT_NO_THROW(load_config(spec.parts[0].base_path, r.overrides)) << r.name;
}

TEST(SweepSpec, PartsInheritAndPrefixNames) {
  auto dir = test_util::temp_dir("sweep_parts");
  auto spec = load_sweep(sweep_file(dir, R"(
name: two
set: {train.epochs: 3}
seeds: [7]
seed_keys: [seed, data.split]
select: {metric: val_rmse, mode: min}
parts:
  - name: a
    base: base.yaml
    grid: {sampler.lr: [1, 2]}
  - name: b
    base: {sampler: {name: sghmc, lr: 1.0e-4}, data: {format: csv, path: d.csv}}
    set: {sampler.alpha: 0.1}
    seeds: [1, 2]
    select: {metric: val_error, mode: max, group_by: [sampler.lr]}
    grid: {sampler.lr: [3]}
)"));
  ASSERT_EQ(spec.parts.size(), 2u);
  auto runs = expand(spec);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].name, "a/lr=1_seed=7");
  EXPECT_EQ(runs[0].overrides, (std::vector<std::string>{"train.epochs=3", "sampler.lr=1", "seed=7", "data.split=7"}));
  EXPECT_EQ(runs[3].name, "b/lr=3_seed=2");
  EXPECT_EQ(runs[3].overrides,
            (std::vector<std::string>{"train.epochs=3", "sampler.alpha=0.1", "sampler.lr=3", "seed=2", "data.split=2"}));
  EXPECT_EQ(spec.parts[0].select.test, "test_rmse");
  EXPECT_TRUE(spec.parts[1].select.maximize);
  EXPECT_EQ(spec.parts[1].select.test, "test_error");
  EXPECT_FALSE(spec.parts[1].base_inline.empty());
  auto base = materialize_base(spec, 1, dir + "/out");
  EXPECT_EQ(load_config(base, runs[3].overrides).sampler.get_double("alpha", 0), 0.1);
}

TEST(SweepSpec, MalformedFilesGiveOneLineErrorsNamingFileAndKey) {
  auto dir = test_util::temp_dir("sweep_bad");
  struct Case {
    std::string text, key;
  };
  std::vector<Case> cases = {
      {"base: base.yaml\ngrid: {sampler.lr: [1]}\nseed: [1]\n", "seed: unknown key (did you mean 'seeds'?)"},
      {"base: base.yaml\ngrid: {sampler.lr: [1]}\nselect: {metric: val_error, mod: min}\n", "select.mod: unknown key"},
      {"base: base.yaml\nzip: {sampler.name: [sgld, sghmc], sampler.lr: [1, 2, 3]}\n",
       "zip.sampler.lr: zip lists of unequal length (sampler.name has 2 values, sampler.lr has 3)"},
      {"base: base.yaml\ngrid: {sampler.lr: []}\n", "grid.sampler.lr: empty list"},
      {"grid: {sampler.lr: [1, 2]}\n", "base: missing"},
      {"base: nowhere.yaml\n", "base: cannot open config"},
      {"base: base.yaml\ngrid: {sampler.lr: [1, 2}\n", "YAML syntax error at line"},
      {"base: base.yaml\nselect: {metric: test_error}\n", "select.metric: 'test_error' is a test metric"},
      {"base: base.yaml\ngrid: {lr: [1, 2]}\n", "grid.lr: expected a config key"},
      {"base: base.yaml\ngrid: {sampler.lr: [1]}\nzip: {sampler.lr: [2]}\n", "zip.sampler.lr: key varies twice"},
      {"base: base.yaml\nparts:\n  - {grid: {sampler.lr: [1]}}\n", "parts[0].name: missing"},
      {"base: base.yaml\nseeds: [1, x]\n", "seeds: expected non-negative integers"},
  };
  for (const auto& c : cases) {
    std::string file = sweep_file(dir, c.text);
    std::string msg = error_of([&] { load_sweep(file); });
    EXPECT_EQ(msg.rfind(file + ": ", 0), 0u) << c.text << " -> " << msg;
    EXPECT_NE(msg.find(c.key), std::string::npos) << c.text << " -> " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  // Repeated values would give two runs the same directory.
  std::string file = sweep_file(dir, "base: base.yaml\ngrid: {sampler.lr: [1, 1]}\n");
  auto spec = load_sweep(file);
  EXPECT_NE(error_of([&] { expand(spec); }).find("same name"), std::string::npos);
  // The top-level config keys are allowed as sweep keys: chains (a deep ensemble, K chains).
  EXPECT_EQ(load_sweep(sweep_file(dir, "base: base.yaml\nset: {chains: 5}\ngrid: {sampler.lr: [1]}\n")).parts.size(), 1u);
}

// Selection uses the validation metric and reports that point's test metric: point lr=1 has the
// better val_error but the worse test_error, so it must be chosen. A point with a failed seed or a
// non-finite metric is not eligible.
TEST(SweepSummary, BestPointSelectedOnValidationNotTest) {
  auto dir = test_util::temp_dir("sweep_summary");
  auto spec = load_sweep(sweep_file(dir, R"(
base: base.yaml
grid: {sampler.lr: [1, 2, 3]}
seeds: [1, 2]
select: {metric: val_error, report: [test_nll]}
)"));
  auto runs = expand(spec);
  ASSERT_EQ(runs.size(), 6u);
  auto done = [](double val, double test) {
    RunOutcome o;
    o.status = "done";
    o.values = {{"val_error", val}, {"test_error", test}, {"test_nll", 0.5}};
    return o;
  };
  std::vector<RunOutcome> out = {done(0.10, 0.30), done(0.12, 0.32),   // lr=1: val 0.11, test 0.31
                                 done(0.20, 0.01), done(0.22, 0.03),   // lr=2: val 0.21, test 0.02
                                 done(0.01, 0.01), RunOutcome{"failed", "boom", {}}};  // lr=3: a failed seed
  auto best = best_points(spec, 0, runs, out);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[""], "lr=1");
  std::string md = summary_md(spec, runs, out);
  EXPECT_NE(md.find("| 1 | 2/2 | 0.11 ± 0.01414 | 0.31 ± 0.01414 | 0.5 ± 0 | * |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | 1/2 | 0.01 | 0.01 | 0.5 |  |"), std::string::npos) << md;
  EXPECT_NE(md.find("Best by val_error: **lr=1**, val_error 0.11 ± 0.01414, test_error 0.31 ± 0.01414"), std::string::npos) << md;
  EXPECT_NE(md.find("`lr=3_seed=2`: failed (boom)"), std::string::npos) << md;
  // Maximizing picks the other end; a NaN value disqualifies like a failure.
  spec.parts[0].select.maximize = true;
  out[2].values["val_error"] = NAN;
  EXPECT_EQ(best_points(spec, 0, runs, out)[""], "lr=1");
  // summary.csv: a row per run with its varying keys and metrics.
  std::string csv = summary_csv(spec, runs, out);
  EXPECT_NE(csv.find("run,part,point,seed,status,sampler.lr,test_error,test_nll,val_error\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("lr=1_seed=1,,lr=1,1,done,1,0.3,0.5,0.1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("lr=3_seed=2,,lr=3,2,failed,3,,,\n"), std::string::npos) << csv;
}

TEST(SweepSummary, GroupByPicksBestPerGroup) {
  auto dir = test_util::temp_dir("sweep_group");
  auto spec = load_sweep(sweep_file(dir, R"(
base: base.yaml
grid: {sampler.integrator: [euler, ssi], sampler.lr: [1, 2]}
select: {metric: val_rmse, group_by: [sampler.integrator]}
)"));
  auto runs = expand(spec);
  std::vector<RunOutcome> out;
  for (double v : {3.0, 2.0, 1.0, 4.0}) out.push_back(RunOutcome{"done", "", {{"val_rmse", v}, {"test_rmse", 9.0}}});
  auto best = best_points(spec, 0, runs, out);
  EXPECT_EQ(best["sampler.integrator=euler"], "integrator=euler lr=2");
  EXPECT_EQ(best["sampler.integrator=ssi"], "integrator=ssi lr=1");
}

// summary.json through nlohmann-json: top-level numbers (integer, fraction, exponent form, full
// double precision), null -> NaN, true/false -> 1/0; strings, nested objects and arrays skipped.
TEST(SweepSummaryJson, ReadsScalarsAndSkipsTheRest) {
  auto dir = test_util::temp_dir("sweep_json");
  const std::string path = dir + "/summary.json";
  write(path, R"({
  "name": "tiny, \"quoted\"",
  "runtime": {"torch": "1.13", "threads": 4, "nested": {"x": 1}},
  "chains": [1, 2, 3],
  "seed": 12345678901,
  "finished": true,
  "diverged": false,
  "test_error": 0.12345678901234566,
  "test_nll": -1.5e-3,
  "big": 2E+10,
  "val_error": null,
  "steps": 60
}
)");
  auto v = read_summary_json(path);
  std::vector<std::string> keys;
  for (const auto& [k, x] : v) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"big", "diverged", "finished", "seed", "steps", "test_error", "test_nll",
                                            "val_error"}));
  EXPECT_EQ(v["finished"], 1.0);
  EXPECT_EQ(v["diverged"], 0.0);
  EXPECT_EQ(v["seed"], 12345678901.0);
  EXPECT_EQ(v["steps"], 60.0);
  EXPECT_EQ(v["test_error"], 0.12345678901234566);  // every digit kept
  EXPECT_EQ(v["test_nll"], -1.5e-3);
  EXPECT_EQ(v["big"], 2e10);
  EXPECT_TRUE(std::isnan(v["val_error"]));
  // One line, no pretty-printing: the same values.
  write(path, R"({"finished":false,"steps":7,"interrupted":"SIGINT"})");
  v = read_summary_json(path);
  EXPECT_EQ(v.size(), 2u);
  EXPECT_EQ(v["finished"], 0.0);
  EXPECT_EQ(v["steps"], 7.0);
}

TEST(SweepSummaryJson, MissingFileIsEmptyMalformedFileThrows) {
  auto dir = test_util::temp_dir("sweep_json_bad");
  EXPECT_TRUE(read_summary_json(dir + "/nowhere/summary.json").empty());
  for (const std::string text : {"{\"finished\": true, \"steps\": 60\n", "{\"finished\": true,}", "{\"x\": nan}",
                                 "", "[1, 2]", "\"finished\""}) {
    const std::string path = dir + "/summary.json";
    write(path, text);
    std::string msg = error_of([&] { read_summary_json(path); });
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << text << " -> " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  // The runner counts a run with a malformed summary.json as not finished (resumed or rerun).
  write(dir + "/run/summary.json", "{\"finished\": tru");
  EXPECT_EQ(run_state(dir + "/run"), "new");
  write(dir + "/run/checkpoint.pt", "");
  EXPECT_EQ(run_state(dir + "/run"), "resume");
}

namespace {

// A tiny sweep on the 16x16 blob data: SGLD at two step sizes × two seeds, 6 epochs of 10 steps.
std::string tiny_sweep(const std::string& dir) {
  test_util::write_tiny_idx_dir(dir + "/data");
  write(fs::path(dir) / "base.yaml", R"(
name: tiny
data: {dir: )" + dir + R"(/data, val_size: 100}
model: {name: mlp, hidden: [8], activation: relu}
sampler: {name: sgld, lr: 1.0e-3}
train: {epochs: 6, burn_in: 2, batch_size: 50, eval_every: 2}
output: {progress: false}
)");
  write(fs::path(dir) / "tiny_sweep.yaml", R"(
base: base.yaml
grid: {sampler.lr: [5.0e-4, 1.0e-3]}
seeds: [1, 2]
select: {metric: val_error, report: [test_nll, val_nll, samples]}
)");
  return dir + "/tiny_sweep.yaml";
}

// summary.csv without the timing columns.
std::string csv_without_timing(const fs::path& p) {
  std::ifstream in(p);
  std::string header, line, out;
  std::getline(in, header);
  std::vector<std::string> cols;
  std::stringstream hs(header);
  for (std::string c; std::getline(hs, c, ',');) cols.push_back(c);
  auto timing = [](const std::string& c) {
    return c.find("seconds") != std::string::npos || c.find("per_second") != std::string::npos || c.rfind("time.", 0) == 0;
  };
  for (auto& c : cols) out += timing(c) ? "" : c + ",";
  out += "\n";
  while (std::getline(in, line)) {
    std::stringstream ls(line);
    size_t i = 0;
    for (std::string v; std::getline(ls, v, ','); ++i)
      if (!timing(cols.at(i))) out += v + ",";
    out += "\n";
  }
  return out;
}

}  // namespace

// Resume: an uninterrupted sweep A; sweep B where run lr=1.0e-3 seed 1 was stopped after 37 steps
// (a checkpoint, summary.json with finished: false) and the others finished. Re-running B must
// skip the finished runs (their summary.json untouched), resume the stopped one, and give the same
// summary as A (the trainer's resume is exact, test_trainer ResumeEqualsUninterrupted).
TEST(SweepRunner, ResumeAfterStoppedRunEqualsUninterrupted) {
  auto dir = test_util::temp_dir("sweep_resume");
  auto spec = load_sweep(tiny_sweep(dir));
  auto runs = expand(spec);
  ASSERT_EQ(runs.size(), 4u);
  std::ostringstream log_a, log_b1, log_b2, log_dry;
  SweepOptions oa;
  oa.out_dir = dir + "/A";
  oa.quiet = true;
  auto out_a = run_sweep(spec, oa, log_a);
  for (const auto& o : out_a) EXPECT_EQ(o.status, "done");

  SweepOptions ob = oa;
  ob.out_dir = dir + "/B";
  run_sweep(spec, ob, log_b1);
  // Kill one run: replace it by a run stopped after 37 steps.
  const std::string victim = "lr=1.0e-3_seed=1";
  RunOptions ro;
  ro.out_dir = dir + "/B/" + victim;
  ro.overwrite = true;
  ro.quiet = true;
  ro.stop_after_steps = 37;
  EXPECT_FALSE(run_training(load_config(dir + "/base.yaml", runs[2].overrides), ro).finished);
  ASSERT_EQ(runs[2].name, victim);
  EXPECT_EQ(run_state(dir + "/B/" + victim), "resume");
  EXPECT_EQ(run_state(dir + "/B/lr=5.0e-4_seed=1"), "done");
  const std::string other_before = slurp(dir + "/B/lr=5.0e-4_seed=2/summary.json");

  // --report: summaries of what the directories hold, the stopped run as such, nothing run.
  SweepOptions report = ob;
  report.report_only = true;
  std::ostringstream log_report;
  const auto reported = run_sweep(spec, report, log_report);
  EXPECT_NE(log_report.str().find("3 of 4 runs done"), std::string::npos) << log_report.str();
  ASSERT_EQ(reported.size(), 4u);
  EXPECT_NE(reported[2].status, "done");
  EXPECT_EQ(run_state(dir + "/B/" + victim), "resume");
  const std::string csv = slurp(dir + "/B/summary.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;  // header + 4 runs
  EXPECT_NE(csv.find("lr=5.0e-4_seed=2,"), std::string::npos) << csv;
  SweepOptions nowhere = report;
  nowhere.out_dir = dir + "/never_ran";
  EXPECT_NE(error_of([&] { run_sweep(spec, nowhere, log_report); }).find("no sweep directory"), std::string::npos);

  SweepOptions dry = ob;
  dry.dry_run = true;
  run_sweep(spec, dry, log_dry);
  EXPECT_NE(log_dry.str().find("[resume] " + victim), std::string::npos) << log_dry.str();
  EXPECT_NE(log_dry.str().find("[done] lr=5.0e-4_seed=2"), std::string::npos) << log_dry.str();

  auto out_b = run_sweep(spec, ob, log_b2);
  EXPECT_NE(log_b2.str().find("4 runs, 3 done before, 1 to run"), std::string::npos) << log_b2.str();
  EXPECT_NE(log_b2.str().find("== " + victim + " (resuming)"), std::string::npos) << log_b2.str();
  EXPECT_EQ(slurp(dir + "/B/lr=5.0e-4_seed=2/summary.json"), other_before);
  for (const auto& o : out_b) EXPECT_EQ(o.status, "done");
  EXPECT_EQ(slurp(dir + "/A/summary.md"), slurp(dir + "/B/summary.md"));
  EXPECT_EQ(csv_without_timing(dir + "/A/summary.csv"), csv_without_timing(dir + "/B/summary.csv"));
  EXPECT_NE(slurp(dir + "/B/summary.md").find("| 5.0e-4 |"), std::string::npos);  // sanity: has rows
}

// A finished run whose stored config disagrees with what the sweep now sets (a part's `set` edited,
// its name kept) is an error before anything runs, not a silently reused result; --overwrite reruns.
TEST(SweepRunner, ChangedSettingsOfADoneRunAreAnError) {
  auto dir = test_util::temp_dir("sweep_stale");
  auto file = tiny_sweep(dir);
  SweepOptions o;
  o.out_dir = dir + "/S";
  o.quiet = true;
  std::ostringstream log;
  run_sweep(load_sweep(file), o, log);
  // Same run names, one more override: train.eval_every 3 (the stored runs have 2).
  write(fs::path(dir) / "edited.yaml", slurp(file) + "set: {train.eval_every: 3}\n");
  const auto edited = load_sweep(dir + "/edited.yaml");
  const std::string msg = error_of([&] { run_sweep(edited, o, log); });
  EXPECT_NE(msg.find("run lr=5.0e-4_seed=1: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("train.eval_every=2 there, train.eval_every=3 here"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // The same values written differently are the same settings: 5.0e-4 vs the stored 0.0005.
  write(fs::path(dir) / "same.yaml", slurp(file) + "set: {train.eval_every: 2.0, train.threads: 3}\n");
  EXPECT_NO_THROW(run_sweep(load_sweep(dir + "/same.yaml"), o, log));
  SweepOptions over = o;
  over.overwrite = true;
  for (const auto& r : run_sweep(edited, over, log)) EXPECT_EQ(r.status, "done");
}

// A part per sampler with the documented `group_by: [sampler.name]`: a key the part does not vary is one group
// there (it was refused as "not a grid or zip key"); a key no run's config has is one line naming it.
TEST(SweepRunner, GroupByAKeyAPartDoesNotVary) {
  auto dir = test_util::temp_dir("sweep_group_parts");
  tiny_sweep(dir);
  write(fs::path(dir) / "parts.yaml", R"(
base: base.yaml
select: {metric: val_error, group_by: [sampler.name]}
parts:
  - {name: sgld, grid: {sampler.lr: [5.0e-4, 1.0e-3]}}
  - {name: sgd, set: {sampler.name: sgd}, grid: {sampler.lr: [1.0e-2]}}
)");
  SweepOptions o;
  o.out_dir = dir + "/S";
  o.quiet = true;
  o.dry_run = true;
  std::ostringstream log;
  EXPECT_NO_THROW(run_sweep(load_sweep(dir + "/parts.yaml"), o, log)) << log.str();
  write(fs::path(dir) / "bogus.yaml", R"(
base: base.yaml
select: {metric: val_error, group_by: [sampler.nme]}
parts:
  - {name: sgld, grid: {sampler.lr: [5.0e-4]}}
)");
  const std::string msg = error_of([&] { run_sweep(load_sweep(dir + "/bogus.yaml"), o, log); });
  EXPECT_NE(msg.find("select.group_by: 'sampler.nme' is not a key of run"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// --jobs 2 through the binary: child processes (train.threads = 1 each), one run fails
// at run time (batch larger than the training set) and is reported without stopping the others;
// the finished runs equal the in-process results.
TEST(SweepRunner, ChildProcessesAndFailedRun) {
  auto dir = test_util::temp_dir("sweep_jobs");
  auto file = tiny_sweep(dir);
  // train.threads: 1 as in-process (test_main), so the results are bitwise comparable on any machine.
  write(fs::path(dir) / "jobs.yaml", slurp(file) + "zip: {train.batch_size: [50, 100000]}\nset: {train.threads: 1}\n");
  std::string cmd = std::string(SGMCMC_BINARY) + " sweep " + dir + "/jobs.yaml --jobs 2 -q --out " + dir +
                    "/J > " + dir + "/j.log 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_NE(rc, 0);  // failed runs -> exit status 1
  std::string md = slurp(dir + "/J/summary.md");
  EXPECT_NE(md.find("Not done (4)"), std::string::npos) << md;
  EXPECT_NE(md.find("exceeds the training set"), std::string::npos) << md;
  // The batch_size=50 half equals the in-process sweep of the same runs.
  auto spec = load_sweep(dir + "/jobs.yaml");
  auto runs = expand(spec);
  ASSERT_EQ(runs.size(), 8u);
  SweepOptions o;
  o.out_dir = dir + "/I";
  o.quiet = true;
  std::ostringstream log;
  run_sweep(spec, o, log);
  for (size_t i = 0; i < 4; ++i) {
    auto a = read_summary_json(dir + "/J/" + runs[i].name + "/summary.json");
    auto b = read_summary_json(dir + "/I/" + runs[i].name + "/summary.json");
    for (const char* k : {"test_error", "test_nll", "val_error", "samples", "steps"}) EXPECT_EQ(a.at(k), b.at(k)) << runs[i].name << " " << k;
  }
  // Same tables and selection; only the failure messages differ (exit status + stderr line vs exception).
  auto head = [](const std::string& md) { return md.substr(0, md.find("\nNot done")); };
  EXPECT_EQ(head(slurp(dir + "/J/summary.md")), head(slurp(dir + "/I/summary.md")));
  EXPECT_TRUE(fs::exists(dir + "/J/logs"));
}

// A sweep's runs get its SIGTERM and none outlives it: with --jobs 2 and two runs running (each
// holding its directory's lock), SIGTERM to the sweep starts no further run, reaches both runs
// (they stop, resumable, and release their locks) and the sweep exits 128 + 15. After SIGKILL to a
// sweep, which forwards nothing, its runs still end: each was started with PR_SET_PDEATHSIG.
TEST(SweepRunner, SignalsReachTheRunsAndNoneOutlivesTheSweep) {
  auto dir = test_util::temp_dir("sweep_signals");
  auto file = tiny_sweep(dir);
  // Runs far longer than the test: they end only by a signal.
  write(fs::path(dir) / "long.yaml", slurp(file) + "set: {train.epochs: 1000000, train.threads: 1, train.eval_every: 1000}\n");
  const auto runs = expand(load_sweep(dir + "/long.yaml"));
  ASSERT_EQ(runs.size(), 4u);
  auto holders = [&](const std::string& out) {
    int n = 0;
    for (const auto& r : runs) n += DirLock::holder(out + "/" + r.name) != 0;
    return n;
  };
  auto started = [&](const std::string& out) {
    int n = 0;
    for (const auto& r : runs) n += fs::exists(out + "/" + r.name);
    return n;
  };

  const std::string term = dir + "/T";
  const std::vector<std::string> args = {"sweep", dir + "/long.yaml", "--jobs", "2", "-q", "--out"};
  auto start_sweep = [&](const std::string& out) {
    auto a = args;
    a.push_back(out);
    return test_util::spawn_sgmcmc(a, out);
  };
  using test_util::within;
  const pid_t sweep = start_sweep(term);
  ASSERT_TRUE(within(120, [&] { return holders(term) == 2; })) << slurp(term + ".err");
  ASSERT_EQ(::kill(sweep, SIGTERM), 0);
  int status = 0;
  ASSERT_TRUE(within(120, [&] { return ::waitpid(sweep, &status, WNOHANG) == sweep; })) << slurp(term + ".err");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status << " " << slurp(term + ".err");
  EXPECT_EQ(holders(term), 0) << "a run outlived the sweep";
  EXPECT_EQ(started(term), 2) << "a run started after the signal";

  const std::string killed = dir + "/K";
  const pid_t sweep2 = start_sweep(killed);
  ASSERT_TRUE(within(120, [&] { return holders(killed) == 2; })) << slurp(killed + ".err");
  ASSERT_EQ(::kill(sweep2, SIGKILL), 0);
  ASSERT_EQ(::waitpid(sweep2, &status, 0), sweep2);
  EXPECT_TRUE(within(120, [&] { return holders(killed) == 0; })) << "runs outlived a SIGKILLed sweep";
  remove_tree(dir);
}

TEST(SweepCli, PlainConfigFormAndErrors) {
  auto dir = test_util::temp_dir("sweep_cli");
  tiny_sweep(dir);
  std::string bin = SGMCMC_BINARY;
  std::string cmd = bin + " sweep " + dir + "/base.yaml --seeds 3 --grid sampler.lr=1e-3,2e-3 --set train.epochs=4 -q --out " +
                    dir + "/P > " + dir + "/p.log 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir + "/p.log");
  EXPECT_TRUE(fs::exists(dir + "/P/lr=1e-3_seed=3/summary.json"));
  EXPECT_TRUE(fs::exists(dir + "/P/lr=2e-3_seed=3/summary.json"));
  EXPECT_NE(slurp(dir + "/P/summary.md").find("Best by val_error"), std::string::npos);
  // A malformed sweep file: exit status 2 and one line on stderr naming the file and key.
  write(fs::path(dir) / "bad.yaml", "base: base.yaml\ngrid: {sampler.lr: [1]}\nsed: [1]\n");
  cmd = bin + " sweep " + dir + "/bad.yaml --dry-run > " + dir + "/b.log 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  std::string err = slurp(dir + "/b.log");
  EXPECT_EQ(err.rfind("sgmcmc sweep: error: " + dir + "/bad.yaml: sed: unknown key", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // A run whose config is invalid stops the sweep before anything runs.
  write(fs::path(dir) / "bad2.yaml", "base: base.yaml\ngrid: {train.epoch: [1]}\n");
  cmd = bin + " sweep " + dir + "/bad2.yaml --out " + dir + "/B2 > " + dir + "/b2.log 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  EXPECT_NE(slurp(dir + "/b2.log").find("run epoch=1: "), std::string::npos) << slurp(dir + "/b2.log");
  EXPECT_FALSE(fs::exists(dir + "/B2/epoch=1"));
}
