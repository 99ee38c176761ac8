// ReLU followed by 2×2 max pooling (stride 2, floor mode), y = maxpool₂(relu(x)) = relu(maxpool₂(x)),
// as one pass over x with one autograd node: the CNN's conv → ReLU → pool (models/cnn.h), which
// ATen runs as three ops forward (clamp_min, max_pool2d_with_indices) and three backward
// (max_pool2d_with_indices_backward with its zero fill, threshold_backward) over the full-size map.
//   forward:  y[n,c,i,j] = max(0, max_{a,b∈{0,1}} x[n,c,2i+a,2j+b]), the window's first maximum kept
//   backward: ∂x at that first maximum = ∂y if y > 0, every other element of x 0 (each window's four
//             elements written in one pass: no separate zero fill).
// Values and gradients equal ATen's relu + max_pool2d bit for bit (first maximum, NaN propagated as
// ATen does; tests/test_models.cpp). CPU float32 and float64 run the fused loop; other devices (CUDA)
// run ATen's ops.
#pragma once

#include <torch/torch.h>

#include <utility>

namespace sgmcmc {

torch::Tensor relu_max_pool2x2(const torch::Tensor& x);

// The two halves without autograd, for a model's own backward (models/cnn_backward.cpp); CPU float32 /
// float64 only (relu_max_pool2x2_fusable). The forward returns y and each window's position of its
// maximum (a byte, 4 where y = 0); the backward writes ∂x ([n, c, H, W] = `input_sizes`) from ∂y.
bool relu_max_pool2x2_fusable(const torch::Tensor& x);
std::pair<torch::Tensor, torch::Tensor> relu_max_pool2x2_forward(const torch::Tensor& x);
torch::Tensor relu_max_pool2x2_backward(const torch::Tensor& grad_y, const torch::Tensor& arg,
                                        c10::IntArrayRef input_sizes);

}  // namespace sgmcmc
