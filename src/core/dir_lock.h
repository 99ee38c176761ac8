// An advisory lock on a directory: flock(LOCK_EX | LOCK_NB) on DIR/.lock, held (by an open file
// descriptor) for the lock object's life and released by the kernel when the process ends, however
// it ends. The holder's PID is written into the file, so a second process that finds the lock taken
// can say who holds it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace sgmcmc {

class DirLock {
 public:
  static constexpr const char* kFileName = ".lock";

  // Locks `dir` (which must exist). Throws std::invalid_argument naming the directory and the
  // holder's PID when another process holds the lock; std::runtime_error when the lock file cannot
  // be created.
  static std::shared_ptr<DirLock> acquire(const std::string& dir);

  // The PID written in DIR/.lock when another process holds its lock, else 0 (not locked, or no file).
  static pid_t holder(const std::string& dir);

  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace sgmcmc
