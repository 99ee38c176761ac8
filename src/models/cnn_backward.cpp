// Cnn::nll_backward: the convnet's gradient without autograd (models/cnn.h). The forward keeps each
// stage's output and the pooling windows' positions of their maxima; then, from the output down,
//   g_f = scale·(softmax(f) − onehot(y))                  (and ∇b_fc2, models/softmax_xent.h)
//   ∇W_fc2 += g_fᵀ h,   g_h = (g_f W_fc2) ⊙ [h > 0]       (and ∇b_fc1 in the same pass)
//   ∇W_fc1 += g_hᵀ p₂,  g_p₂ = g_h W_fc1
//   g_c₂ = pool-backward(g_p₂),  (g_p₁, ∇W_conv2, ∇b_conv2) = convolution_backward(g_c₂, p₁, W_conv2)
//   g_c₁ = pool-backward(g_p₁),  (∇W_conv1, ∇b_conv1) = convolution_backward(g_c₁, x, W_conv1)
// The products accumulate straight into the prior-seeded .grad (GEMM with a sum epilogue), where
// autograd computes each gradient into a temporary and adds it (AccumulateGrad); no graph is built.
// nll_backward_overwrite writes the same gradients over .grad (the prior folded into the update).
// CPU float32/float64 (the fused pooling's device); elsewhere the trainer runs autograd.
#include <ATen/ATen.h>

#include "kernels/cpu/matmul.h"
#include "models/activation_backward.h"
#include "models/cnn.h"
#include "models/linear.h"
#include "models/relu_pool.h"
#include "models/softmax_xent.h"

namespace sgmcmc {

namespace {

// (∂input if wanted, then ∂W and ∂b added into their .grad, or written over it) of a stride-1,
// unpadded convolution.
torch::Tensor conv_backward(const torch::Tensor& grad_out, const torch::Tensor& input, torch::nn::Conv2d& conv,
                            bool input_grad, bool overwrite) {
  auto& w = conv->weight;
  auto [gi, gw, gb] = at::convolution_backward(grad_out, input, w, c10::IntArrayRef{w.size(0)}, {1, 1}, {0, 0},
                                               {1, 1}, false, {0, 0}, 1, {input_grad, true, true});
  if (overwrite) {
    w.mutable_grad().copy_(gw);
    conv->bias.mutable_grad().copy_(gb);
  } else {
    w.mutable_grad().add_(gw);
    conv->bias.mutable_grad().add_(gb);
  }
  return gi;
}

}  // namespace

torch::Tensor Cnn::nll_backward(const Batch& batch, double scale) { return backward_pass(batch, scale, false); }

torch::Tensor Cnn::nll_backward_overwrite(const Batch& batch, double scale) {
  return backward_pass(batch, scale, true);
}

torch::Tensor Cnn::backward_pass(const Batch& batch, double scale, bool overwrite) {
  for (const auto& p : parameters())
    if (!p.grad().defined()) return {};
  const auto x = batch.inputs.dim() == 3 ? batch.inputs.unsqueeze(1) : batch.inputs;
  if (!relu_max_pool2x2_fusable(x)) return {};
  torch::NoGradGuard no_grad;
  // forward, keeping what the backward reads
  const auto c1 = conv1_->forward(x);
  const auto [p1, arg1] = relu_max_pool2x2_forward(c1);
  const auto c2 = conv2_->forward(p1);
  const auto [p2, arg2] = relu_max_pool2x2_forward(c2);
  const auto p2f = p2.reshape({p2.size(0), flat_});
  const auto h = linear(p2f, fc1_->weight, fc1_->bias, kernels::Activation::kRelu);
  const auto f = linear(h, fc2_->weight, fc2_->bias);
  // backward (overwriting: the fully connected biases' gradients are sums accumulated below)
  if (overwrite) {
    fc1_->bias.mutable_grad().zero_();
    fc2_->bias.mutable_grad().zero_();
  }
  auto g = at::empty_like(f);
  auto nll = softmax_xent_backward(f, batch.targets, scale, g, fc2_->bias.mutable_grad());
  if (overwrite) kernels::matmul_out(fc2_->weight.mutable_grad(), g.t(), h);
  else kernels::matmul_acc_(fc2_->weight.mutable_grad(), g.t(), h);
  auto gh = at::empty_like(h);
  kernels::matmul_out(gh, g, fc2_->weight);
  activation_backward_out(gh, gh, h, kernels::Activation::kRelu, fc1_->bias.mutable_grad());
  if (overwrite) kernels::matmul_out(fc1_->weight.mutable_grad(), gh.t(), p2f);
  else kernels::matmul_acc_(fc1_->weight.mutable_grad(), gh.t(), p2f);
  auto gp2 = at::empty_like(p2f);
  kernels::matmul_out(gp2, gh, fc1_->weight);
  const auto gc2 = relu_max_pool2x2_backward(gp2.view(p2.sizes()), arg2, c2.sizes());
  const auto gp1 = conv_backward(gc2, p1, conv2_, true, overwrite);
  const auto gc1 = relu_max_pool2x2_backward(gp1, arg1, c1.sizes());
  conv_backward(gc1, x, conv1_, false, overwrite);
  return nll;
}

}  // namespace sgmcmc
