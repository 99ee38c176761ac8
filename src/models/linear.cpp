// models/linear.h: the fused linear layer and its autograd node.
#include "models/linear.h"

namespace sgmcmc {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

torch::Tensor forward_out(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                          kernels::Activation act) {
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(-2);
  auto y = at::empty(sizes, x.options());
  kernels::matmul_out(y, x, weight.transpose(-2, -1), bias, act);
  return y;
}

struct LinearFunction : torch::autograd::Function<LinearFunction> {
  // `bias` is an empty placeholder when has_bias is false (LibTorch 1.13's Function::apply does not take
  // undefined tensors).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, int64_t act, bool has_bias) {
    auto y = forward_out(x, weight, has_bias ? bias : torch::Tensor(), static_cast<kernels::Activation>(act));
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["act"] = act;
    ctx->save_for_backward({x, weight, y});
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& weight = saved[1];
    const auto act = static_cast<kernels::Activation>(ctx->saved_data["act"].toInt());
    auto g = grads[0].contiguous();
    if (act != kernels::Activation::kNone) {
      auto gz = at::empty_like(g);
      activation_backward_out(gz, g, saved[2], act);
      g = gz;
    }
    torch::Tensor gx, gw, gb;
    if (ctx->needs_input_grad(0)) {
      gx = at::empty_like(x, at::MemoryFormat::Contiguous);
      kernels::matmul_out(gx, g, weight);
    }
    if (ctx->needs_input_grad(1)) {
      gw = at::empty_like(weight, at::MemoryFormat::Contiguous);
      kernels::matmul_out(gw, g.transpose(-2, -1), x);
    }
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) gb = g.sum(-2);
    return {gx, gw, gb, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                     kernels::Activation act) {
  const bool bias_grad = bias.defined() && bias.requires_grad();
  if (!torch::GradMode::is_enabled() || !(x.requires_grad() || weight.requires_grad() || bias_grad)) {
    torch::NoGradGuard no_grad;
    return forward_out(x, weight, bias, act);
  }
  return LinearFunction::apply(x, weight, bias.defined() ? bias : at::empty({0}, x.options()), static_cast<int64_t>(act),
                               bias.defined());
}

}  // namespace sgmcmc
