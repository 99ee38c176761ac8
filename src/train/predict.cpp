// sgmcmc predict: the saved samples of a run (or its final parameters) averaged on the data its
// config names, through the same PosteriorPredictive and Evaluator as the training run.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "train/evaluator.h"
#include "train/model_io.h"
#include "train/posterior_predictive.h"
#include "train/run_setup.h"
#include "train/trainer.h"
#include "util/json_file.h"

namespace fs = std::filesystem;

namespace sgmcmc {
namespace {

// samples/*.pt in order, else final.pt.
std::vector<fs::path> parameter_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::is_directory(dir / "samples"))
    for (auto& f : fs::directory_iterator(dir / "samples"))
      if (f.path().extension() == ".pt") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    if (!fs::exists(dir / "final.pt"))
      throw std::invalid_argument(dir.string() + ": no samples/ and no final.pt to predict with");
    files.push_back(dir / "final.pt");
  }
  return files;
}

void write_predict_json(const std::string& path, const Dataset& data, const std::map<std::string, double>& out) {
  nlohmann::ordered_json j = {{"dataset", data.description}};
  for (const auto& [key, x] : out) j[key] = x;
  write_json_file(path, j);
}

}  // namespace

std::map<std::string, double> predict_run(const std::string& run_dir, const std::vector<std::string>& overrides,
                                          const std::string& out_json, bool quiet) {
  fs::path dir(run_dir);
  if (!fs::exists(dir / "config.yaml")) throw std::invalid_argument(run_dir + ": not a run directory (no config.yaml)");
  const ExperimentConfig config = load_config((dir / "config.yaml").string(), overrides);
  DataAndModel dm = load_data_and_model(config);
  Model& model = *dm.model;
  const Dataset& data = dm.data;
  const Evaluator eval(data, config.train.eval_batch_size);
  PosteriorPredictive predictive(data.standardized_targets);
  for (const auto& f : parameter_files(dir)) {
    load_parameter_file(f.string(), model, dm.device);
    const double tau = tau_of(model);
    predictive.add("test", eval.predict_chains(model, data.test), data.test.targets, tau);
    if (data.val.size() > 0) predictive.add("val", eval.predict_chains(model, data.val), data.val.targets, tau);
    predictive.end_sample();
  }
  std::map<std::string, double> out;
  const double tau = tau_of(model);
  for (const std::string split : {"test", "val"})
    if (predictive.has(split))
      add_prefixed(out, split + "_",
                   eval.metrics(predictive.summary(split), split == "test" ? data.test : data.val, tau,
                                predictive.log_density_sum(split), predictive.count()));
  out["samples"] = static_cast<double>(predictive.count());
  if (!out_json.empty()) write_predict_json(out_json, data, out);
  if (!quiet) {
    std::cout << data.description << "\n";
    for (auto& [key, x] : out) std::cout << "  " << key << ": " << x << "\n";
  }
  return out;
}

}  // namespace sgmcmc
