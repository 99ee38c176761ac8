// The MLP's whole forward and backward pass on CUDA in 2 + depth kernels, and its CPU reference.
//
// For layers l = 0 … L−1 (W_l [out_l, in_l], b_l [out_l]), inputs h_0 = x [n, in_0], labels y [n] and
// the likelihood's scale s (N/n), with act the hidden activation (models/mlp.h):
//   h_{l+1} = act(h_l W_lᵀ + b_l)                          l < L−1   (one kernel per hidden layer)
//   f = h_{L−1} W_{L−1}ᵀ + b_{L−1},  nll_i = −log softmax(f_i)_{y_i},  g_L = s·(softmax(f) − onehot(y))
//   g_{L−1} = (g_L W_{L−1}) ⊙ act'(h_{L−1})                           (with f and g_L: one "head" kernel)
//   g_l = (g_{l+1} W_l) ⊙ act'(h_l)                        0 < l < L−1 (one kernel each)
//   ∇W_l = g_{l+1}ᵀ h_l,  ∇b_l = Σ_i g_{l+1,i},  nll = Σ_i nll_i          (one kernel for all layers)
// and, given the prior's precisions, ∇W_l + λ_W W_l and ∇b_l + λ_b b_l in that last kernel's epilogue
// (kernels.cuda_mlp_prior: fused; the trainer otherwise seeds .grad with λθ in one ATen op per tensor).
// App. H.1's 784-100-10 step is 3 kernels (ATen's path: ~16 for the same work, docs/performance.md);
// FNN-800's 784-800-800-10 is 5.
//
// The products are a tiled float32/float64 SIMT GEMM (32×32 tiles, 16-deep, 2×2 per thread) whose
// epilogue applies the bias and activation, the activation's derivative, or writes/accumulates the
// weight gradient; ∇b_l is the same product against a column of ones appended to h_l. A product with few
// tiles splits its k range over up to ~2 blocks per SM; each split writes its partial sums and the last
// split of a tile to arrive (an atomic count, reset to 0 for the next call and CUDA graph replays) adds
// them in split order and applies the epilogue. Every sum runs in a fixed order, so a call's results are
// deterministic; they are not ATen's summation order (the tests' tolerances are float rounding).
// TF32 is never used: the products are float32 FMAs. kernels.cuda_mlp_gemm picks the kernel: this tiled
// one, a pipelined one, or the cuBLAS route (the hidden layers' products on cuBLAS or cuBLASLt, the rest in
// the pass's kernels; mlp_fused_cuda.cu says which does what).
// On that route the last kernel's sums run as column blocks, each sum inside one block, no split-K partial
// sums (kernels/cuda_mlp/mlp_tail.h), where they apply (kernels.cuda_mlp_tail: columns; auto keeps the GEMM kernel),
// and the last hidden layer's product with the head can run as one launch (kernels/cuda_mlp/mlp_forward_head.h;
// kernels.cuda_mlp_forward: fused; auto keeps the product and the head kernel), and the backward sums (every
// ∇W_l, ∇b_l and the nll) as one tiled launch of the pass's own (kernels/cuda_mlp/weight_grad.h; kernels.cuda_mlp_wgrad:
// fused).
//
// Handled: a categorical likelihood, float32 or float64, contiguous tensors, depth ≤ 8, and an output
// layer whose weights fit in shared memory beside a few rows (out_{L−1}·in_{L−1} ≤ ~10,000 float32).
// Anything else returns an undefined tensor before launching anything, and the caller takes ATen's path.
// Checked on an H200 against the reference (MlpFused.CudaEqualsReference). kernels.cuda_mlp: auto (the
// default) takes it for layers of up to 640,000 weights, where it measured faster; fused forces it.
// In a CUDA graph it costs its 2 + depth launches; the split counters make it safe to replay.
//
// Parallel chains (models/mlp_chains.h): with `chains` = C, x holds C blocks of n rows (chain-major),
// the labels likewise, and every layer's tensors are stacked over the chains (W_l [C, out, in], b_l
// [C, out]); each launch runs all chains (blockIdx.y), chain c's rows against chain c's layers, so the
// launch count is the same as one chain's. No prior precisions with chains. On an H100 it ran at half
// the speed of ATen's batched products for 100 and 1,000 chains of H.1 (docs/performance.md), so
// kernels.cuda_mlp: auto leaves chains to ATen; `fused` takes this pass.
// One minibatch for every chain (`shared`, train.chain_minibatch: shared): x [n, in] and y [n] are every
// chain's rows. Taken for one hidden layer (App. H.1's shape) on the cuBLAS route, where both large products
// become one GEMM over all chains each, as in the one-chain step:
//   P = x · [W_0^(1); …; W_0^(C)]ᵀ               [n, C·h], chain c's pre-activations in columns c·h … c·h + h − 1
//   the head per (rows, chain): h_1 = act(P + b_0) and g_1 = (g_2 W_1) ⊙ act'(h_1) in P's layout, g_2 chain-major
//   [∇W_0^(1); …; ∇W_0^(C)] = g_1ᵀ x             [C·h, in], one product
//   ∇W_1, ∇b_1, ∇b_0 and the nll per chain in the last launch (strided operands).
// Anything else with `shared` returns an undefined tensor (the caller's autograd runs).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "kernels/cpu/matmul.h"  // Activation

