// The categorical likelihood's loss and output gradient in one pass over the logits, for the MLP's own
// backward (mlp_backward.cpp). For logits f [n, k], labels y [n] and a scale s (N/n):
//   nll = Σ_i (log Σ_j e^{f_ij} − f_{i,y_i}),
//   g_ij = s·(softmax(f_i)_j − [j = y_i])              (written into `grad`, [n, k]),
//   bias_grad_j += Σ_i g_ij                            (when `bias_grad` is defined: the output layer's ∇b).
// This replaces log_softmax, nll_loss, exp, the one-hot scatter, the scaling, the column sum and its
// add: seven ATen ops (and their thread wake-ups) on a small [n, k] block. Each row is max-shifted;
// the exponentials are kernels/update/philox.h's branch-free fast_expf (Cephes, ~1 ulp), the log-sum-exp and
// the sums in float64. Contiguous float32/float64 CPU tensors; other devices and dtypes get the same
// ATen ops. Labels outside [0, k) are an error, as in nll_loss. tests/test_models.cpp compares it with
// autograd on log_softmax + nll_loss.
#pragma once

#include <torch/torch.h>

namespace sgmcmc {

// Returns the nll Σ as a 0-dim tensor of the logits' dtype.
torch::Tensor softmax_xent_backward(const torch::Tensor& logits, const torch::Tensor& targets, double scale,
                                    torch::Tensor& grad, const torch::Tensor& bias_grad);

}  // namespace sgmcmc
