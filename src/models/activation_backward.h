// The activation's derivative from its output, for backward passes (models/linear.h's autograd node
// and the MLP's own backward, mlp_backward.cpp):
//   out = g ⊙ act'(y):  σ' = (1 − y)·y,  tanh' = 1 − y²,  relu' = [y > 0]
// with the same arithmetic as ATen's sigmoid_backward, tanh_backward and threshold_backward (same
// bits). When `bias_grad` is given, the layer's bias gradient is added in the same pass:
//   bias_grad_j += Σ_i out_ij
// (column sums in float64 per task, then added). Contiguous 2-D float32/float64 CPU tensors run one
// parallel loop for sigmoid, ReLU and none; tanh (whose ATen kernel rounds 1 − y² once, by FMA) and
// anything else (CUDA, batched chains) run the ATen ops.
#pragma once

#include <torch/torch.h>

#include "kernels/cpu/matmul.h"

namespace sgmcmc {

// `out` may be `g` itself.
void activation_backward_out(torch::Tensor& out, const torch::Tensor& g, const torch::Tensor& y,
                             kernels::Activation act, const torch::Tensor& bias_grad = {});

}  // namespace sgmcmc
