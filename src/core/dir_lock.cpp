#include "core/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sgmcmc {
namespace {

std::string lock_path(const std::string& dir) { return (dir.empty() ? std::string(".") : dir) + "/" + DirLock::kFileName; }

pid_t read_pid(int fd) {
  char buf[32] = {0};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  return static_cast<pid_t>(std::strtol(buf, nullptr, 10));
}

}  // namespace

std::shared_ptr<DirLock> DirLock::acquire(const std::string& dir) {
  const std::string path = lock_path(dir);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot create the run directory's lock file (" + std::strerror(errno) + ")");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const pid_t pid = read_pid(fd);
    ::close(fd);
    if (err == EWOULDBLOCK)
      throw std::invalid_argument(dir + ": in use by another sgmcmc process" +
                                  (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
                                  "; wait for it to end or stop it first");
    throw std::runtime_error(path + ": cannot lock (" + std::strerror(err) + ")");
  }
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    // The lock itself is held; only the PID note failed (a full disk): go on without it.
  }
  return std::shared_ptr<DirLock>(new DirLock(fd));
}

pid_t DirLock::holder(const std::string& dir) {
  const int fd = ::open(lock_path(dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  pid_t pid = 0;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) pid = read_pid(fd);
  else ::flock(fd, LOCK_UN);
  ::close(fd);
  return pid;
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace sgmcmc
