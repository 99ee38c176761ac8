// The kernels' CUDA tests' capture-and-replay check: a launch captured into a CUDA graph, the graph replayed.
#pragma once

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>

namespace test_util {

// Captures `launch()` (capture needs a stream other than the default one: a pool stream), replays the graph
// `replays` times on the current stream and waits for the device. Returns what the captured call returned
// (whether it launched: the caller asserts it). A second replay checks that a launch leaves its arrival
// counters at 0 for the next.
template <typename F>
auto capture_and_replay(F&& launch, int replays = 1) {
  at::cuda::CUDAGraph graph;
  decltype(launch()) result{};
  {
    c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromPool());
    graph.capture_begin();
    result = launch();
    graph.capture_end();
  }
  for (int i = 0; i < replays; ++i) graph.replay();
  torch::cuda::synchronize();
  return result;
}

}  // namespace test_util
#endif
