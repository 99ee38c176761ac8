// The synthetic experiments of the papers, run by `sgmcmc simulate NAME --out DIR`:
//   gaussian2d         000 Fig. 3: every sampler on the correlated 2-D Gaussian with gradient noise;
//                      covariance error vs autocorrelation time for SGLD and SGHMC over 5 step sizes.
//   fig1               000 Fig. 1: U = −2θ² + θ⁴, ∇Ũ = ∇U + N(0, 4), ε = 0.1: HMC (with MH), naive
//                      SGHMC (no friction) and SGHMC histograms against exp(−U).
//   double-well        002 Figs. 1–2: mSGNHT-E vs mSGNHT-S, KL per step size, thermostat traces.
//   santa-double-well  001's Santa illustration: Santa vs RMSprop started near the local mode.
// Each writes CSV files into the output directory and returns its headline metrics.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sgmcmc::sim {

struct SimulateOptions {
  uint64_t seed = 1;
  // Multiplies every experiment's step counts (tests run with a small scale).
  double scale = 1.0;
};

struct ExperimentResult {
  std::string name;
  std::map<std::string, double> metrics;
  std::vector<std::string> files;  // written, relative to the output directory
};

// (name, one-line description) of every experiment.
const std::vector<std::pair<std::string, std::string>>& experiment_list();

// Runs one experiment, writing its files into `out_dir` (which must exist).
ExperimentResult run_experiment(const std::string& name, const SimulateOptions& options,
                                const std::filesystem::path& out_dir);

// Writes {"seed":..,"scale":..,"experiments":{name:{metric:value}}} to path (nlohmann-json, keys in
// that order, experiments in run order, non-finite values as null).
void write_summary_json(const std::filesystem::path& path, const SimulateOptions& options,
                        const std::vector<ExperimentResult>& results);

}  // namespace sgmcmc::sim
