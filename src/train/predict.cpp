// sgmcmc predict: the saved samples of a run (or its final parameters) averaged on the data its
// config names, or on a tensors file (--data), through the same PosteriorPredictive and Evaluator as
// the training run; optionally the predictive itself as predictive.pt.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "data/tensors.h"
#include "runtime/cpu.h"
#include "train/evaluator.h"
#include "train/model_io.h"
#include "train/posterior_predictive.h"
#include "train/run_setup.h"
#include "train/trainer.h"
#include "core/error_text.h"
#include "core/json_file.h"

namespace fs = std::filesystem;

namespace sgmcmc {
namespace {

// samples/*.pt in order, else final.pt: an optimizer's point estimate, or a sampler's last iterate
// when `last_sample` allows it. `save_samples`: the run's output.save_samples, to tell a run that kept
// no samples from one whose samples were moved or deleted since.
std::vector<fs::path> parameter_files(const fs::path& dir, bool sampler_run, bool last_sample,
                                      const std::string& save_samples) {
  std::vector<fs::path> files;
  if (fs::is_directory(dir / "samples"))
    for (auto& f : fs::directory_iterator(dir / "samples"))
      if (f.path().extension() == ".pt") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    if (!fs::exists(dir / "final.pt"))
      throw std::invalid_argument(dir.string() + ": no samples/ and no final.pt to predict with");
    if (sampler_run && !last_sample && save_samples == "false")
      throw std::invalid_argument(dir.string() + ": no samples/ to average (the run had output.save_samples: false); "
                                  "rerun with output.save_samples: auto, or predict with its last sample: --last-sample");
    if (sampler_run && !last_sample)
      throw std::invalid_argument(dir.string() + ": no sample files in samples/, though the run writes them (output.save_samples: " +
                                  save_samples + "): were they moved or deleted? Restore them, or predict with the last "
                                  "sample: --last-sample");
    files.push_back(dir / "final.pt");
  }
  return files;
}

void write_predict_json(const std::string& path, const Dataset& data, const std::map<std::string, double>& out) {
  nlohmann::ordered_json j = {{"dataset", data.description}};
  for (const auto& [key, x] : out) j[key] = x;
  write_json_file(path, j);
}

// The split of a --data file: "x"/"y", else "x_test"/"y_test" (targets optional), with the tensors
// format's checks, and inputs shaped like the run's.
Batch read_predict_inputs(const std::string& path, const Dataset& data) {
  const auto dict = read_tensor_dict(path);
  const bool plain = dict.count("x") > 0;
  if (!plain && !dict.count("x_test"))
    throw std::invalid_argument(path + ": x: missing (expected x, optionally y; or x_test, y_test)");
  const std::string x_key = plain ? "x" : "x_test";
  Batch b = read_tensor_split(dict, path, x_key, plain ? "y" : "y_test", data.task, /*targets_required=*/false);
  if (b.inputs.sizes().slice(1) != data.train.inputs.sizes().slice(1))
    throw std::invalid_argument(path + ": " + x_key + ": inputs of shape " + shape_text(b.inputs) +
                                " do not match the run's training inputs " + shape_text(data.train.inputs));
  // a label the run's model has no class for (LibTorch's own error names neither the file nor the label)
  if (data.task == Task::kClassification && b.targets.defined() && b.targets.numel() > 0 && data.num_classes > 0) {
    const int64_t top = b.targets.max().item<int64_t>();
    if (top >= data.num_classes) {
      const int64_t at = b.targets.ge(data.num_classes).nonzero().view(-1)[0].item<int64_t>();
      throw std::invalid_argument(path + ": " + (plain ? std::string("y") : std::string("y_test")) + "[" +
                                  std::to_string(at) + "]: label " + std::to_string(b.targets[at].item<int64_t>()) + " is not a class of the run's " +
                                  std::to_string(data.num_classes) + "-class model (labels 0 to " +
                                  std::to_string(data.num_classes - 1) + ")");
    }
  }
  return b;
}

void write_predictive(const std::string& path, const PosteriorPredictive& predictive, const Dataset& data,
                      const std::vector<torch::Tensor>& per_sample) {
  const PredictiveSummary s = predictive.summary("test");
  const int64_t samples = predictive.count();
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  const double scale = data.standardized_targets ? data.target_scale : 1.0;
  const double shift = data.standardized_targets ? data.target_mean : 0.0;
  const bool cls = data.task == Task::kClassification;
  dict.insert(cls ? "probs" : "mean", (cls ? s.mean : s.mean * scale + shift).to(torch::kFloat32).cpu());
  if (!cls && s.variance.defined()) dict.insert("variance", (s.variance * scale * scale).to(torch::kFloat32).cpu());
  if (cls && s.expected_entropy.defined()) dict.insert("expected_entropy", s.expected_entropy.to(torch::kFloat32).cpu());
  if (data.test.targets.defined() && data.test.size() > 0)
    dict.insert("targets", cls ? data.test.targets.cpu() : (data.test.targets.to(torch::kFloat64) * scale + shift).to(torch::kFloat32).cpu());
  if (cls && predictive.has("ood")) {  // data.ood: the OOD set's predictive, for entropy histograms
    const PredictiveSummary o = predictive.summary("ood");
    dict.insert("ood_probs", o.mean.to(torch::kFloat32).cpu());
    if (o.expected_entropy.defined()) dict.insert("ood_expected_entropy", o.expected_entropy.to(torch::kFloat32).cpu());
  }
  dict.insert("samples", samples);
  if (!per_sample.empty()) {
    auto all = torch::stack(per_sample).to(torch::kFloat32).cpu();
    dict.insert("per_sample", cls ? all : all * scale + shift);
  }
  write_pickle_file(path, c10::IValue(dict));
}

}  // namespace

