// Process-wide CPU settings for training runs.
//
// set_cpu_threads(n): LibTorch's intra-op pool AND the BLAS library's own pool. Debian's LibTorch calls
// BLAS through the system alternative (OpenBLAS, pthread flavour), whose thread pool is not governed by
// torch::set_num_threads: without this, a `train.threads: 1` run (or one job of a `sweep --jobs N`) still
// runs every matrix product on all cores, and idle BLAS workers spin in sched_yield.
// tune_allocator(): keeps freed large blocks in the heap (glibc mallopt) instead of returning them to the
// OS on every free, so the per-step tensors (minibatch copies, activations, gradients) do not page-fault
// afresh at every step.
#pragma once

#include <cstdint>

#include <string>

namespace sgmcmc {

// n > 0: set both pools to n threads. Returns whether a BLAS thread setter was found.
bool set_cpu_threads(int n);

// The CPUs this process may run on (its sched_getaffinity mask; a container's or taskset's limit),
// at least 1.
int affinity_cpus();

// The thread count a run uses for `train.threads` = `configured`: itself when > 0; else 0 (leave the
// libraries' defaults) when OMP_NUM_THREADS is set; else affinity_cpus(). LibTorch's own default is
// the core count of its cpuinfo library, which on some machines (this 2-vCPU one) is 1.
int resolve_cpu_threads(int64_t configured);

// The binary's OpenMP / OpenBLAS spin settings (GOMP_SPINCOUNT=3000, OPENBLAS_THREAD_TIMEOUT=8, each
// unless the user set it), which both libraries read only when loaded: sets them and re-executes the
// process once (same pid and arguments). The environment variable SGMCMC_NO_REEXEC skips this; it is
// the only SGMCMC_* variable the program reads (every other switch is a config key).
void ensure_short_openmp_spin(char** argv);

// Idempotent; safe to call before any tensor is allocated or later.
void tune_allocator();

// Denormal floats flushed to zero (x86: MXCSR's FTZ and DAZ) on the calling thread and on every thread
// of LibTorch's intra-op pool, or not (`on` false). An operation with a denormal operand takes a
// microcode assist, about a hundred cycles: RMSprop drives the weights of Fashion-MNIST's blank border
// pixels into denormals (26,000 of FNN-400's 478,000 within 3 epochs), and its steps and evaluations
// ran 6 to 8 times slower. Call after set_cpu_threads: a pool thread started later starts with its
// creator's setting. Returns false where the CPU has no such mode.
bool set_flush_denormal(bool on);
// Whether the calling thread flushes denormals (x86's FTZ and DAZ both set; false elsewhere): what an
// in-process run (the Python package's `run`) restores afterwards.
bool flush_denormal_on();

// The settings that decide CPU speed, for a run's summary.json: LibTorch's version and intra-op threads,
// and those of OMP_NUM_THREADS, OMP_WAIT_POLICY, GOMP_SPINCOUNT, OPENBLAS_NUM_THREADS and
// OPENBLAS_THREAD_TIMEOUT that are set, e.g. "torch=1.13.1 threads=2 GOMP_SPINCOUNT=3000 ...".
std::string runtime_description();

}  // namespace sgmcmc
