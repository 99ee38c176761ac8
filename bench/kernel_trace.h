// The GPU's own timeline of a replayed step: every kernel, copy and memset as the device ran it, through
// CUPTI's activity API (bench_step --kernel-trace N). Nsight Compute times each kernel alone, serialised
// and with the GPU idle around it, and reports ~11 µs for launches whose blocks are resident ~2.5 µs
// (docs/performance.md); Nsight Systems is not on the GPU machines. CUPTI's concurrent-kernel records
// keep the graph's own scheduling, so the step's kernels, the gaps between them and the gap between two
// graph launches are measured where they happen.
//
// Built into bench_step in CUDA builds where CMake finds CUDA::cupti (SGMCMC_CUPTI); elsewhere
// kernel_trace_available() is false and bench_step says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sgmcmc::bench {

struct GpuActivity {
  enum Kind { kKernel, kMemcpy, kMemset };
  Kind kind = kKernel;
  std::string name;         // demangled kernel name; "memcpy HtoD" etc.
  uint64_t start = 0, end = 0;  // ns, the device's timestamps
  uint32_t correlation = 0;  // the launching API call (a graph launch: one id for all its nodes)
  uint32_t graph = 0;        // 0: not run by a graph launch
  uint32_t stream = 0;
  int64_t bytes = 0;         // copies and memsets
};

bool kernel_trace_available();
// The median of v (0 when empty).
double median(std::vector<double> v);
// Starts recording (throws std::runtime_error where unavailable or CUPTI fails). Start it before the
// graphs are captured, so that their nodes are traced when replayed.
void kernel_trace_start();
// CUPTI's clock, the activities' timebase (0 without CUPTI).
uint64_t kernel_trace_now();
// Flushes CUPTI's buffers (the device must be synchronised first) and returns the records by start time.
std::vector<GpuActivity> kernel_trace_stop();
// The same, with the trace left on (the records so far, taken).
std::vector<GpuActivity> kernel_trace_take();

// The records grouped by launch (a graph launch's nodes share a correlation id; outside graphs each
// activity is its own launch) and summarised over the launches that ran the modal kernel sequence: for
// each position, the median duration and the median gap after the previous activity's end, and per launch
// the median span (first start to last end), busy time (the union of the intervals) and the gap from the
// previous launch's end. Prints a table to stdout and returns it as JSON.
nlohmann::ordered_json summarise_kernel_trace(const std::vector<GpuActivity>& acts, int64_t steps_per_launch,
                                              bool print = true);

// The records by graph: for each graph (its id), how many launches, the activities a launch ran and its
// span and busy time (medians), the busy time summed over its launches; then the activities outside graphs
// by name (count, device time). For a run whose phases are graphs of their own (train.graph_epoch), what
// each phase costs the device. Prints the table (largest total first) and returns it as JSON.
nlohmann::ordered_json summarise_by_graph(const std::vector<GpuActivity>& acts, bool print = true);

}  // namespace sgmcmc::bench
