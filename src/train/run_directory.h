// The run directory and every file in it. The object that owns a file writes it, atomically
// (util/atomic_file.h): config.yaml, the data set's run files, summary.json, checkpoint.pt,
// samples/sample_NNNNNN.pt, final.pt (metrics.csv: MetricsLog).
//
// prepare() checks that the directory can be used and writes nothing, so a bad config or data
// file never costs the user an existing run; commit() then creates (or replaces) it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/model.h"
#include "train/parameter_file_writer.h"

namespace sgmcmc {

class DirLock;

// The marker commit() writes into every run directory: --overwrite replaces a non-empty directory
// only when it has this file. File names alone (config.yaml, metrics.csv) are common in a user's own
// folders, so they never mark a directory as ours.
constexpr const char* kRunMarker = ".sgmcmc-run";
bool is_run_directory(const std::filesystem::path& dir);

class RunDirectory {
 public:
  // `out_dir` (--out / --resume), else `config_dir` (output.dir), else runs/<name>-<timestamp>.
  // Resuming needs a checkpoint; otherwise a non-empty directory needs `overwrite` and must be a run
  // directory (is_run_directory); a path that exists and is not a directory is refused; so is a
  // directory whose lock another process holds (DirLock, DIR/.lock).
  // With `world_size` > 1 (a distributed run) rank R's checkpoint is checkpoint.rank-R.pt, its
  // samples and final parameters carry ".rank-R" on ranks R > 0, and rank 0 alone writes
  // config.yaml and summary.json (the others' commit() waits for nothing and writes nothing).
  static RunDirectory prepare(const std::string& out_dir, const std::string& config_dir, const std::string& name,
                              bool resume, bool overwrite, int rank = 0, int world_size = 1);

  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path checkpoint_path() const {
    return dir_ / (world_ > 1 ? "checkpoint.rank-" + std::to_string(rank_) + ".pt" : std::string("checkpoint.pt"));
  }
  // Distributed runs keep the checkpoint before the latest (a rank may be lost between the ranks'
  // writes of one checkpoint; resuming takes the latest step every rank has).
  std::filesystem::path previous_checkpoint_path() const {
    return dir_ / ("checkpoint.rank-" + std::to_string(rank_) + ".prev.pt");
  }
  bool writes_run_files() const { return rank_ == 0; }
  std::filesystem::path file(const std::string& name) const { return dir_ / name; }

  // Creates the directory, takes its lock (held until this object and its copies are gone; a
  // locked directory throws std::invalid_argument naming the holder's PID), then removes the old
  // run's files (--overwrite) and writes the marker, config.yaml and `files` (name -> contents).
  void commit(const std::string& config_yaml, const std::map<std::string, std::string>& files);

  void write_summary(const nlohmann::ordered_json& summary) const;
  // `write(tmp_path)` writes the checkpoint, which then replaces checkpoint.pt.
  void write_checkpoint(const std::function<void(const std::string&)>& write) const;
  // samples/sample_<index>.pt and final.pt, as dicts Python's torch.load opens (train/model_io.h);
  // `scalars`: "step", the prior precisions "lambda.<group>", ... A sample is the model as it is now
  // (on a GPU, as the steps queued so far leave it), written on the directory's writer thread
  // (train/parameter_file_writer.h); the checkpoint, final.pt and summary.json are written after every
  // sample queued before them, and a sample's failed write is thrown by the next of these calls.
  void save_sample(Model& model, int64_t index, const std::map<std::string, double>& scalars) const;
  void save_final(Model& model, const std::map<std::string, double>& scalars) const;
  // Removes this rank's sample files whose index is not a multiple of `stride`.
  void thin_samples(int64_t stride) const;
  // Waits for the queued samples to be written; throws the first failed write's error.
  void flush_samples() const;

 private:
  std::filesystem::path dir_;
  bool replace_ = false;
  std::shared_ptr<DirLock> lock_;
  std::shared_ptr<ParameterFileWriter> samples_ = std::make_shared<ParameterFileWriter>();
  int rank_ = 0, world_ = 1;
  std::string rank_suffix() const { return rank_ > 0 ? ".rank-" + std::to_string(rank_) : ""; }
};

// runs/<name>-<YYYYmmdd-HHMMSS>.
std::string default_run_dir(const std::string& name);

}  // namespace sgmcmc
