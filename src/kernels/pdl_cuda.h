// Programmatic dependent launch (Hopper, sm_90): kernels.cuda_pdl. CUDA sources only.
//
// A replayed step is a chain of short kernels (App. H.1: the gather, cuBLASLt's forward product, the head,
// cuBLASLt's ∇W_0, the pass's last launch, the sampler's update), each of which waits for the one before
// it to finish before it is even scheduled. Launched with the programmatic-serialization attribute, a
// kernel may be scheduled while the kernel before it still runs; it then waits inside (griddepcontrol.wait)
// until that kernel has completed and its writes are visible, so its launch and ramp-up overlap the
// previous kernel's last blocks instead of following them. Every kernel launched through launch_pdl calls
// pdl_enter() first, before it reads anything: the same results as a plain launch by construction (the
// wait covers every earlier kernel, which the previous one waited for in turn), and a no-op for a kernel
// launched without the attribute. A CUDA graph captures the attribute as a programmatic edge.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <utility>

#include "core/kernel_settings.h"

namespace sgmcmc::kernels {

// First in every kernel launch_pdl launches: waits for the kernel before it in the stream (complete, its
// writes visible), then lets the next kernel launched with the attribute be scheduled (it waits in turn).
__device__ __forceinline__ void pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernels.cuda_pdl: on, on a device of compute capability 9.0 or later.
inline bool pdl_enabled() {
  return kernel_settings().cuda_pdl && at::cuda::getCurrentDeviceProperties()->major >= 9;
}

// kernel<<<grid, block, smem, stream>>>(args...), with the programmatic-serialization attribute where
// pdl_enabled(); the kernel must begin with pdl_enter().
template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace sgmcmc::kernels
