// sgmcmc sweep: a thin command-line layer over src/sweep/ (sweep files, expansion, resumable runs,
// summaries). Main form: `sgmcmc sweep configs/sweeps/NAME.yaml [--jobs N] [--dry-run]`; the older
// form `sgmcmc sweep CONFIG.yaml --seeds 1,2,3 --grid key=v1,v2 --set key=value` still works.
#define CXXOPTS_VECTOR_DELIMITER '\x1f'
#include <cxxopts.hpp>

#include "cli/set_options.h"

#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "core/signals.h"
#include "sweep/sweep_config.h"
#include "sweep/sweep_runner.h"

namespace sgmcmc {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

cxxopts::Options sweep_options() {
  cxxopts::Options options("sgmcmc sweep",
                           "Runs a grid of experiments from a sweep file (configs/sweeps/*.yaml; see src/sweep/sweep_config.h),\n"
                           "resumably, then writes OUT/summary.csv and OUT/summary.md. A plain config with --grid/--seeds also works.");
  options.custom_help("SWEEP.yaml [--out DIR] [--jobs N] [--dry-run | --report] [--metric val_error:min]  |  CONFIG.yaml [--seeds 1,2,3] [--grid key=v1,v2]...");
  options.add_options()
      ("file", "sweep file (or a plain config)", cxxopts::value<std::string>())
      ("out", "sweep directory (default runs/sweeps/<sweep name>)", cxxopts::value<std::string>())
      ("jobs", "runs at once (child processes; CPU threads split among them, or CUDA devices round-robin)",
       cxxopts::value<int>()->default_value("1"))
      ("dry-run", "list the runs (and whether each is done, to resume or new); run nothing")
      ("report", "rewrite OUT/summary.csv and summary.md from the runs finished so far; run nothing "
                 "(e.g. after --seeds ran a subset, or while another sweep process runs them)")
      ("metric", "validation metric to select on, METRIC[:min|max] (overrides the file's select.metric)",
       cxxopts::value<std::string>())
      ("seeds", "comma-separated seeds (replace the file's seeds; plain config default 1,2,3)", cxxopts::value<std::string>())
      ("grid", "key=v1,v2,... (plain config only; repeatable; the grid is the product)",
       cxxopts::value<std::vector<std::string>>())
      ("set", "override a config key in every run (repeatable)", cxxopts::value<std::vector<std::string>>())
      ("overwrite", "rerun runs that already finished")
      ("stop-after", "stop each run started now after this many steps, with a checkpoint (testing)",
       cxxopts::value<int64_t>())
      ("q,quiet", "no per-evaluation lines from the runs")
      ("h,help", "show this help");
  options.parse_positional({"file"});
  return options;
}

// The sweep of the command line: a sweep file with its adjustments, or a plain config's sweep.
SweepSpec sweep_of_args(const cxxopts::ParseResult& r) {
  if (!r.count("file")) throw std::invalid_argument("missing SWEEP.yaml (see sgmcmc sweep --help)");
  const std::string file = r["file"].as<std::string>();
  std::vector<std::string> sets, grid, seeds;
  if (r.count("set")) sets = assignments(r["set"].as<std::vector<std::string>>());
  if (r.count("grid")) grid = assignments(r["grid"].as<std::vector<std::string>>());
  if (r.count("seeds")) seeds = split(r["seeds"].as<std::string>(), ',');
  const std::string metric = r.count("metric") ? r["metric"].as<std::string>() : "";
  SweepSpec spec;
  if (is_sweep_file(file)) {
    if (!grid.empty()) throw std::invalid_argument("--grid: only with a plain config; put the grid in the sweep file");
    spec = load_sweep(file);
    adjust_sweep(spec, sets, seeds, metric);
  } else {
    if (seeds.empty() && !r.count("seeds")) seeds = {"1", "2", "3"};
    spec = sweep_of_config(file, sets, grid, seeds);
    adjust_sweep(spec, {}, {}, metric);
  }
  return spec;
}

SweepOptions runner_options(const cxxopts::ParseResult& r) {
  SweepOptions so;
  if (r.count("out")) so.out_dir = r["out"].as<std::string>();
  so.jobs = r["jobs"].as<int>();
  if (so.jobs < 1) throw std::invalid_argument("--jobs: must be >= 1");
  so.dry_run = r.count("dry-run") > 0;
  so.report_only = r.count("report") > 0;
  if (so.dry_run && so.report_only) throw std::invalid_argument("--report and --dry-run: choose one");
  so.overwrite = r.count("overwrite") > 0;
  so.quiet = r.count("quiet") > 0;
  if (r.count("stop-after")) so.stop_after_steps = r["stop-after"].as<int64_t>();
  return so;
}

// Parses, runs and reports; errors are thrown (cmd_sweep turns them into exit statuses).
int run_command(int argc, char** argv) {
  cxxopts::Options options = sweep_options();
  auto r = options.parse(argc, argv);
  if (r.count("help")) {
    std::cout << options.help() << std::endl;
    return 0;
  }
  if (!r.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + r.unmatched()[0] + "'");
  const SweepSpec spec = sweep_of_args(r);
  const SweepOptions so = runner_options(r);
  auto outcomes = run_sweep(spec, so, std::cout);
  if (so.dry_run) return 0;
  int failed = 0;
  for (const auto& o : outcomes) failed += o.status == "failed";
  std::cout << (so.out_dir.empty() ? "runs/sweeps/" + spec.name : so.out_dir) << "/summary.md"
            << (failed ? " (" + std::to_string(failed) + " failed runs)" : "") << "\n";
  return failed ? 1 : 0;
}

}  // namespace

int cmd_sweep(int argc, char** argv) {
  try {
    return run_command(argc, argv);
  } catch (const RunInterrupted& e) {
    std::string m = e.what();
    std::cerr << "sgmcmc sweep: " << m.substr(0, m.find('\n')) << " (run the same sweep again to resume)\n";
    return 128 + e.signal;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "sgmcmc sweep: error: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    std::cerr << "sgmcmc sweep: error: " << m.substr(0, m.find('\n')) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::string m = e.what();
    std::cerr << "sgmcmc sweep: error: " << m.substr(0, m.find('\n')) << "\n";
    return 1;
  }
}

}  // namespace sgmcmc
