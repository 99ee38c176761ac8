// A kernel launch as a function call. CUDA sources only.
//
// kernel<<<…>>>(args…) is syntax a C++ compiler does not parse; through cudaLaunchKernelEx the .cu files
// that launch this way compile unchanged in the CPU emulator's tests (tests/cuda_emu), which implement it.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <utility>

namespace sgmcmc::kernels {

// kernel<<<grid, block, smem, stream>>>(args...)
template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace sgmcmc::kernels
