// Kernels that do next to nothing, for bench_launch: what one kernel node costs inside a replayed CUDA
// graph as its launch shape changes (blocks, threads, dynamic shared memory, the size of its parameters)
// and what one dependent global load costs there. The step's own kernels measure 2.4–8.8 µs in the
// replayed H.1 step (bench_step --kernel-trace) while their blocks are resident ~2 µs (Nsight Compute),
// so these probes separate the launch's own cost from the work's.
#pragma once

#include <cstdint>
#include <string>

namespace sgmcmc::bench {

struct ProbeLaunch {
  std::string name;
  int blocks = 1, threads = 32;
  int smem_bytes = 0;    // dynamic shared memory, written and read once by each thread
  int param_bytes = 16;  // 16, 1536 or 4000: the kernel's by-value parameter block
  int loads = 0;         // dependent global loads per thread (a pointer chase through 4 MB)
};

// Whether this build has the probes (a CUDA build).
bool launch_probe_available();
// Allocates the chase table (4 MB of int32, a random cycle) on the current CUDA device.
void launch_probe_init();
// Enqueues one probe kernel on the current stream (recorded when the stream is capturing).
void launch_probe(const ProbeLaunch& p);

}  // namespace sgmcmc::bench
