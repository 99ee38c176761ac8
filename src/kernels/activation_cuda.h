// The MLP's elementwise work around its products on CUDA, each in one kernel:
//   bias_activation_cuda:      out ← act(out + b)                       (was: add_, then sigmoid_: 2 kernels)
//   activation_backward_cuda:  out ← g ⊙ act'(y),  b_grad += Σ_rows out  (was: sigmoid_backward, sum, add_: 3)
// With act = none the second is the column sum alone (b_grad += Σ_rows g), which the softmax +
// cross-entropy kernel's bias gradient uses (was: sum, add_). An App. H.1 step launches 30 kernels
// on an H100, and a graph-replayed step is 146 µs against its products' 51 µs (docs/performance.md):
// these take 4 of the launches away.
//
// The elementwise formulas are ATen's CUDA ones (sigmoid 1/(1 + e^−x), relu x ≤ 0 ? 0 : x, tanh;
// sigmoid' g·(1 − y)·y, relu' y ≤ 0 ? 0 : g, tanh' g·(1 − y²)). The column sums run in a fixed order
// (a block per 32 columns, eight row strides, then the strides in order), so the result is
// deterministic, but it is not ATen's summation order.
//
// Compile-checked (nvcc sm_90) and run on the CPU emulator (tests/test_cuda_emu_kernels.cpp: against ATen's
// ops in three thread and block orders; tests/test_cuda_emu.cpp: the forward kernel inside the fused pass),
// but not on a GPU, so off by default until Models.ActivationCudaKernelsEqualAten passes on one and a step
// measures faster: kernels.cuda_act: fused turns it on.
#pragma once

#include <torch/torch.h>

#include "kernels/matmul.h"

namespace sgmcmc::kernels {

// True with kernels.cuda_act: fused (core/kernel_settings.h).
bool activation_cuda_enabled();

// Contiguous [n, k] float32/float64 CUDA `out`, bias [k] of its dtype (optional). Defined in CUDA
// builds only.
void bias_activation_cuda(torch::Tensor& out, const torch::Tensor& bias, Activation act);

// Contiguous [n, k] g, y, out of one float dtype on one CUDA device (out may be g); bias_grad [k]
// contiguous (optional), accumulated into. Defined in CUDA builds only.
void activation_backward_cuda(torch::Tensor& out, const torch::Tensor& g, const torch::Tensor& y, Activation act,
                              const torch::Tensor& bias_grad);

}  // namespace sgmcmc::kernels
