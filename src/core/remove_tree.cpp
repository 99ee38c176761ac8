#include "core/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sgmcmc {

namespace {

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = type == FTW_DP ? ::rmdir(path) : ::unlink(path);
  return rc == 0 || errno == ENOENT ? 0 : -1;
}

}  // namespace

void remove_tree(const std::filesystem::path& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error(path.string() + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throw std::runtime_error(path.string() + ": cannot remove: " + std::strerror(errno));
    return;
  }
  // Children before their directory (FTW_DEPTH), links not followed (FTW_PHYS).
  if (::nftw(path.c_str(), remove_entry, 64, FTW_DEPTH | FTW_PHYS) != 0)
    throw std::runtime_error(path.string() + ": cannot remove the directory tree: " + std::strerror(errno));
}

}  // namespace sgmcmc
