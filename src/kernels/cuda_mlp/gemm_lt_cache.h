// gemm_lt's choices kept between processes (kernels.cuda_gemm_cache), so that every run on a machine
// takes the same kernel for a shape and therefore the same bits, run after run: gemm_lt picks a shape's
// kernel by timing its candidates, and two candidates within the timing noise may swap places between
// processes (cuDNN's benchmark mode and XLA's autotuner have the same property and the same remedy, a
// cache of the choices).
//
// The file is one JSON object, key → record, the key naming the GPU, the cuBLASLt version and the
// shape (kernels/cuda_mlp/gemm_lt_cuda.cu builds it). A GemmLtCache object holds an exclusive flock(2) on
// FILE.lock for its lifetime: a process looks a shape up, measures it if absent and adds it, all under
// the lock, so concurrent runs (a sweep's jobs on one GPU) agree on the first measurement. Records are
// only added, never replaced, and the file is rewritten atomically (core/atomic_file.h).
//
// A file that does not parse as such an object is left as it is: the cache is then off for the process,
// with one warning on stderr naming the file. So is a file or directory that cannot be created or
// locked (a read-only home directory): the measurement still happens, it is just not kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sgmcmc::kernels {

struct GemmLtRecord {
  std::vector<uint64_t> algo;  // cublasLtMatmulAlgo_t's opaque words, as cuBLASLt filled them
  uint64_t workspace = 0;      // bytes the algorithm needs
  std::string kernel;          // its description (algorithm id, tile, split-K), for people
  int candidates = 0;          // how many were timed
  double us = 0;               // its time per product when measured, µs
  double heuristic_us = 0;     // cuBLASLt's first heuristic choice's time then, µs
};

// The cache file for kernels.cuda_gemm_cache's value: "off" → "" (no cache); "auto" →
// $XDG_CACHE_HOME/sgmcmc/gemm_lt.json, else $HOME/.cache/sgmcmc/gemm_lt.json, else "" (neither set);
// anything else is the path itself.
std::string gemm_lt_cache_path(const std::string& setting);

class GemmLtCache {
 public:
  // Locks and reads `path` (its directory created if missing). An empty path, or a file that cannot
  // be locked or parsed, gives a cache that is off: find() finds nothing, add() keeps nothing.
  explicit GemmLtCache(const std::string& path);
  ~GemmLtCache();
  GemmLtCache(const GemmLtCache&) = delete;
  GemmLtCache& operator=(const GemmLtCache&) = delete;

  bool on() const { return on_; }
  std::optional<GemmLtRecord> find(const std::string& key) const;
  // Adds `key` unless it is there already (the first measurement stays) and rewrites the file.
  void add(const std::string& key, const GemmLtRecord& record);

 private:
  void off(const std::string& why);

  std::string path_;
  int lock_fd_ = -1;
  bool on_ = false;
  std::map<std::string, GemmLtRecord> records_;
};

}  // namespace sgmcmc::kernels
