// Float32 matrix products for the small shapes of the MLPs' steps, split-K across a thread-block
// cluster (Hopper, sm_90) and reduced through the cluster's distributed shared memory, in one kernel.
//
// At App. H.1's shapes (500 × 784 · 784 × 100, and its weight gradient 100 × 500 · 500 × 784) the output
// has 16–26 tiles of 64 × 64, a fifth of an H100's 132 SMs, so the k dimension must be split to fill the
// GPU; cuBLAS then writes the splits' partial sums to global memory and adds them in a second kernel
// (splitKreduce: 4.9 µs of the 59.1 µs step under Nsight Compute, docs/performance.md), and its products
// take 10–12 µs each where the arithmetic is ~1 µs of the SMs' float32 rate. Here the S splits of a tile
// are the S blocks of one cluster (S ≤ 8, the portable cluster size): each block loads its k range of
// both operands into shared memory at once (64 × 128 of each a stage), computes its 64 × 64 partial tile
// (256 threads, 4 × 4 outputs each, float32 FMAs in k order), leaves it in its shared memory, and after
// the cluster's barrier each block adds 64 / S rows of the tile across the S blocks' shared memory, in
// split order, and stores them. No partial sums in global memory, no atomics, no second kernel.
//
// Arithmetic (the plan's split and chunk fixed by m, n, k and the SM count): for each split s, a partial
// p_s = fma(a_k, b_k, p_s) over its k range in increasing k from 0; the tile's value is
// ((p_0 + p_1) + p_2) + … + p_{S−1}; with accumulate, c + that. gemm_cluster_reference computes exactly
// this on the CPU (std::fma), so the GPU result is compared with it bit for bit; against the exact
// product the error is float32's, k·2^-24 of Σ_k |a_mk||b_kn| at most.
//
// Used by the fused MLP pass's cuBLAS route for the hidden layers' products (kernels.cuda_mlp_gemm:
// cluster); where it does not apply (chains, other layouts or dtypes, a GPU before sm_90) the route
// takes cuBLAS.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>

namespace sgmcmc::kernels {

// How a product of m × n outputs over k is cut: tiles of kTile × kTile outputs, each split into `splits`
// k ranges of `k_chunk` (the last one shorter), the blocks (tiles × splits, one cluster of `splits`
// blocks per tile) about one per SM; a block loads at most `stage_k` of its k range at a time.
struct GemmClusterPlan {
  static constexpr int kTile = 64;
  static constexpr int kMaxStageK = 128;
  static constexpr int kMaxSplits = 8;  // the portable cluster size
  int tiles_m = 0, tiles_n = 0, splits = 1, k_chunk = 0, stage_k = 0;
  int64_t blocks = 0;
  size_t smem_bytes = 0;  // both operands' stage, or the 64 × 64 partial tile, whichever is larger
};

// The plan for m, n, k ≥ 1 (k a multiple of 4) on `sms` SMs: splits = clamp(sms / tiles, 1, 8) (at least
// 32 of k each), the chunk a multiple of 4.
GemmClusterPlan gemm_cluster_plan(int64_t m, int64_t n, int64_t k, int sms);

// Whether the product's layouts are the kernel's (checked before any launch): float32 2-D matrices
// a [m, k], b [k, n], c [m, n] with c's rows contiguous (stride 1 along n); a and b each contiguous along
// either dimension, the other stride a multiple of 4, 16-byte aligned, k a multiple of 4, and m (n)
// a multiple of 4 where a (b) is contiguous along m (n); m, n, k ≥ 1 and every offset below 2^31 of
// elements. The device (CUDA, sm_90) is gemm_cluster's to check.
bool gemm_cluster_layout_ok(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c);

// The kernel's arithmetic on the CPU for `plan` (the header's order, std::fma): returns c's new value
// (float32, [m, n]) for float32 a, b, c on any device.
torch::Tensor gemm_cluster_reference(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
                                     bool accumulate, const GemmClusterPlan& plan);

// c = a·b (accumulate: c += a·b) on the current stream, graph-capturable, with the plan of
// gemm_cluster_plan(m, n, k, the device's SMs). Returns false, launching nothing, where it does not apply:
// the layouts above, a device before sm_90. Defined in CUDA builds only (gemm_cluster_cuda.cu).
bool gemm_cluster(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate);

}  // namespace sgmcmc::kernels
