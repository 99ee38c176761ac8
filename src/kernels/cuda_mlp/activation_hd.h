// The MLP's activations and their derivatives as host-device functions, one definition for the CUDA
// kernels (mlp_fused_cuda.cu, mlp_forward_head_cuda.cu) and their CPU reference (mlp_fused_reference.cpp).
// The formulas are ATen's CUDA ones: sigmoid 1/(1 + e^−x), relu x ≤ 0 ? 0 : x (NaN stays NaN, as
// clamp_min), tanh; the derivatives from the activation's output y, as autograd takes them:
// sigmoid' g·(1 − y)·y, relu' y ≤ 0 ? 0 : g, tanh' g·(1 − y²).
#pragma once

#include <cmath>

#include "kernels/update/fused_elementwise.h"  // SGMCMC_HD
#include "kernels/cpu/matmul.h"             // Activation

namespace sgmcmc::kernels {

template <typename T>
SGMCMC_HD T activate_hd(Activation act, T x) {
  switch (act) {
#if defined(__CUDA_ARCH__)  // CUDA's float and double overloads
    case Activation::kSigmoid: return T(1) / (T(1) + exp(-x));
    case Activation::kTanh: return tanh(x);
#else
    case Activation::kSigmoid: return T(1) / (T(1) + std::exp(-x));
    case Activation::kTanh: return std::tanh(x);
#endif
    case Activation::kRelu: return x <= T(0) ? T(0) : x;
    case Activation::kNone: break;
  }
  return x;
}

// g·act'(x) with act' taken from y = act(x).
template <typename T>
SGMCMC_HD T derivative_times_hd(Activation act, T g, T y) {
  switch (act) {
    case Activation::kSigmoid: return g * (T(1) - y) * y;
    case Activation::kRelu: return y <= T(0) ? T(0) : g;
    case Activation::kTanh: return g * (T(1) - y * y);
    case Activation::kNone: break;
  }
  return g;
}

}  // namespace sgmcmc::kernels
