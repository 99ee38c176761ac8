// BPMF's likelihood gradient on CUDA tensors in one kernel (Bpmf::nll_backward's equations, models/bpmf.h):
// a warp per rating computes U_u·V_v (a lane per latent dimension, a shuffle reduction), the residual
// r = y − (U_u·V_v + a_u + b_v + μ) and e = −scale·τ·r, then adds e·V_v into ∇U_u, e·U_u into ∇V_v and e
// into ∇a_u, ∇b_v with atomics (as ATen's index_add_ does on CUDA: the order of the additions, and so the
// last bits, vary between runs), and the block's Σ r² into one float64; a one-thread kernel turns that
// into the nll. τ and μ are read from their device buffers, so a CUDA graph capture stays valid when a
// Gibbs step resamples τ in place. Autograd's version of the same step launches about thirty kernels
// (gathers, products, sums, sparse gradients) and runs at 6,364 steps/s at ml-1M's shape on an H100
// with train.graph, short of a target of 10,000 steps/s.
//
// Tested on an H100: Bpmf.CudaOwnBackwardEqualsAutograd passes, and at ml-1M's shape this kernel
// takes SGHMC from 6,341 to 10,817 steps/s with train.graph (1,010 → 7,819 eager;
// docs/performance.md). The default on CUDA; kernels.cuda_bpmf: aten gives autograd's version.
#pragma once

#include <torch/torch.h>

namespace sgmcmc::kernels {

// uv [n, 2] int64 (user, item), y [n] float32, U [users, d], V [items, d], a [users], b [items], their
// .grad tensors (contiguous float32, all on one CUDA device), μ and τ 0-dim float32 device tensors.
// Accumulates into the gradients; returns the nll (0-dim float32). Defined in CUDA builds only.
torch::Tensor bpmf_backward_cuda(const torch::Tensor& uv, const torch::Tensor& y, const torch::Tensor& U,
                                 const torch::Tensor& V, const torch::Tensor& a, const torch::Tensor& b,
                                 torch::Tensor& gU, torch::Tensor& gV, torch::Tensor& ga, torch::Tensor& gb,
                                 const torch::Tensor& mu, const torch::Tensor& tau, double scale);

}  // namespace sgmcmc::kernels
