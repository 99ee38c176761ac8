// `sgmcmc simulate NAME|all --out DIR`: the papers' synthetic experiments.
#include <cxxopts.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "simulate/experiments.h"

namespace sgmcmc {
namespace {

namespace fs = std::filesystem;

cxxopts::Options simulate_options() {
  std::string names;
  for (const auto& e : sim::experiment_list()) names += "  " + e.first + ": " + e.second + "\n";
  cxxopts::Options opts("sgmcmc simulate",
                        "Runs synthetic experiments with known answers and writes CSV files and "
                        "summary.json.\n\nExperiments (NAME, or 'all'):\n" + names);
  opts.add_options()
      ("out", "output directory (created)", cxxopts::value<std::string>())
      ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("1"))
      ("scale", "multiplies every experiment's step counts (e.g. 0.1 for a quick look)",
       cxxopts::value<double>()->default_value("1"))
      ("overwrite", "replace the files of an existing output directory")
      ("h,help", "show this help")
      ("name", "experiment", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"name"});
  opts.positional_help("NAME|all");
  return opts;
}

// The experiments named on the command line ('all' expands to every experiment).
std::vector<std::string> selected_experiments(const cxxopts::ParseResult& args) {
  std::vector<std::string> selected;
  for (const auto& n : args["name"].as<std::vector<std::string>>()) {
    if (n == "all") {
      for (const auto& e : sim::experiment_list()) selected.push_back(e.first);
    } else {
      selected.push_back(n);
    }
  }
  return selected;
}

// A usage error in the arguments (missing NAME or --out, --scale out of range), or none.
std::optional<std::string> usage_error(const cxxopts::ParseResult& args) {
  if (!args.count("name")) return "missing experiment NAME (one of the list in --help, or 'all')";
  if (!args.count("out")) return "missing --out DIR";
  const double scale = args["scale"].as<double>();
  if (!(scale > 0) || scale > 1000) {
    std::ostringstream s;
    s << "--scale must be in (0, 1000], got " << scale;
    return s.str();
  }
  return std::nullopt;
}

// Creates the output directory; an error message when it already holds results (without
// --overwrite) or cannot be created.
std::optional<std::string> prepare_out_dir(const fs::path& out, bool overwrite) {
  if (fs::exists(out / "summary.json") && !overwrite)
    return out.string() + " already holds results (summary.json); pass --overwrite or choose another --out";
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return "cannot create " + out.string() + ": " + ec.message();
  return std::nullopt;
}

// Runs the experiments one after another, printing each one's time and metrics, then writes
// summary.json.
void run_experiments(const std::vector<std::string>& selected, const sim::SimulateOptions& so, const fs::path& out) {
  std::vector<sim::ExperimentResult> results;
  for (const auto& n : selected) {
    auto t0 = std::chrono::steady_clock::now();
    std::cout << "simulate " << n << " ..." << std::flush;
    results.push_back(sim::run_experiment(n, so, out));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    results.back().metrics["wall_seconds"] = secs;
    std::cout << " " << secs << " s\n";
    for (const auto& [k, v] : results.back().metrics) std::cout << "  " << k << " = " << v << "\n";
  }
  sim::write_summary_json(out / "summary.json", so, results);
}

}  // namespace

int cmd_simulate(int argc, char** argv) {
  cxxopts::Options opts = simulate_options();
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "sgmcmc simulate: " << e.what() << " (see --help)\n";
    return 2;
  }
  if (args.count("help")) {
    std::cout << opts.help() << "\n";
    return 0;
  }
  const fs::path out = args.count("out") ? args["out"].as<std::string>() : "";
  auto error = usage_error(args);
  if (!error) error = prepare_out_dir(out, args.count("overwrite") > 0);
  if (error) {
    std::cerr << "sgmcmc simulate: " << *error << "\n";
    return 2;
  }
  sim::SimulateOptions so;
  so.seed = args["seed"].as<uint64_t>();
  so.scale = args["scale"].as<double>();
  try {
    run_experiments(selected_experiments(args), so, out);
  } catch (const std::exception& e) {
    std::cerr << "\nsgmcmc simulate: " << e.what() << "\n";
    return 1;
  }
  std::cout << "wrote " << (out / "summary.json").string() << "\n";
  return 0;
}

}  // namespace sgmcmc
