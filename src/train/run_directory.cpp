#include "train/run_directory.h"

#include <cstdio>
#include <ctime>
#include <stdexcept>

#include "train/model_io.h"
#include "core/atomic_file.h"
#include "core/remove_tree.h"
#include "core/json_file.h"

namespace fs = std::filesystem;

namespace sgmcmc {

std::string default_run_dir(const std::string& name) {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&now));
  return (fs::path("runs") / (name + "-" + buf)).string();
}

RunDirectory RunDirectory::prepare(const std::string& out_dir, const std::string& config_dir, const std::string& name,
                                   bool resume, bool overwrite, int rank, int world_size) {
  RunDirectory d;
  d.rank_ = rank;
  d.world_ = world_size;
  d.dir_ = !out_dir.empty() ? fs::path(out_dir) : !config_dir.empty() ? fs::path(config_dir) : fs::path(default_run_dir(name));
  const fs::path& dir = d.dir_;
  if (resume) {
    if (!fs::exists(d.checkpoint_path()) && !(world_size > 1 && fs::exists(d.previous_checkpoint_path())))
      throw std::invalid_argument(dir.string() + ": cannot resume, no " + d.checkpoint_path().filename().string() +
                                  " in the run directory");
  } else if (fs::exists(dir) && !(fs::is_directory(dir) && fs::is_empty(dir))) {
    if (!overwrite)
      throw std::invalid_argument(dir.string() +
                                  ": run directory exists (use --overwrite to replace it or --resume to continue it)");
    d.replace_ = true;
  } else if (fs::exists(dir) && !fs::is_directory(dir)) {
    throw std::invalid_argument(dir.string() + ": exists and is not a directory");
  }
  return d;
}

void RunDirectory::commit(const std::string& config_yaml, const std::map<std::string, std::string>& files) {
  if (!writes_run_files()) {  // rank 0 has created the directory (the caller waits for it)
    fs::create_directories(dir_);
    return;
  }
  if (replace_) remove_tree(dir_);
  replace_ = false;
  fs::create_directories(dir_);
  write_file_atomic(file("config.yaml").string(), config_yaml);
  for (const auto& [name, text] : files) write_file_atomic(file(name).string(), text);
}

void RunDirectory::write_summary(const nlohmann::ordered_json& summary) const {
  if (!writes_run_files()) return;
  write_json_file(file("summary.json").string(), summary);
}

void RunDirectory::write_checkpoint(const std::function<void(const std::string&)>& write) const {
  if (world_ > 1 && fs::exists(checkpoint_path())) fs::rename(checkpoint_path(), previous_checkpoint_path());
  replace_file_atomic(checkpoint_path().string(), write);
}

void RunDirectory::save_sample(Model& model, int64_t index, const std::map<std::string, double>& scalars) const {
  fs::create_directories(dir_ / "samples");
  char name[64];
  std::snprintf(name, sizeof name, "sample_%06lld%s.pt", static_cast<long long>(index), rank_suffix().c_str());
  save_parameter_file((dir_ / "samples" / name).string(), model, scalars);
}

void RunDirectory::save_final(Model& model, const std::map<std::string, double>& scalars) const {
  save_parameter_file(file("final" + rank_suffix() + ".pt").string(), model, scalars);
}

}  // namespace sgmcmc
