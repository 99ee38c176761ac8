// Mlp::nll_backward: the multilayer perceptron's gradient by hand (models/mlp.h states the equations).
#include <ATen/ATen.h>

#include "kernels/matmul.h"
#include "models/linear.h"
#include "models/mlp.h"
#include "models/softmax_xent.h"

namespace sgmcmc {

torch::Tensor Mlp::nll_backward(const Batch& batch, double scale) {
  for (const auto& layer : layers_)
    if (!layer->weight.grad().defined() || !layer->bias.grad().defined()) return {};
  torch::NoGradGuard no_grad;
  const size_t L = layers_.size();
  std::vector<torch::Tensor> h(L + 1);
  h[0] = batch.inputs.reshape({batch.inputs.size(0), -1});
  const auto act = kernels::activation_from_name(options_.activation);
  for (size_t l = 0; l < L; ++l)  // h_{l+1} = act(h_l W_lᵀ + b_l), the activation in the GEMM's epilogue
    h[l + 1] = linear(h[l], layers_[l]->weight, layers_[l]->bias, l + 1 < L ? act : kernels::Activation::kNone);
  torch::Tensor nll, g;
  if (options_.classification()) {
    // the output gradient, the nll and the output layer's ∇b in one pass (models/softmax_xent.h)
    g = at::empty_like(h[L]);
    nll = softmax_xent_backward(h[L], batch.targets, scale, g, layers_[L - 1]->bias.mutable_grad());
  } else {
    nll = likelihood_nll(options_, h[L], batch, tau_);
    const auto r = h[L].reshape({h[L].size(0)}) - batch.targets.to(h[L].dtype());
    g = (r * (tau_ * scale)).unsqueeze(1);
  }
  for (size_t l = L; l-- > 0;) {
    auto& w = layers_[l]->weight;
    kernels::matmul_acc_(w.mutable_grad(), g.t(), h[l]);
    // the output layer's ∇b (the categorical one came with g); the hidden layers' with their g below
    if (l + 1 == L && !options_.classification()) layers_[l]->bias.mutable_grad().add_(g.sum(0));
    if (l == 0) break;
    auto d = at::empty({g.size(0), w.size(1)}, g.options());
    kernels::matmul_out(d, g, w);
    // g_{l−1} = (g_l W_l) ⊙ act'(h_l), and ∇b_{l−1} += Σ_i g_{l−1} in the same pass
    activation_backward_out(d, d, h[l], act, layers_[l - 1]->bias.mutable_grad());
    g = d;
  }
  return nll;
}

}  // namespace sgmcmc
