// The fused MLP pass's last launch on its cuBLAS route (kernels/cuda_mlp/mlp_fused.h), as column blocks.
//
// With the hidden layers' weight-gradient products on cuBLAS(Lt), what is left of the backward pass after
// the head kernel is a handful of sums over the minibatch's n rows (App. H.1: n = 500):
//   ∇W_{L−1} = g_Lᵀ h_{L−1}  [outs × hdim],  ∇b_{L−1} = Σ_i g_{L,i}  (the output layer)
//   ∇b_l = Σ_i g_{l+1,i}  (each hidden layer),  ∇W_l += λ_W W_l  (each hidden layer with a prior)
//   nll = Σ_i nll_i
// The pass's GEMM kernel runs the first three as split-K products (App. H.1: 7 splits of 80 rows, partial
// sums in global memory, an atomic count, the last split to arrive adding them): 12.1–12.8 µs of the H.1
// step under Nsight Compute on an H200, for well under a MFLOP, because each block waits on global memory
// once per 16 rows and the splits wait on each other. Here every sum stays inside one block:
//
// - A column block (kThreads = 512 threads: kCols = 8 columns × kGroups = 64 row groups) owns 8 columns
//   of one problem over all n rows. Thread (group q, column j) keeps the m sums of its column over the
//   rows i ≡ q (mod 64), in increasing i: p_q = fma(a_i, b_ij, p_q) from 0, with a = g_L's row staged in
//   shared memory (the whole [n × m] g_L, m ≤ kMaxM) and b_ij read once from global memory (a warp reads
//   4 rows' 8 consecutive columns); a batch of kBatch rows' loads is in flight at once, the next batch's
//   during this one's FMAs (App. H.1: each thread's 7–8 rows in two batches). The 64 groups' partial sums are then added in shared memory, each
//   super-group of kSuper = 8 consecutive groups in group order, u_s = ((p_8s + p_8s+1) + …) + p_8s+7, then
//   the super-groups in order, v = ((u_0 + u_1) + …) + u_7. The unrolled row loop is instantiated for m in
//   buckets (≤ 4, ≤ 10, ≤ 16), so that it carries few predicated-off outputs. Why this shape: with 32
//   columns × 16 groups H.1's output layer took 8 of the 132 SMs, ~1,700 instructions a warp at 0.35 a
//   cycle per scheduler (each FMA waiting on a shared-memory load, 4 warps a scheduler), 8.8 µs of the
//   replayed step (bench_step --kernel-trace); 8 columns a block spread the same sums over 4× the blocks
//   with a quarter of the rows a thread.
//   The column j = hdim is a column of ones (∇b_{L−1}); a hidden layer's ∇b_l is a problem with a ≡ 1
//   (m = 1: p_q += b_ij).
// - The epilogue: overwriting, ∇W = v or, with the prior's precisions, fma(λ_W, W, v) (∇b likewise with
//   λ_b, b); accumulating, ∇W + v.
// - Prior blocks: ∇W_l ← fma(λ_W, W_l, ∇W_l) elementwise (after cuBLAS wrote ∇W_l), 2,048 elements a block;
//   with ∇W_l as S partial products (weight_grad_parts), ∇W_l ← fma(λ_W, W_l, ((p_0 + p_1) + …) + p_S−1).
// - One block sums nll_i as the GEMM kernel's block_sum does (thread t from t in steps of 512, then a tree
//   over the threads) and adds loss_weight · nll to the trainer's float64 loss sum.
// The blocks run in that order in one launch (App. H.1: 13 + 13 column blocks, 39 prior blocks, 1 sum).
// mlp_tail_reference computes exactly this on the CPU (std::fma), so the GPU test compares bit for bit;
// against the exact sums the error is float rounding: n·2^-24 of Σ_i |a_i||b_ij| at most.
//
// Taken by the pass with kernels.cuda_mlp_tail: columns where it applies
// (mlp_tail_applies: one chain, float32 or float64 contiguous tensors, m ≤ 16, g_L and the group sums within
// 48 KB of shared memory); otherwise the pass's GEMM kernel runs the launch.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "kernels/cuda_mlp/mlp_fused.h"  // MlpLayerTensors

namespace sgmcmc::kernels {

struct MlpTailShape {
  static constexpr int kCols = 8, kGroups = 64, kThreads = kCols * kGroups, kMaxM = 16, kBatch = 4;
  static constexpr int kSuper = 8;  // row groups added per super-group (kGroups / kSuper super-groups)
  static constexpr int kPriorPerBlock = kThreads * 4;
  static constexpr size_t kMaxSmemBytes = 48 * 1024;
  // shared memory elements a column block's reduction takes for m outputs: the group sums (the
  // super-groups' sums in place of their first groups')
  static constexpr int64_t reduce_elems(int64_t m) { return kGroups * m * kCols; }
};

// The launch's inputs and outputs (one chain: every layer's tensors 2-D or [1, …] and contiguous).
struct MlpTailArgs {
  torch::Tensor g_out;   // g_L [n, outs]
  torch::Tensor h_last;  // h_{L−1} [n, hdim] (activated)
  MlpLayerTensors out;   // the output layer: W, b, ∇W, ∇b and, optional, λ_W, λ_b
  std::vector<torch::Tensor> g_hidden;   // g_{l+1} [n, out_l] for the hidden layers l = 0 … L−2
  std::vector<MlpLayerTensors> hidden;   // their tensors (∇W_l already written by the products)
  bool accumulate = false;  // add the sums to the gradients (no λ then) instead of writing them
  torch::Tensor row_nll;    // [n]
  torch::Tensor loss_sum;   // optional float64 0-dim: += loss_weight · nll
  double loss_weight = 1.0;
  // Optional, per hidden layer (empty or undefined: none): ∇W_l's sums as S partial sums [S, out_l, in_l]
  // (the products over S ranges of the rows, kernels.cuda_mlp_kparts), which the elementwise blocks add
  // in part order before λ_W W_l, writing ∇W_l (overwriting only).
  std::vector<torch::Tensor> weight_grad_parts;
};

// Whether the launch takes these tensors (checked before anything runs): the shapes above, one dtype
// (float32 or float64) and device throughout, contiguous, n ≥ 1, outs ≤ kMaxM, λ both or neither per
// layer and only when overwriting, shared memory within kMaxSmemBytes.
bool mlp_tail_applies(const MlpTailArgs& t);

// The header's arithmetic on CPU tensors: writes the gradients as the kernel does and returns nll (0-dim);
// loss_sum too when given. std::invalid_argument where mlp_tail_applies is false.
torch::Tensor mlp_tail_reference(const MlpTailArgs& t);

// The launch on the current CUDA stream (graph-capturable): nll as a 0-dim tensor, or an undefined tensor
// with nothing launched where mlp_tail_applies is false. Defined in CUDA builds only (mlp_tail_cuda.cu).
torch::Tensor mlp_tail_cuda(const MlpTailArgs& t);

}  // namespace sgmcmc::kernels
