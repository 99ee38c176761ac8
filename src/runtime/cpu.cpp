#include "runtime/cpu.h"

#include <dlfcn.h>
#include <sched.h>
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <torch/torch.h>

#include "compat.h"

namespace sgmcmc {

bool set_cpu_threads(int n) {
  if (n <= 0) return false;
  torch::set_num_threads(n);
  // OpenBLAS (openblas_set_num_threads) or BLIS-style setters, whichever the loaded BLAS exports.
  using Setter = void (*)(int);
  for (const char* sym : {"openblas_set_num_threads", "goto_set_num_threads"}) {
    if (auto f = reinterpret_cast<Setter>(dlsym(RTLD_DEFAULT, sym))) {
      f(n);
      return true;
    }
  }
  return false;
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

int resolve_cpu_threads(int64_t configured) {
  if (configured > 0) return static_cast<int>(configured);
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (omp && *omp) return 0;
  return affinity_cpus();
}

void tune_allocator() {
#ifdef __GLIBC__
  static bool done = false;
  if (done) return;
  done = true;
  // Blocks up to 256 MiB come from the heap (and are reused) instead of fresh mmaps; keep up to 512 MiB
  // of freed memory at the top of the heap rather than trimming it back to the OS after every step.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

std::string runtime_description() {
  std::string out = "torch=" + compat::torch_version() + " threads=" + std::to_string(torch::get_num_threads());
  for (const char* name :
       {"OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT"})
    if (const char* v = std::getenv(name)) out += std::string(" ") + name + "=" + v;
  return out;
}

}  // namespace sgmcmc
