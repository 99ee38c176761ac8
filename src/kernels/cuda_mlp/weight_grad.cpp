// The tiled backward launch's applicability check and CPU reference (kernels/cuda_mlp/weight_grad.h); the kernel is
// in weight_grad_cuda.cu.
#include "kernels/cuda_mlp/weight_grad.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

#include "kernels/cuda_mlp/warp_split_sum.h"

namespace sgmcmc::kernels {

namespace {

using S = WeightGradShape;

bool same_kind(const torch::Tensor& t, const torch::Tensor& like) {
  return t.defined() && t.is_contiguous() && t.scalar_type() == like.scalar_type() && t.device() == like.device() &&
         t.numel() < std::numeric_limits<int32_t>::max();
}

bool matrix(const torch::Tensor& t, int64_t rows, int64_t cols, const torch::Tensor& like) {
  return same_kind(t, like) && t.dim() == 2 && t.size(0) == rows && t.size(1) == cols;
}

bool problem_ok(const WeightGradProblem& p, int64_t r, bool accumulate, const torch::Tensor& like) {
  if (!same_kind(p.a, like) || p.a.dim() != 2 || !same_kind(p.b, like) || p.b.dim() != 2) return false;
  const int64_t m = p.a.size(1), n = p.b.size(1);
  if (p.a.size(0) != r || p.b.size(0) != r || m < 1 || n < 1 || !matrix(p.c, m, n, like)) return false;
  if (p.bias_grad.defined() && (!same_kind(p.bias_grad, like) || p.bias_grad.numel() != m)) return false;
  const bool prior = p.weight_lambda.defined();
  if (prior != p.weight.defined() || prior != p.bias_lambda.defined() || prior != p.bias.defined()) return false;
  if (!prior) return true;
  if (accumulate || !p.bias_grad.defined() || !matrix(p.weight, m, n, like)) return false;
  if (!same_kind(p.bias, like) || p.bias.numel() != m) return false;
  return same_kind(p.weight_lambda, like) && p.weight_lambda.numel() == 1 && same_kind(p.bias_lambda, like) &&
         p.bias_lambda.numel() == 1;
}

template <typename T>
void reference(const WeightGradLaunch& t) {
  const int64_t r = t.problems.front().a.size(0);
  for (const auto& p : t.problems) {
    const int64_t m = p.a.size(1), n = p.b.size(1);
    const T* pa = p.a.data_ptr<T>();
    const T* pb = p.b.data_ptr<T>();
    T* pc = p.c.data_ptr<T>();
    T* pe = p.bias_grad.defined() ? p.bias_grad.data_ptr<T>() : nullptr;
    const bool prior = p.weight_lambda.defined();
    const T lw = prior ? p.weight_lambda.item<T>() : T(0), lb = prior ? p.bias_lambda.item<T>() : T(0);
    const T* w = prior ? p.weight.data_ptr<T>() : nullptr;
    const T* bb = prior ? p.bias.data_ptr<T>() : nullptr;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const T z = warp_split_sum<S::kChunk, S::kWarps, T>(
            r, [&](int64_t q) { return std::pair{pa[q * m + i], pb[q * n + j]}; });
        T& out = pc[i * n + j];
        out = t.accumulate ? out + z : prior ? std::fma(lw, w[i * n + j], z) : z;
      }
      if (pe != nullptr) {  // the ones column
        const T z = warp_split_sum<S::kChunk, S::kWarps, T>(r, [&](int64_t q) { return std::pair{pa[q * m + i], T(1)}; });
        pe[i] = t.accumulate ? pe[i] + z : prior ? std::fma(lb, bb[i], z) : z;
      }
    }
  }
  if (!t.row_nll.defined()) return;
  // the block's sum: thread u from u in steps of kThreads, then the tree over the threads
  const T* in = t.row_nll.data_ptr<T>();
  T part[S::kThreads];
  for (int u = 0; u < S::kThreads; ++u) {
    T s = 0;
    for (int64_t i = u; i < r; i += S::kThreads) s += in[i];
    part[u] = s;
  }
  for (int w = S::kThreads / 2; w > 0; w >>= 1)
    for (int u = 0; u < w; ++u) part[u] += part[u + w];
  t.nll.fill_(part[0]);
  if (t.loss_sum.defined()) t.loss_sum.add_(t.loss_weight * static_cast<double>(part[0]));
}

}  // namespace

bool weight_grad_applies(const WeightGradLaunch& t) {
  if (t.problems.empty() || t.problems.size() > static_cast<size_t>(S::kMaxProblems)) return false;
  const auto& like = t.problems.front().a;
  if (!like.defined() || (like.scalar_type() != torch::kFloat32 && like.scalar_type() != torch::kFloat64) ||
      like.dim() != 2 || like.size(0) < 1)
    return false;
  const int64_t r = like.size(0);
  for (const auto& p : t.problems)
    if (!problem_ok(p, r, t.accumulate, like)) return false;
  if (t.row_nll.defined()) {
    if (!same_kind(t.row_nll, like) || t.row_nll.numel() != r || !same_kind(t.nll, like) || t.nll.numel() != 1)
      return false;
    const auto& ls = t.loss_sum;
    if (ls.defined() && (ls.scalar_type() != torch::kFloat64 || ls.numel() != 1 || ls.device() != like.device()))
      return false;
  } else if (t.nll.defined() || t.loss_sum.defined()) {
    return false;
  }
  return true;
}

void weight_grad_reference(const WeightGradLaunch& t) {
  if (!weight_grad_applies(t) || !t.problems.front().a.device().is_cpu())
    throw std::invalid_argument("weight_grad_reference: tensors outside what the launch takes");
  if (t.problems.front().a.scalar_type() == torch::kFloat64) reference<double>(t);
  else reference<float>(t);
}

WeightGradLaunch weight_grad_of(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
                                bool accumulate) {
  WeightGradLaunch t;
  t.problems.push_back({a, b, c, {}, {}, {}, {}, {}});
  t.accumulate = accumulate;
  return t;
}

}  // namespace sgmcmc::kernels
