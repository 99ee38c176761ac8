// Parameter files (train/model_io.h) written on a thread of their own, in the order queued, so that a run's
// steps go on while a sample is pickled, written and synced to disk: with the file's fsync and its
// directory's, 1–2 ms a sample on a local disk, during which a GPU would otherwise wait for its next launch
// (App. H.1 saves 100 of its 750 samples).
//
// A write that fails is reported by the next write() or flush(), with the file named, so the run stops
// there; the writer's destructor writes what is still queued (a run stopped by an error keeps its samples)
// and prints a failed write that nothing reported. At most kMaxQueued files wait: write() blocks beyond.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "train/model_io.h"

namespace sgmcmc {

class ParameterFileWriter {
 public:
  ParameterFileWriter() = default;
  ~ParameterFileWriter();
  ParameterFileWriter(const ParameterFileWriter&) = delete;
  ParameterFileWriter& operator=(const ParameterFileWriter&) = delete;

  static constexpr size_t kMaxQueued = 8;

  // Queues `snapshot` for `path`. Throws an earlier write's error first (and then writes nothing more).
  void write(std::string path, ParameterSnapshot snapshot);
  // Returns once every queued file is written; throws the first error of a write.
  void flush();
  // Files written so far.
  int64_t written() const;

 private:
  struct Job {
    std::string path;
    ParameterSnapshot snapshot;
  };
  void run();
  void rethrow_locked();

  mutable std::mutex mu_;
  std::condition_variable work_, idle_, space_;
  std::deque<Job> queue_;
  bool busy_ = false, stop_ = false, reported_ = false;
  int64_t written_ = 0;
  std::exception_ptr error_;
  std::thread thread_;  // started by the first write()
};

}  // namespace sgmcmc
