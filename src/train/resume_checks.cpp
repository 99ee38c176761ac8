// What --resume checks beyond the checkpoint's own consistency (checkpoint_check.h): that the run
// goes on with the config its checkpoint was written with, and that there is something left to do.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "train/checkpoint_check.h"
#include "train/training_run.h"

namespace sgmcmc {

void TrainingRun::check_resumed_config(torch::serialize::InputArchive& ar, const std::string& file) const {
  c10::IValue stored;
  if (!ar.try_read(kConfigKey, stored) || !stored.isString()) return;  // a checkpoint of an earlier version
  std::string what;
  const std::string key = first_chain_difference(stored.toStringRef(), to_yaml(cfg_), opt_.set_keys, &what);
  if (key.empty()) return;
  throw std::invalid_argument(file + ": " + key + " differs from the config the checkpoint was written with (" + what +
                              "), which would change the chain; resume with the run's own config (train.epochs / "
                              "train.steps may grow) or start a new run");
}

namespace {

nlohmann::json read_summary(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) return nlohmann::json();
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return nlohmann::json();
  }
}

}  // namespace

// The checkpoint is at the run's last step and summary.json says the run finished there.
bool TrainingRun::finished_before() const {
  if (step_ < s_.plan.total_steps) return false;
  const nlohmann::json j = read_summary(dir_.file("summary.json"));
  return j.is_object() && j.value("finished", false) && j.contains("steps") && j["steps"].is_number() &&
         j["steps"].get<double>() == static_cast<double>(step_);
}

RunSummary TrainingRun::already_finished() const {
  RunSummary s;
  s.run_dir = dir_.path().string();
  s.finished = true;
  s.rank = dist_.rank();
  const nlohmann::json summary = read_summary(dir_.file("summary.json"));
  for (const auto& [k, v] : summary.items())
    if (v.is_number()) s.values[k] = v.get<double>();
  if (dir_.writes_run_files())
    std::cout << cfg_.name << ": already finished at step " << step_
              << "; nothing to do (raise train.epochs or train.steps with --set to extend it)" << std::endl;
  return s;
}

}  // namespace sgmcmc
