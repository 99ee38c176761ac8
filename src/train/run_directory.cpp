#include "train/run_directory.h"

#include <cstdio>
#include <ctime>
#include <exception>
#include <stdexcept>

#include "train/model_io.h"
#include "core/atomic_file.h"
#include "core/dir_lock.h"
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

bool is_run_directory(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kRunMarker, ec);
}

RunDirectory RunDirectory::prepare(const std::string& out_dir, const std::string& config_dir, const std::string& name,
                                   bool resume, bool overwrite, int rank, int world_size) {
  RunDirectory d;
  d.rank_ = rank;
  d.world_ = world_size;
  d.dir_ = !out_dir.empty() ? fs::path(out_dir) : !config_dir.empty() ? fs::path(config_dir) : fs::path(default_run_dir(name));
  const fs::path& dir = d.dir_;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec)) && !fs::is_directory(dir, ec))
    throw std::invalid_argument(dir.string() + ": exists and is not a directory");
  if (resume) {
    if (!fs::exists(d.checkpoint_path()) && !(world_size > 1 && fs::exists(d.previous_checkpoint_path())))
      throw std::invalid_argument(dir.string() + ": cannot resume, no " + d.checkpoint_path().filename().string() +
                                  " in the run directory");
  } else if (fs::exists(dir) && !fs::is_empty(dir)) {
    if (!overwrite)
      throw std::invalid_argument(dir.string() +
                                  ": run directory exists (use --overwrite to replace it or --resume to continue it)");
    if (!is_run_directory(dir))
      throw std::invalid_argument(dir.string() + ": not a sgmcmc run directory (no " + kRunMarker +
                                  " marker); --overwrite replaces only directories sgmcmc wrote: remove it yourself");
    d.replace_ = true;
  }
  // Early word of a run that holds the directory (nothing is written here; commit() takes the lock).
  if (rank == 0 && fs::is_directory(dir, ec))
    if (const pid_t pid = DirLock::holder(dir.string()); pid > 0)
      throw std::invalid_argument(dir.string() + ": in use by another sgmcmc process (pid " + std::to_string(pid) +
                                  "); wait for it to end or stop it first");
  return d;
}

void RunDirectory::commit(const std::string& config_yaml, const std::map<std::string, std::string>& files) {
  if (!writes_run_files()) {  // rank 0 has created the directory (the caller waits for it)
    fs::create_directories(dir_);
    return;
  }
  fs::create_directories(dir_);
  // The lock before anything is removed: a run (or a sweep's run) holding the directory is never
  // replaced under its feet. It is held for this object's life, i.e. the run's.
  lock_ = DirLock::acquire(dir_.string());
  if (replace_) {  // the old run's files, not the lock file we hold
    for (const auto& entry : fs::directory_iterator(dir_))
      if (entry.path().filename() != DirLock::kFileName) remove_tree(entry.path());
  }
  replace_ = false;
  if (!fs::exists(file(kRunMarker))) write_file_atomic(file(kRunMarker).string(), "sgmcmc run directory\n");
  write_file_atomic(file("config.yaml").string(), config_yaml);
  for (const auto& [name, text] : files) write_file_atomic(file(name).string(), text);
}

void RunDirectory::write_summary(const nlohmann::ordered_json& summary) const {
  // summary.json is written whatever became of the samples (a divergence's or an interrupt's summary
  // among them); a failed sample write is thrown after it
  std::exception_ptr samples_failed;
  try {
    flush_samples();
  } catch (...) {
    samples_failed = std::current_exception();
  }
  if (writes_run_files()) write_json_file(file("summary.json").string(), summary);
  if (samples_failed) std::rethrow_exception(samples_failed);
}

void RunDirectory::write_checkpoint(const std::function<void(const std::string&)>& write) const {
  flush_samples();  // a resume from this checkpoint numbers its samples after the ones on disk
  if (world_ > 1 && fs::exists(checkpoint_path())) fs::rename(checkpoint_path(), previous_checkpoint_path());
  replace_file_atomic(checkpoint_path().string(), write);
}

void RunDirectory::save_sample(Model& model, int64_t index, const std::map<std::string, double>& scalars) const {
  fs::create_directories(dir_ / "samples");
  char name[64];
  std::snprintf(name, sizeof name, "sample_%06lld%s.pt", static_cast<long long>(index), rank_suffix().c_str());
  samples_->write((dir_ / "samples" / name).string(), ParameterSnapshot(model, scalars));
}

void RunDirectory::thin_samples(int64_t stride) const {
  std::error_code ec;
  if (stride <= 1 || !fs::is_directory(dir_ / "samples", ec)) return;
  const std::string suffix = rank_suffix() + ".pt";
  for (const auto& entry : fs::directory_iterator(dir_ / "samples")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("sample_", 0) != 0 || name.size() <= 7 + suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits = name.substr(7, name.size() - 7 - suffix.size());
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoll(digits) % stride != 0) fs::remove(entry.path());
  }
}

void RunDirectory::save_final(Model& model, const std::map<std::string, double>& scalars) const {
  flush_samples();
  save_parameter_file(file("final" + rank_suffix() + ".pt").string(), model, scalars);
}

void RunDirectory::flush_samples() const { samples_->flush(); }

}  // namespace sgmcmc
