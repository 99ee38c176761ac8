// The fused MLP pass's hidden layers' weight gradients as one tiled launch each (kernels.cuda_mlp_wgrad: fused).
//
// On the cuBLAS route (kernels/mlp_fused.h) ∇W_l = g_{l+1}ᵀ h_l is a cuBLASLt product over the minibatch's
// rows split over k, then its split-K reduction: App. H.1's ∇W_0 (100 × 784 over 500 rows, 39 M FMAs) is
// 6.7 + 1.8 µs of the replayed step on an H100 (bench_step --kernel-trace), two kernels and a gap. Here,
// for C [m, n] = Aᵀ B with A [r, m] and B [r, n] (row-major; A = g_{l+1}, B = h_l, r the rows):
//
// - A block owns a tile of kM × kN outputs (grid: m tiles × n tiles). Chunks of kChunk rows of A's kM
//   columns and B's kN columns are staged in shared memory as they lie in memory (the next chunk's loads in
//   flight in registers during this chunk's FMAs); its 8 warps split each chunk, warp w taking rows
//   [c·kChunk + w·kPerWarp, c·kChunk + (w+1)·kPerWarp) of chunk c, each lane 4 × 4 outputs of the whole tile
//   (A's columns 4·lr …, B's 4·lc …: two 16-byte shared-memory reads a row, broadcast or conflict-free).
//   Every warp has a partial sum of every output, its fma chain over its rows of every chunk in increasing
//   row order from 0 (rows ≥ r read as 0: fma(0, 0, p)); the warps' sums are added in warp order,
//   z = ((p_0 + p_1) + …) + p_7, and C = z (or, accumulating, C + z).
//
// weight_grad_reference computes the same on the CPU in the same order (std::fma, no contraction), so the
// GPU's C is the reference's bit for bit; against exact sums the error is float rounding: (r + 8)·2^-24 of
// Σ_i |a_i||b_i| at most (float32). The pass keeps the rest of the layer's gradient where it was: ∇b_l,
// λ_W W_l and the sampler's update in its last launch.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace sgmcmc::kernels {

struct WeightGradShape {
  static constexpr int kM = 16, kN = 32, kWarps = 8, kThreads = 32 * kWarps;
  static constexpr int kChunk = 128, kPerWarp = kChunk / kWarps;
};

// Whether the launch takes these tensors: A [r, m], B [r, n], C [m, n], one floating dtype (float32 or
// float64) and device, contiguous, r, m, n ≥ 1 and each tensor under 2^31 elements.
bool weight_grad_applies(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c);

// The header's arithmetic on CPU tensors: C = Aᵀ B (accumulate: C += Aᵀ B) in the kernel's order.
// std::invalid_argument where weight_grad_applies is false.
void weight_grad_reference(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate);

// The launch on the current CUDA stream (graph-capturable); false with nothing launched where
// weight_grad_applies is false. Defined in CUDA builds only (weight_grad_cuda.cu).
bool weight_grad_cuda(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate);

}  // namespace sgmcmc::kernels
