// A linear layer with its activation, y = act(x·Wᵀ + b), as one autograd node whose products run through
// kernels/cpu/matmul.h (oneDNN where built: the bias and the activation in the GEMM's epilogue):
//   forward:  y = act(x Wᵀ + b)
//   backward: g_z = g_y ⊙ act'(y)   (from the output: σ' = y(1−y), tanh' = 1−y², relu' = [y > 0])
//             ∇x = g_z W,  ∇W = g_zᵀ x,  ∇b = Σ_rows g_z
// Batched (the parallel chains' layers): x [C, n, in], W [C, out, in], b [C, out], each chain its own
// layer. The same values as torch::nn::Linear followed by the activation, to float rounding
// (tests/test_models.cpp). Used by the CNN's fully connected layers, the parallel chains and the MLP's
// autograd path; the
// MLP's own backward (mlp_backward.cpp) calls the products directly.
#pragma once

#include <torch/torch.h>

#include "kernels/cpu/matmul.h"
#include "models/activation_backward.h"

namespace sgmcmc {

// `bias` may be undefined (no bias).
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                     kernels::Activation act = kernels::Activation::kNone);

}  // namespace sgmcmc
