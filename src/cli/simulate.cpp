// `sgmcmc simulate NAME|all --out DIR`: the papers' synthetic experiments.
#include <cxxopts.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "simulate/experiments.h"

namespace sgmcmc {

int cmd_simulate(int argc, char** argv) {
  namespace fs = std::filesystem;
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
  if (!args.count("name")) {
    std::cerr << "sgmcmc simulate: missing experiment NAME (one of the list in --help, or 'all')\n";
    return 2;
  }
  if (!args.count("out")) {
    std::cerr << "sgmcmc simulate: missing --out DIR\n";
    return 2;
  }
  std::vector<std::string> selected;
  for (const auto& n : args["name"].as<std::vector<std::string>>()) {
    if (n == "all") {
      for (const auto& e : sim::experiment_list()) selected.push_back(e.first);
    } else {
      selected.push_back(n);
    }
  }
  sim::SimulateOptions so;
  so.seed = args["seed"].as<uint64_t>();
  so.scale = args["scale"].as<double>();
  if (!(so.scale > 0) || so.scale > 1000) {
    std::cerr << "sgmcmc simulate: --scale must be in (0, 1000], got " << so.scale << "\n";
    return 2;
  }
  fs::path out = args["out"].as<std::string>();
  if (fs::exists(out / "summary.json") && !args.count("overwrite")) {
    std::cerr << "sgmcmc simulate: " << out.string()
              << " already holds results (summary.json); pass --overwrite or choose another --out\n";
    return 2;
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) {
    std::cerr << "sgmcmc simulate: cannot create " << out.string() << ": " << ec.message() << "\n";
    return 2;
  }
  std::vector<sim::ExperimentResult> results;
  try {
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
  } catch (const std::exception& e) {
    std::cerr << "\nsgmcmc simulate: " << e.what() << "\n";
    return 1;
  }
  std::cout << "wrote " << (out / "summary.json").string() << "\n";
  return 0;
}

}  // namespace sgmcmc
