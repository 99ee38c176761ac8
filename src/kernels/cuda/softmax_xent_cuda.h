// The categorical likelihood's loss and output gradient on CUDA tensors in one kernel (a thread per row,
// kernels/cuda/softmax_xent_row.h), then the nll Σ and the bias gradient's column sums by ATen's (deterministic)
// reductions: 4 kernels where the ATen path (log_softmax, nll_loss, exp, the one-hot fill and scatter, the
// scaling, the column sum, its add) launches 8, one of them nll_loss's single-block reduction (18.5 µs of
// the 252 µs an App. H.1 step spends in kernels on an H100).
//
// Tested on an H100: Models.SoftmaxXentCudaKernelEqualsAten passes, and the full App. H.1 run takes
// 32.5 s eager instead of 41.1, and 23.0 s with train.graph instead of 26.6
// (docs/performance.md). The default on CUDA; kernels.cuda_loss: aten gives ATen's ops.
#pragma once

#include <torch/torch.h>

namespace sgmcmc::kernels {

// Contiguous [n, k] float32/float64 CUDA logits, int64 labels [n], grad [n, k] written, bias_grad [k]
// (optional) accumulated into. Returns the nll Σ (0-dim). Defined in CUDA builds only.
torch::Tensor softmax_xent_backward_cuda(const torch::Tensor& logits, const torch::Tensor& targets, double scale,
                                         torch::Tensor& grad, const torch::Tensor& bias_grad);

}  // namespace sgmcmc::kernels
