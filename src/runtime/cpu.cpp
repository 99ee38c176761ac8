#include "runtime/cpu.h"

#include <dlfcn.h>
#include <unistd.h>
#include <sched.h>
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <torch/torch.h>

#include "compat.h"
#include "runtime/spin_env.h"

namespace sgmcmc {

// OpenMP spinning. LibTorch's intra-op pool (GNU OpenMP) spins for ~300,000 iterations after every
// parallel region by default, and with as many threads as cores the spinning workers take the cores
// from OpenBLAS's own pool (and vice versa). Measured on 2 cores (train.threads 2, steps/s):
//                                 MNIST BNN (App. H.1)   BPMF movielens-small
//   default                               94                    489
//   OMP_WAIT_POLICY=PASSIVE              247                    338   (futex wake-up per region)
//   GOMP_SPINCOUNT=3000                  212                    504
// so the binary runs with GOMP_SPINCOUNT=3000. OpenBLAS's idle threads then still spin on
// sched_yield for 2^28 cycles (a fifth of the MNIST run's samples under perf); with
// OPENBLAS_THREAD_TIMEOUT=8 (2^8 cycles) the same run went from 184-192 to 229-268 steps/s, with BPMF
// unchanged (458-498 vs 482-503, 2 runs each; 4, 12, 16 and 20 were within the noise of 8).
// Both libraries read their variable once, when they are loaded: the launcher `sgmcmc`
// (src/launcher/main.cpp) sets what the user did not before it executes sgmcmc-main; sgmcmc-main run
// without them sets them and re-executes itself (same pid, same arguments). GOMP_SPINCOUNT is left
// alone if the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT, OPENBLAS_THREAD_TIMEOUT if the user set it;
// nothing is done with SGMCMC_NO_REEXEC; if exec fails the run goes on unchanged.
void ensure_short_openmp_spin(char** argv) {
  const auto set = set_spin_env();  // runtime/spin_env.h; the launcher `sgmcmc` has set them already
  if (set.empty()) return;
  execv("/proc/self/exe", argv);
  for (const auto& name : set) unsetenv(name.c_str());  // exec failed: carry on unchanged
}

bool set_flush_denormal(bool on) {
  const bool ok = at::globalContext().setFlushDenormal(on);
  // one chunk per pool thread: ATen's OpenMP parallel_for runs min(threads, range / grain) threads
  const int64_t n = at::get_num_threads();
  if (ok && n > 1) at::parallel_for(0, n, 1, [on](int64_t, int64_t) { at::globalContext().setFlushDenormal(on); });
  return ok;
}

bool flush_denormal_on() {
#if defined(__x86_64__) || defined(__i386__)
  return (_mm_getcsr() & 0x8040u) == 0x8040u;  // FTZ (bit 15) and DAZ (bit 6)
#else
  return false;
#endif
}

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
