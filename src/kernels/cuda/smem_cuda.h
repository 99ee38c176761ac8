// Shared-memory helpers of the pass's kernels: a kernel's dynamic shared memory above the default 48 KB, and
// four consecutive elements read as vectors. CUDA sources only.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <utility>

// A kernel's dynamic shared memory as `unsigned char name[]`, 16-byte aligned. A macro, so that the CPU
// emulator of tests/cuda_emu, which runs the kernels from these sources, can give it the launch's buffer.
#ifndef SGMCMC_DYNAMIC_SMEM
#define SGMCMC_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif

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

// Four consecutive elements of shared memory into v: one float4, or two double2 (16-byte aligned).
__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  const float4 q = *reinterpret_cast<const float4*>(p);
  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void load4(const double* p, double (&v)[4]) {
  const double2 a = *reinterpret_cast<const double2*>(p), b = *reinterpret_cast<const double2*>(p + 2);
  v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}

}  // namespace sgmcmc::kernels