namespace sgmcmc::kernels {

struct MlpLayerTensors {
  torch::Tensor weight, bias;            // [out, in], [out]
  torch::Tensor weight_grad, bias_grad;  // the same shapes: written (overwrite) or accumulated into
  // Optional, both or neither, overwriting only: the prior's precisions as 0-dim tensors of the weights'
  // dtype and device; then ∇W_l = g_{l+1}ᵀ h_l + λ_W W_l and ∇b_l = Σ_i g_{l+1,i} + λ_b b_l (the
  // prior's gradient in the same epilogue: no λθ pass over the gradients before the backward pass).
  torch::Tensor weight_lambda, bias_lambda;
};

// Kept from one call to the next (one minibatch shape): h_1 … h_{L−1}, g_1 … g_L, the rows' nll, the
// split-K partial sums and the tiles' arrival counts.
struct MlpFusedScratch {
  std::vector<torch::Tensor> h, g, work, counters;
  torch::Tensor row_nll;
  torch::Tensor pre;  // the cuBLAS route's last hidden layer before its bias and activation
  torch::Tensor pre_parts;  // the same as kernels.cuda_mlp_kparts partial products over k, [parts · rows · w]
  std::vector<torch::Tensor> wgrad_parts;  // the hidden layers' ∇W_l as such parts (with the column blocks)
  torch::Tensor forward_counters;  // kernels.cuda_mlp_forward: fused — its row groups' arrival counts
  bool forward_head_applied = false;  // whether the last call ran that launch (instead of product and head)
  int forward_applied = 0;  // how many hidden layers' forward products it ran that way (the last one's with the head)
  int wgrad_applied = 0;  // kernels.cuda_mlp_wgrad: fused — how many hidden ∇W_l the last call's tiles wrote
  // Optional: a 0-dim float64 tensor on the pass's device into which the pass's last kernel also adds
  // loss_weight · nll (the trainer's running loss: one kernel a step less than adding it afterwards).
  // A sum of another dtype, shape or device makes the pass decline (an undefined result).
  torch::Tensor loss_sum;
  double loss_weight = 1.0;
};

// False with kernels.cuda_mlp: aten (core/kernel_settings.h).
bool mlp_fused_cuda_enabled();
// True with kernels.cuda_mlp_prior: fused, the default (λθ in the weight-gradient epilogue).
bool mlp_fused_prior_enabled();

// The pass above on CUDA tensors: x [n, in_0], int64 labels [n]. Writes ∇W_l, ∇b_l (overwrite) or adds
// to them, and returns nll = Σ_i nll_i as a 0-dim tensor; an undefined tensor when the shapes, dtypes
// or layouts are outside what it handles, or (kernels.cuda_mlp: auto) a layer has more than 640,000
// weights. Defined in CUDA builds only.
torch::Tensor mlp_backward_fused_cuda(const torch::Tensor& x, const torch::Tensor& targets,
                                      const std::vector<MlpLayerTensors>& layers, Activation act, double scale,
                                      bool overwrite, MlpFusedScratch& scratch, int64_t chains = 1,
                                      bool shared = false);

// The same arithmetic on contiguous float32/float64 CPU tensors, in plain loops, with the kernels'
// per-element functions (activation_hd.h, softmax_xent_row.h): the reference the CUDA test compares
// with. std::invalid_argument on a label outside [0, out_{L−1}) or mismatched shapes.
// `chains` > 1: stacked layers as above, each chain's block of rows through its own layers; with `shared`
// every chain through all of x's rows (any depth).
torch::Tensor mlp_backward_reference(const torch::Tensor& x, const torch::Tensor& targets,
                                     const std::vector<MlpLayerTensors>& layers, Activation act, double scale,
                                     bool overwrite, int64_t chains = 1, bool shared = false);

}  // namespace sgmcmc::kernels
