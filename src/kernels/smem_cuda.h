// A kernel's dynamic shared memory above the default 48 KB. CUDA sources only.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <utility>

namespace sgmcmc::kernels {

// Raises `kernel`'s dynamic shared memory limit to `bytes` on the current device, which is `device`: once
// per kernel and device (the attribute stays set; the call is not a stream operation, so a graph capture
// may make it).
inline void allow_dynamic_smem(const void* kernel, int bytes, int device) {
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;
  std::lock_guard<std::mutex> lock(mu);
  if (done.count({kernel, device}) != 0) return;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done.insert({kernel, device});
}

}  // namespace sgmcmc::kernels
