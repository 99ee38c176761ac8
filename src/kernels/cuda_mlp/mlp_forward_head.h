// The fused MLP pass's last hidden layer and its head in one launch (kernels.cuda_mlp_forward: fused).
//
// On the cuBLAS route (kernels/cuda_mlp/mlp_fused.h) App. H.1's forward pass is a cuBLASLt product x·W_0ᵀ split over
// k (7.2 µs on an H100 inside the replayed step, 9.8 when x comes from a block's gathered rows out of L2),
// its split-K reduction (2.8 µs) and the head kernel (5.4 µs): three kernels and their gaps for 39 M
// FMAs and the output layer's few. Here one launch does all of it, with the last hidden layer
// W [hdim, k], b [hdim], its input a = h_{L−2} [n, k] (x for one hidden layer) and the output layer
// W_o [outs, hdim], b_o [outs]:
//
// - A block owns a tile of kRows rows × kUnits units of the pre-activation z = a Wᵀ (grid: row groups ×
//   unit slices, a row group's slices adjacent). Its 8 warps split each k chunk of kChunk (the tile's rows
//   of a and W staged in shared memory, the next chunk's loads in flight in registers during this
//   chunk's FMAs): warp w takes k ∈ [c·kChunk + w·kPerWarp, c·kChunk + (w+1)·kPerWarp) of chunk c, each
//   lane 4 rows × 4 units of the whole tile (rows lr + 4i, units lc + 8j: conflict-free vector reads of
//   shared memory), so that every warp has a partial sum of every output: p_w = fma chain over its k's of
//   every chunk in increasing k from 0 (k ≥ k_in read as 0: fma(0, 0, p)). The warps' sums are added in
//   warp order, z = ((p_0 + p_1) + …) + p_7, and h = act(z + b) is written to h_out [n, hdim].
// - The last of a row group's slice blocks to finish (an atomic count per row group, put back to 0 for
//   the next call and graph replays) runs the head over the group's rows, reading h_out: the head kernel's
//   own arithmetic (mlp_head_cuda.h): f = h W_oᵀ + b_o (each dot product as 32 lane-strided fma chains
//   added by a butterfly), nll_i and g_L = s·(softmax(f) − onehot(y)) (softmax_xent_row.h), and
//   g_{L−1} = (g_L W_o) ⊙ act'(h).
//
// mlp_forward_head_reference computes the same on the CPU in the same order (std::fma, no contraction);
// the sums of z are then the kernel's bit for bit, and what differs on a GPU is exp's rounding in the
// activation and softmax (the CUDA test's tolerance). Against exact sums the error of z is float
// rounding: (k + 8)·2^-24 of Σ_k |a||w| at most (the k-term fma chains plus 8 partial sums).
//
// Taken by the pass (one chain, kernels.cuda_mlp_forward: fused) where mlp_forward_head_applies: for the
// route's last hidden layer with the head, for an earlier one (FNN-800's first) without it; otherwise the pass
// runs its product, bias and activation, and head kernel.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/matmul.h"  // Activation

namespace sgmcmc::kernels {

struct MlpForwardHeadShape {
  static constexpr int kRows = 16, kUnits = 32, kWarps = 8, kThreads = 32 * kWarps;
  static constexpr int kChunk = 128, kPerWarp = kChunk / kWarps;
  static constexpr int kPad = 4;  // a staged row's stride kChunk + kPad: lanes' rows 4 banks apart
  static constexpr int kStride = kChunk + kPad;
  static constexpr size_t kMaxSmemBytes = 96 * 1024;
  // shared memory elements: the staged chunk, the warps' partial tiles, or the head's (W_o, the group's
  // rows of h, logits and g_L; none with outs = 0), whichever is largest
  static constexpr int64_t smem_elems(int64_t hdim, int64_t outs) {
    const int64_t stage = int64_t{kRows + kUnits} * kStride, reduce = int64_t{kWarps} * kRows * kUnits;
    const int64_t head = outs == 0 ? 0 : outs * hdim + int64_t{kRows} * (hdim + 2 * outs);
    return stage > reduce ? (stage > head ? stage : head) : (reduce > head ? reduce : head);
  }
};

// Without out_weight the launch is a hidden layer alone (a middle one: FNN-800's first): h_out = act(a Wᵀ + b),
// no head, no counts (out_bias, targets, g_out, g_hidden, row_nll and counters undefined too).
struct MlpForwardHeadArgs {
  torch::Tensor a;                   // h_{L−2} [n, k]
  torch::Tensor weight, bias;        // the last hidden layer: [hdim, k], [hdim]
  torch::Tensor out_weight, out_bias;  // the output layer: [outs, hdim], [outs]; undefined: no head
  torch::Tensor targets;             // int64 [n]
  Activation act = Activation::kSigmoid;
  double scale = 1.0;                // the likelihood's N/n
  // written: h_{L−1} [n, hdim], g_L [n, outs], g_{L−1} [n, hdim], nll_i [n]
  torch::Tensor h_out, g_out, g_hidden, row_nll;
  torch::Tensor counters;  // int32 [ceil(n / kRows)], all 0 (the kernel leaves them 0); CUDA only
};

// Whether the launch takes these tensors: float32 or float64 throughout, one device, contiguous, n ≥ 1,
// k ≥ 1, hdim ≥ 1, 1 ≤ outs, the shapes above (the head's all or none), and the shared memory within
// kMaxSmemBytes.
bool mlp_forward_head_applies(const MlpForwardHeadArgs& t);

// The header's arithmetic on CPU tensors, writing h_out, g_out, g_hidden and row_nll (counters unused).
// std::invalid_argument where mlp_forward_head_applies is false or a label is outside [0, outs).
void mlp_forward_head_reference(const MlpForwardHeadArgs& t);

// The launch on the current CUDA stream (graph-capturable); false with nothing launched where
// mlp_forward_head_applies is false or the device's shared memory is short. Defined in CUDA builds only
// (mlp_forward_head_cuda.cu).
bool mlp_forward_head_cuda(const MlpForwardHeadArgs& t);

}  // namespace sgmcmc::kernels
