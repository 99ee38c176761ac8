// The fused MLP pass's backward sums as tiled launches (kernels.cuda_mlp_wgrad: fused).
//
// On the cuBLAS route (kernels/cuda_mlp/mlp_fused.h) ∇W_l = g_{l+1}ᵀ h_l is a cuBLASLt product over the minibatch's
// rows split over k, then its split-K reduction, and the pass's last launch adds the rest (the output layer's
// ∇W and ∇b, the hidden layers' ∇b, λ_W W, the nll): App. H.1's ∇W_0 (100 × 784 over 500 rows, 39 M FMAs)
// is 6.7 + 1.8 µs of the replayed step on an H100 and the last launch 8.2 (bench_step --kernel-trace):
// three kernels and their gaps. Here one launch computes every layer's sums, for problems
// C [m, n] = Aᵀ B with A [r, m] and B [r, n] (row-major; A = g_{l+1}, B = h_l, r the rows) and, with a
// bias, e [m] = Σ_i A(i, ·) (B's column n of ones):
//
// - A block owns a tile of kM × kN outputs of one problem (its tiles: m tiles × n tiles, the ones column
//   the last n tile's column n). Chunks of kChunk rows of A's kM columns and B's kN columns are staged in
//   shared memory as they lie in memory (the next chunk's loads in flight in registers during this chunk's
//   FMAs); its 8 warps split each chunk, warp w taking rows [c·kChunk + w·kPerWarp, c·kChunk + (w+1)·kPerWarp)
//   of chunk c, each lane 4 × 4 outputs of the whole tile (A's columns 4·lr …, B's 4·lc …: two 16-byte
//   shared-memory reads a row, broadcast or conflict-free). Every warp has a partial sum of every output,
//   its fma chain over its rows of every chunk in increasing row order from 0 (rows ≥ r read as 0:
//   fma(0, 0, p)); the warps' sums are added in warp order, z = ((p_0 + p_1) + …) + p_7 (warp_split_sum.h).
// - The epilogue: overwriting, C = z, or with the prior's precisions C = fma(λ_W, W, z) (e likewise with
//   λ_b, b); accumulating, C + z.
// - With row_nll, one more block sums the rows' nll as the pass's GEMM kernel does (thread t from t in
//   steps of kThreads, then a tree over the threads) and adds loss_weight · nll to the trainer's float64 sum.
//
// weight_grad_reference computes the same on the CPU in the same order (std::fma, no contraction), so the
// GPU's results are the reference's bit for bit; against exact sums the error is float rounding: (r + 8)·2^-24
// of Σ_i |a_i||b_i| at most (float32). The pass takes the whole launch with one chain; with the column blocks
// as its last launch each ∇W_l alone (weight_grad_of).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sgmcmc::kernels {

struct WeightGradShape {
  static constexpr int kM = 16, kN = 32, kWarps = 8, kThreads = 32 * kWarps;
  static constexpr int kChunk = 128, kPerWarp = kChunk / kWarps;
  static constexpr int kMaxProblems = 4;
};

// C = Aᵀ B and, with bias_grad, its ones column into bias_grad [m]; with the prior (weight and bias with
// their 0-dim λ, all four or none; overwriting only) C = fma(λ_W, W, z) and bias_grad = fma(λ_b, b, z_e).
struct WeightGradProblem {
  torch::Tensor a, b, c;  // [r, m], [r, n], [m, n]
  torch::Tensor bias_grad;  // optional [m]
  torch::Tensor weight, weight_lambda, bias, bias_lambda;  // optional: W [m, n], λ_W, b [m], λ_b
};

struct WeightGradLaunch {
  std::vector<WeightGradProblem> problems;  // 1 … kMaxProblems, the same r
  bool accumulate = false;                  // C += z (and e += z_e): no prior then
  torch::Tensor row_nll;                    // optional [r]: Σ_i into nll
  torch::Tensor nll;                        // with row_nll: 0-dim, written
  torch::Tensor loss_sum;                   // optional float64 0-dim: += loss_weight · nll
  double loss_weight = 1.0;
};

// Whether the launch takes these tensors: one floating dtype (float32 or float64) and device, contiguous,
// r, m, n ≥ 1, each tensor under 2^31 elements, the shapes above; λ and the prior's tensors all or none a
// problem and only when overwriting; nll with row_nll, loss_sum float64 with it.
bool weight_grad_applies(const WeightGradLaunch& t);

// The header's arithmetic on CPU tensors, writing what the launch writes. std::invalid_argument where
// weight_grad_applies is false.
void weight_grad_reference(const WeightGradLaunch& t);

// The launch on the current CUDA stream (graph-capturable); false with nothing launched where
// weight_grad_applies is false. Defined in CUDA builds only (weight_grad_cuda.cu).
bool weight_grad_cuda(const WeightGradLaunch& t);

// One product: C = Aᵀ B (accumulate: C += Aᵀ B), as a launch of one problem.
WeightGradLaunch weight_grad_of(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
                                bool accumulate);

}  // namespace sgmcmc::kernels
