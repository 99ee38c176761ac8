// `sgmcmc`: sets the OpenMP / OpenBLAS spin variables (runtime/spin_env.h) and executes the program
// proper, sgmcmc-main, beside it, with the same arguments. Both libraries read their variable only
// when loaded, so sgmcmc-main run without them re-executes itself (runtime/cpu.cpp), loading LibTorch
// twice (0.4 s on the 2-vCPU CI host, more with CUDA's libraries); this launcher links no LibTorch.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>
#include <string>

#include "runtime/spin_env.h"

int main(int argc, char** argv) {
  (void)argc;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    std::cerr << "sgmcmc: cannot find its own path (/proc/self/exe): " << std::strerror(errno) << "\n";
    return 127;
  }
  std::string path(self, static_cast<size_t>(n));
  path = path.substr(0, path.rfind('/') + 1) + "sgmcmc-main";
  sgmcmc::set_spin_env();
  execv(path.c_str(), argv);
  std::cerr << "sgmcmc: cannot execute " << path << ": " << std::strerror(errno) << "\n";
  return 127;
}
