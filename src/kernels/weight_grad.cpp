// The tiled weight-gradient launch's applicability check and CPU reference (kernels/weight_grad.h); the
// kernel is in weight_grad_cuda.cu.
#include "kernels/weight_grad.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

#include "kernels/warp_split_sum.h"

namespace sgmcmc::kernels {

namespace {

using S = WeightGradShape;

template <typename T>
void reference(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate) {
  const int64_t r = a.size(0), m = a.size(1), n = b.size(1);
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* pc = c.data_ptr<T>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const T z = warp_split_sum<S::kChunk, S::kWarps, T>(
          r, [&](int64_t q) { return std::pair{pa[q * m + i], pb[q * n + j]}; });
      pc[i * n + j] = accumulate ? pc[i * n + j] + z : z;
    }
}

}  // namespace

bool weight_grad_applies(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c) {
  for (const auto* t : {&a, &b, &c})
    if (!t->defined() || t->dim() != 2 || !t->is_contiguous() || t->scalar_type() != a.scalar_type() ||
        t->device() != a.device() || t->numel() >= std::numeric_limits<int32_t>::max())
      return false;
  if (a.scalar_type() != torch::kFloat32 && a.scalar_type() != torch::kFloat64) return false;
  const int64_t r = a.size(0), m = a.size(1), n = b.size(1);
  return r >= 1 && m >= 1 && n >= 1 && b.size(0) == r && c.size(0) == m && c.size(1) == n;
}

void weight_grad_reference(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate) {
  if (!weight_grad_applies(a, b, c) || !a.device().is_cpu())
    throw std::invalid_argument("weight_grad_reference: tensors outside what the launch takes");
  if (a.scalar_type() == torch::kFloat64) reference<double>(a, b, c, accumulate);
  else reference<float>(a, b, c, accumulate);
}

}  // namespace sgmcmc::kernels
