#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace sgmcmc {

void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open for fsync (" + std::strerror(errno) + ")");
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error(path + ": fsync failed (" + std::strerror(err) + ")");
}

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

void replace_file_atomic(const std::string& path, const std::function<void(const std::string& tmp)>& write) {
  namespace fs = std::filesystem;
  const std::string tmp = path + ".tmp";
  // A failed write (ENOSPC, EIO, a quota, a throwing callback) leaves no .tmp behind: the target is
  // untouched and the error names the file.
  auto discard = [&] {
    std::error_code ignored;
    fs::remove(tmp, ignored);
  };
  try {
    write(tmp);
    fsync_path(tmp);
  } catch (const std::exception& e) {
    discard();
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    if (what.find(tmp) != std::string::npos || what.find(path) != std::string::npos) throw std::runtime_error(what);
    throw std::runtime_error(path + ": cannot write (" + what + ")");
  } catch (...) {
    discard();
    throw;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    discard();
    throw std::runtime_error(path + ": cannot rename " + tmp + " over it (" + ec.message() + ")");
  }
  fsync_dir(fs::path(path).parent_path().string());
}

void write_bytes(const std::string& file, const std::string& bytes) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(file + ": cannot write (" + std::strerror(errno) + ")");
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw std::runtime_error(file + ": write failed (" + std::strerror(err) + ")");
    }
    off += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw std::runtime_error(file + ": write failed (" + std::strerror(errno) + ")");
}

void write_file_atomic(const std::string& path, const std::string& text) {
  replace_file_atomic(path, [&](const std::string& tmp) { write_bytes(tmp, text); });
}

}  // namespace sgmcmc
