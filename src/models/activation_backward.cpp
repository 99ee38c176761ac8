#include "models/activation_backward.h"

#include <ATen/record_function.h>

#include <algorithm>

#include "models/row_tasks.h"
#if defined(SGMCMC_WITH_CUDA)
#endif

namespace sgmcmc {

namespace {

void aten_path(torch::Tensor& out, const torch::Tensor& g, const torch::Tensor& y, kernels::Activation act,
               const torch::Tensor& bias_grad) {
  switch (act) {
    case kernels::Activation::kSigmoid: at::sigmoid_backward_out(out, g, y); break;
    case kernels::Activation::kTanh: at::tanh_backward_out(out, g, y); break;
    case kernels::Activation::kRelu: at::threshold_backward_out(out, g, y, 0); break;
    case kernels::Activation::kNone: if (!out.is_same(g)) out.copy_(g); break;
  }
  if (bias_grad.defined()) {
    torch::Tensor b = bias_grad;  // the same storage
    b.add_(out.sum(0));
  }
}

// ATen's formulas (aten/src/ATen/native/cpu/BinaryOpsKernel.cpp, Activation.cpp in 1.13)
template <typename T>
inline T derivative_times(kernels::Activation act, T g, T y) {
  switch (act) {
    case kernels::Activation::kSigmoid: return g * (T(1) - y) * y;
    case kernels::Activation::kRelu: return y <= T(0) ? T(0) : g;
    case kernels::Activation::kNone:
    case kernels::Activation::kTanh:  // never here (activation_backward_out)
      return g;
  }
  return g;
}

// Rows [r0, r1); the activation a compile-time constant so that the loop vectorizes. Compiled for
// the baseline ISA, AVX2 and x86-64-v4, chosen at load time (the baseline's SSE2 did two doubles of
// the column sums per instruction): the same bits on each, as neither loop has a product to fuse
// into an add and each column's sum keeps its order.
template <typename T, kernels::Activation A>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("default", "arch=haswell", "arch=x86-64-v4")))
#endif
void rows(T* out, const T* g, const T* y, int64_t r0, int64_t r1, int64_t k, double* colsum) {
  for (int64_t i = r0; i < r1; ++i) {
    T* o = out + i * k;
    const T* gi = g + i * k;
    const T* yi = y + i * k;
    for (int64_t j = 0; j < k; ++j) o[j] = derivative_times<T>(A, gi[j], yi[j]);
    if (colsum)
      for (int64_t j = 0; j < k; ++j) colsum[j] += o[j];
  }
}

template <typename T>
void cpu_path(torch::Tensor& out, const torch::Tensor& g, const torch::Tensor& y, kernels::Activation act,
              const torch::Tensor& bias_grad) {
  const int64_t n = g.size(0), k = g.size(1);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(k, 1));  // rows per task
  T* op = out.data_ptr<T>();
  const T* gp = g.data_ptr<T>();
  const T* yp = y.data_ptr<T>();
  rows_with_column_sums<T>(n, k, grain, bias_grad, [&](int64_t r0, int64_t r1, double* cs) {
    switch (act) {
      case kernels::Activation::kSigmoid: rows<T, kernels::Activation::kSigmoid>(op, gp, yp, r0, r1, k, cs); break;
      case kernels::Activation::kTanh: break;  // not here (activation_backward_out)
      case kernels::Activation::kRelu: rows<T, kernels::Activation::kRelu>(op, gp, yp, r0, r1, k, cs); break;
      case kernels::Activation::kNone: rows<T, kernels::Activation::kNone>(op, gp, yp, r0, r1, k, cs); break;
    }
    return 0.0;
  });
}

}  // namespace

void activation_backward_out(torch::Tensor& out, const torch::Tensor& g, const torch::Tensor& y,
                             kernels::Activation act, const torch::Tensor& bias_grad) {
  RECORD_FUNCTION("sgmcmc::activation_backward", std::vector<c10::IValue>());
  const auto dt = g.scalar_type();
  // the layouts the one-pass paths take (CPU loop, CUDA kernel); anything else gets the ATen ops
  const bool plain = g.dim() == 2 && (dt == torch::kFloat32 || dt == torch::kFloat64) && g.is_contiguous() &&
                     y.is_contiguous() && out.is_contiguous() && y.sizes() == g.sizes() && out.sizes() == g.sizes() &&
                     y.scalar_type() == dt && out.scalar_type() == dt && y.device() == g.device() &&
                     out.device() == g.device() &&
                     (!bias_grad.defined() || (bias_grad.is_contiguous() && bias_grad.scalar_type() == dt &&
                                               bias_grad.numel() == g.size(1) && bias_grad.device() == g.device()));
  // tanh stays with ATen: its kernel computes 1 − y² with one rounding (a contracted FMA), which a
  // portable loop does not reproduce bit for bit
  const bool cpu = plain && g.device().is_cpu() && act != kernels::Activation::kTanh;
  if (!cpu) return aten_path(out, g, y, act, bias_grad);
  if (dt == torch::kFloat64) cpu_path<double>(out, g, y, act, bias_grad);
  else cpu_path<float>(out, g, y, act, bias_grad);
}

}  // namespace sgmcmc
