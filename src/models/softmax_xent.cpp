#include "models/softmax_xent.h"

#include "core/kernel_settings.h"

#include <ATen/record_function.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/update/philox.h"
#include "models/row_tasks.h"
#if defined(SGMCMC_WITH_CUDA)
#include <cstdlib>

#include "kernels/cuda/softmax_xent_cuda.h"
#endif

namespace sgmcmc {

namespace {

torch::Tensor aten_path(const torch::Tensor& logits, const torch::Tensor& targets, double scale, torch::Tensor& grad,
                        const torch::Tensor& bias_grad) {
  auto lsm = at::log_softmax(logits, 1);
  auto nll = at::nll_loss(lsm, targets, {}, at::Reduction::Sum);
  grad.copy_(lsm.exp_());
  grad.scatter_add_(1, targets.unsqueeze(1), at::full({targets.size(0), 1}, -1.0, grad.options()));
  grad.mul_(scale);
  if (bias_grad.defined()) {
    torch::Tensor b = bias_grad;  // the same storage
    b.add_(grad.sum(0));
  }
  return nll;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SGMCMC_CLONES __attribute__((target_clones("default", "arch=haswell", "arch=x86-64-v4")))
#else
#define SGMCMC_CLONES
#endif

// e^x over a flat float buffer in place: branch-free fast_expf, so the loop vectorizes (16 wide on
// AVX-512), where a per-row loop of k = 10 calls to expf runs scalar.
SGMCMC_CLONES void exp_in_place(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = kernels::fast_expf(x[i]);
}
void exp_in_place(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

// Rows [r0, r1): the gradient rows, their nll Σ (returned) and their column sums into `colsum` (k).
template <typename T>
double rows(const T* f, const int64_t* y, T* g, int64_t r0, int64_t r1, int64_t k, T s, double* colsum) {
  double nll = 0;
  for (int64_t i = r0; i < r1; ++i) {  // g = f − max_j f (each row shifted: e^g ≤ 1)
    const T* fi = f + i * k;
    const int64_t yi = y[i];
    if (yi < 0 || yi >= k)
      throw std::invalid_argument("softmax_xent_backward: label " + std::to_string(yi) + " is outside [0, " +
                                  std::to_string(k) + ")");
    T m = fi[0];
    for (int64_t j = 1; j < k; ++j) m = fi[j] > m ? fi[j] : m;
    T* gi = g + i * k;
    for (int64_t j = 0; j < k; ++j) gi[j] = fi[j] - m;
    nll -= static_cast<double>(gi[yi]);  // −log softmax(f_i)_y = log Σ_j e^{g_ij} − g_iy
  }
  exp_in_place(g + r0 * k, (r1 - r0) * k);
  for (int64_t i = r0; i < r1; ++i) {
    T* gi = g + i * k;
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += gi[j];
    nll += std::log(sum);
    const T c = static_cast<T>(static_cast<double>(s) / sum);
    for (int64_t j = 0; j < k; ++j) gi[j] *= c;
    gi[y[i]] -= s;
    if (colsum)
      for (int64_t j = 0; j < k; ++j) colsum[j] += gi[j];
  }
  return nll;
}

template <typename T>
torch::Tensor cpu_path(const torch::Tensor& f, const torch::Tensor& y, double scale, torch::Tensor& grad,
                       const torch::Tensor& bias_grad) {
  const int64_t n = f.size(0), k = f.size(1);
  // ~32k elements per task: H.1's 500 × 10 block is one task, on the calling thread
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(k, 1));
  const T* fp = f.data_ptr<T>();
  const int64_t* yp = y.data_ptr<int64_t>();
  T* gp = grad.data_ptr<T>();
  const double nll = rows_with_column_sums<T>(n, k, grain, bias_grad, [&](int64_t r0, int64_t r1, double* cs) {
    return rows<T>(fp, yp, gp, r0, r1, k, static_cast<T>(scale), cs);
  });
  return torch::full({}, nll, f.options());
}

}  // namespace

torch::Tensor softmax_xent_backward(const torch::Tensor& logits, const torch::Tensor& targets, double scale,
                                    torch::Tensor& grad, const torch::Tensor& bias_grad) {
  RECORD_FUNCTION("sgmcmc::softmax_xent", std::vector<c10::IValue>());
  // the layouts the one-pass paths take (CPU loop, CUDA kernel); anything else gets the ATen ops
  const bool plain = logits.dim() == 2 && logits.is_contiguous() &&
                     (logits.scalar_type() == torch::kFloat32 || logits.scalar_type() == torch::kFloat64) &&
                     grad.is_contiguous() && grad.sizes() == logits.sizes() && grad.scalar_type() == logits.scalar_type() &&
                     targets.scalar_type() == torch::kInt64 && targets.is_contiguous() && targets.dim() == 1 &&
                     targets.size(0) == logits.size(0) &&
                     (!bias_grad.defined() || (bias_grad.is_contiguous() && bias_grad.numel() == logits.size(1) &&
                                               bias_grad.scalar_type() == logits.scalar_type()));
#if defined(SGMCMC_WITH_CUDA)
  // The one-kernel CUDA path (kernels/cuda/softmax_xent_cuda.h); kernels.cuda_loss: aten gives ATen's ops instead.
  if (kernel_settings().cuda_loss_fused && plain && logits.is_cuda())
    return kernels::softmax_xent_backward_cuda(logits, targets, scale, grad, bias_grad);
#endif
  const bool cpu = plain && logits.device().is_cpu();
  if (!cpu) return aten_path(logits, targets, scale, grad, bias_grad);
  if (logits.size(0) == 0) return torch::zeros({}, logits.options());
  return logits.scalar_type() == torch::kFloat64 ? cpu_path<double>(logits, targets, scale, grad, bias_grad)
                                                 : cpu_path<float>(logits, targets, scale, grad, bias_grad);
}

}  // namespace sgmcmc
