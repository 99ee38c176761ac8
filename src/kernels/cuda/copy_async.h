// dst ← src as one cudaMemcpyAsync on the current stream, without ATen's dispatch of copy_: a replayed
// step's two per-step copies (the batch's indices into the graph's static buffer, the step's scalars
// from their pinned slot) are then a few µs of host time each instead of the ~10–20 µs an ATen op costs
// on the GPU machines measured, so the host runs further ahead of the device. Anywhere else (the CPU,
// another dtype or shape, a non-contiguous or pageable source) it is copy_.
#pragma once

#include <torch/torch.h>

#if defined(SGMCMC_WITH_CUDA)
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace sgmcmc::kernels {

inline void copy_async(torch::Tensor& dst, const torch::Tensor& src) {
#if defined(SGMCMC_WITH_CUDA)
  const bool raw = dst.is_cuda() && src.scalar_type() == dst.scalar_type() && src.numel() == dst.numel() &&
                   dst.is_contiguous() && src.is_contiguous() &&
                   ((src.is_cuda() && src.device() == dst.device()) || (src.is_cpu() && src.is_pinned()));
  if (raw) {
    C10_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDefault,
                                   c10::cuda::getCurrentCUDAStream(dst.device().index())));
    return;
  }
#endif
  dst.copy_(src, /*non_blocking=*/true);
}

}  // namespace sgmcmc::kernels