std::map<std::string, double> predict_run(const std::string& run_dir, const PredictOptions& o) {
  fs::path dir(run_dir);
  if (!fs::exists(dir / "config.yaml")) throw std::invalid_argument(run_dir + ": not a run directory (no config.yaml)");
  const ExperimentConfig config = load_config((dir / "config.yaml").string(), o.overrides);
  set_kernel_settings(config.kernels);  // the run's own choices (its config.yaml)
  set_flush_denormal(config.train.flush_denormal);
  DataAndModel dm = load_data_and_model(config);
  Model& model = *dm.model;
  Dataset& data = dm.data;
  if (!o.data_file.empty()) {
    data.test = read_predict_inputs(o.data_file, data);
    // Raw rows of a run whose loader standardized (a CSV): the training split's standardization, so that
    // the model sees them as it saw its data and the metrics un-standardize once (standardization.json).
    if (data.feature_mean.defined()) {
      auto x = data.test.inputs.to(torch::kFloat64);
      data.test.inputs = ((x - data.feature_mean) / data.feature_scale).to(torch::kFloat32);
    }
    if (data.standardized_targets && data.test.targets.defined())
      data.test.targets = ((data.test.targets.to(torch::kFloat64) - data.target_mean) / data.target_scale).to(torch::kFloat32);
    data.test = Batch{data.test.inputs.to(dm.device), data.test.targets.defined() ? data.test.targets.to(dm.device) : torch::Tensor()};
    data.val = Batch{};
    data.ood = Batch{};
    data.description = o.data_file + " (" + std::to_string(data.test.inputs.size(0)) + " inputs)";
  }
  const bool has_targets = data.test.targets.defined();
  const Evaluator eval(data, config.train.eval_batch_size);
  PosteriorPredictive predictive(data.task == Task::kRegression && !data.clip);
  std::vector<torch::Tensor> per_sample;
  const torch::Tensor none = data.task == Task::kClassification
                                 ? torch::zeros({data.test.inputs.size(0)}, torch::TensorOptions().dtype(torch::kInt64).device(dm.device))
                                 : torch::zeros({data.test.inputs.size(0)}, torch::TensorOptions().device(dm.device));
  bool sampler_run = true;
  for (const auto& e : sampler_registry())
    if (e.name == config.sampler_name()) sampler_run = e.is_sampler;
  for (const auto& f : parameter_files(dir, sampler_run, o.last_sample, config.output.save_samples)) {
    load_parameter_file(f.string(), model, dm.device);
    const double tau = tau_of(model);
    auto mean = predictive.add("test", eval.predict_chains(model, data.test), has_targets ? data.test.targets : none, tau);
    if (o.per_sample) per_sample.push_back(mean);
    if (data.val.size() > 0) predictive.add("val", eval.predict_chains(model, data.val), data.val.targets, tau);
    if (data.ood.size() > 0) predictive.add("ood", eval.predict_chains(model, data.ood), data.ood.targets, tau);
    predictive.end_sample();
  }
  std::map<std::string, double> out;
  const double tau = tau_of(model);
  // new data (--data) reports under its own prefix: its numbers are not the run's test metrics
  const std::string test_prefix = o.data_file.empty() ? "test_" : "data_";
  for (const std::string split : {"test", "val"})
    if (predictive.has(split) && (split == "val" || has_targets))
      add_prefixed(out, split == "test" ? test_prefix : split + "_",
                   eval.metrics(predictive.summary(split), split == "test" ? data.test : data.val, tau,
                                predictive.log_density_sum(split), predictive.count()));
  if (predictive.has("ood"))
    for (const auto& [k, v] : ood_metrics(predictive.summary("test"), predictive.summary("ood"))) out[k] = v;
  out["samples"] = static_cast<double>(predictive.count());
  if (!o.predictive_out.empty())
    write_predictive(o.predictive_out, predictive, data, per_sample);
  if (!o.out_json.empty()) write_predict_json(o.out_json, data, out);
  if (!o.quiet) {
    std::cout << data.description << "\n";
    for (auto& [key, x] : out) std::cout << "  " << key << ": " << x << "\n";
    if (!o.predictive_out.empty()) std::cout << "predictive: " << o.predictive_out << "\n";
  }
  return out;
}

std::map<std::string, double> predict_run(const std::string& run_dir, const std::vector<std::string>& overrides,
                                          const std::string& out_json, bool quiet) {
  PredictOptions o;
  o.overrides = overrides;
  o.out_json = out_json;
  o.quiet = quiet;
  return predict_run(run_dir, o);
}

}  // namespace sgmcmc
