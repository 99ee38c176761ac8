// A block's sum of a minibatch's row values (the nll), in the order the pass's CPU references replay. CUDA
// sources only.
#pragma once

namespace sgmcmc::kernels {

// Σ in[0 … n): thread t adds in[t], in[t + kThreads], … from 0, then a tree over the threads in part
// [kThreads] (shared memory): part[t] += part[t + w] for w = kThreads/2, …, 1. Every thread of the block
// (kThreads of them) calls it and gets the sum.
template <typename T, int kThreads>
__device__ __forceinline__ T block_tree_sum(const T* in, int n, T* part) {
  const int tid = threadIdx.x;
  T s = 0;
  for (int i = tid; i < n; i += kThreads) s += in[i];
  part[tid] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (tid < w) part[tid] += part[tid + w];
    __syncthreads();
  }
  return part[0];
}

}  // namespace sgmcmc::kernels
