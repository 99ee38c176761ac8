// Mlp::nll_backward: the multilayer perceptron's gradient by hand (models/mlp.h states the equations).
#include <ATen/ATen.h>

#include <cstring>

#include "kernels/cpu/matmul.h"
#include "kernels/cuda_mlp/mlp_fused.h"
#include "models/activation_backward.h"
#include "models/mlp.h"
#include "models/softmax_xent.h"

namespace sgmcmc {

namespace {

// `buf` as a [rows, cols] tensor with `like`'s dtype and device, reused when it already is one
// (contents undefined).
torch::Tensor sized(torch::Tensor& buf, int64_t rows, int64_t cols, const torch::Tensor& like) {
  if (!buf.defined() || buf.dim() != 2 || buf.size(0) != rows || buf.size(1) != cols ||
      buf.scalar_type() != like.scalar_type() || buf.device() != like.device())
    buf = at::empty({rows, cols}, like.options().requires_grad(false));
  return buf;
}

// tᵀ as a view of t, kept in `view` and made again only when t's data, shape or strides changed (the
// kept view holds t's storage, so another tensor cannot take the old one's address).
torch::Tensor transposed(torch::Tensor& view, const torch::Tensor& t) {
  if (!view.defined() || view.data_ptr() != t.data_ptr() || view.scalar_type() != t.scalar_type() ||
      view.device() != t.device() || view.dim() != 2 || t.dim() != 2 || view.size(0) != t.size(1) ||
      view.size(1) != t.size(0) || view.stride(0) != t.stride(1) || view.stride(1) != t.stride(0))
    view = t.t();
  return view;
}

// x as [n, features]: x itself when 2-D, else a view kept in `view` and made again only when x's data,
// shape or layout changed (a reshape is an ATen op on every call otherwise). The kept view holds x's
// storage, so a new batch tensor cannot take the old one's address.
torch::Tensor rows_of(torch::Tensor& view, const torch::Tensor& x) {
  if (x.dim() == 2) return x;
  if (!view.defined() || !x.is_contiguous() || view.data_ptr() != x.data_ptr() || view.size(0) != x.size(0) ||
      view.numel() != x.numel() || view.scalar_type() != x.scalar_type() || view.device() != x.device())
    view = x.reshape({x.size(0), -1});
  return view;
}

// t := 0 in place (a memset on the CPU: no ATen op for these small tensors).
void zero_in_place(torch::Tensor& t) {
  if (t.device().is_cpu() && t.is_contiguous()) std::memset(t.data_ptr(), 0, t.numel() * t.element_size());
  else t.zero_();
}

}  // namespace

torch::Tensor Mlp::nll_backward(const Batch& batch, double scale) { return backward_pass(batch, scale, false); }

bool Mlp::set_loss_sink(const torch::Tensor& sum, double weight) {
  bwd_.fused.loss_sum = sum;  // the fused pass adds into it; backward_pass's other path below
  bwd_.fused.loss_weight = weight;
  return true;
}

torch::Tensor Mlp::nll_backward_overwrite(const Batch& batch, double scale) {
  return backward_pass(batch, scale, true);
}

torch::Tensor Mlp::nll_backward_seeded(const Batch& batch, double scale, const std::vector<PriorSeed>& seeds) {
#if defined(SGMCMC_WITH_CUDA)
  if (!options_.classification() || !batch.inputs.is_cuda() || !kernels::mlp_fused_cuda_enabled() ||
      !kernels::mlp_fused_prior_enabled())
    return {};
  auto lambda_of = [&](const torch::Tensor& p) {
    for (const auto& s : seeds)
      if (s.param.is_same(p)) return s.lambda;
    return torch::Tensor();
  };
  torch::NoGradGuard no_grad;
  std::vector<kernels::MlpLayerTensors> ls;
  for (auto& layer : layers_) {
    if (!layer->weight.grad().defined() || !layer->bias.grad().defined()) return {};
    ls.push_back({layer->weight, layer->bias, layer->weight.mutable_grad(), layer->bias.mutable_grad(),
                  lambda_of(layer->weight), lambda_of(layer->bias)});
    if (!ls.back().weight_lambda.defined() || !ls.back().bias_lambda.defined()) return {};
  }
  return kernels::mlp_backward_fused_cuda(rows_of(bwd_.x, batch.inputs), batch.targets, ls,
                                          kernels::activation_from_name(options_.activation), scale, true,
                                          bwd_.fused);
#else
  (void)batch, (void)scale, (void)seeds;
  return {};
#endif
}

torch::Tensor Mlp::backward_pass(const Batch& batch, double scale, bool overwrite) {
  for (const auto& layer : layers_)
    if (!layer->weight.grad().defined() || !layer->bias.grad().defined()) return {};
  torch::NoGradGuard no_grad;
#if defined(SGMCMC_WITH_CUDA)
  // the whole pass in 2 + depth kernels (kernels/cuda_mlp/mlp_fused.h; kernels.cuda_mlp), where it applies
  if (options_.classification() && batch.inputs.is_cuda() && kernels::mlp_fused_cuda_enabled()) {
    std::vector<kernels::MlpLayerTensors> ls;
    for (auto& layer : layers_)
      ls.push_back({layer->weight, layer->bias, layer->weight.mutable_grad(), layer->bias.mutable_grad(), {}, {}});
    auto nll = kernels::mlp_backward_fused_cuda(rows_of(bwd_.x, batch.inputs), batch.targets, ls,
                                                kernels::activation_from_name(options_.activation), scale, overwrite,
                                                bwd_.fused);
    if (nll.defined()) return nll;
  }
#endif
  // overwriting: the biases' gradients are sums accumulated below, so they start from zero
  if (overwrite)
    for (auto& layer : layers_) zero_in_place(layer->bias.mutable_grad());
  const size_t L = layers_.size();
  auto& buf = bwd_;
  buf.h.resize(L + 1);
  buf.g.resize(L + 1);
  buf.wt.resize(L);
  buf.gt.resize(L + 1);
  std::vector<torch::Tensor> h(L + 1);
  h[0] = rows_of(buf.x, batch.inputs);
  const int64_t n = h[0].size(0);
  const auto act = kernels::activation_from_name(options_.activation);
  for (size_t l = 0; l < L; ++l) {  // h_{l+1} = act(h_l W_lᵀ + b_l), the activation in the GEMM's epilogue
    const auto& w = layers_[l]->weight;
    h[l + 1] = sized(buf.h[l + 1], n, w.size(0), h[0]);
    kernels::matmul_out(h[l + 1], h[l], transposed(buf.wt[l], w), layers_[l]->bias,
                        l + 1 < L ? act : kernels::Activation::kNone);
  }
  torch::Tensor nll, g;
  if (options_.classification()) {
    // the output gradient, the nll and the output layer's ∇b in one pass (models/softmax_xent.h)
    g = sized(buf.g[L], n, h[L].size(1), h[L]);
    nll = softmax_xent_backward(h[L], batch.targets, scale, g, layers_[L - 1]->bias.mutable_grad());
  } else {
    nll = likelihood_nll(options_, h[L], batch, tau_);
    const auto r = h[L].reshape({h[L].size(0)}) - batch.targets.to(h[L].dtype());
    g = (r * (tau_ * scale)).unsqueeze(1);
  }
  for (size_t l = L; l-- > 0;) {
    auto& w = layers_[l]->weight;
    if (overwrite) kernels::matmul_out(w.mutable_grad(), transposed(buf.gt[l + 1], g), h[l]);
    else kernels::matmul_acc_(w.mutable_grad(), transposed(buf.gt[l + 1], g), h[l]);
    // the output layer's ∇b (the categorical one came with g); the hidden layers' with their g below
    if (l + 1 == L && !options_.classification()) layers_[l]->bias.mutable_grad().add_(g.sum(0));
    if (l == 0) break;
    auto d = sized(buf.g[l], n, w.size(1), g);
    kernels::matmul_out(d, g, w);
    // g_{l−1} = (g_l W_l) ⊙ act'(h_l), and ∇b_{l−1} += Σ_i g_{l−1} in the same pass
    activation_backward_out(d, d, h[l], act, layers_[l - 1]->bias.mutable_grad());
    g = d;
  }
  if (buf.fused.loss_sum.defined()) buf.fused.loss_sum.add_(nll, buf.fused.loss_weight);  // set_loss_sink
  return nll;
}

}  // namespace sgmcmc
