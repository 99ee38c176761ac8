// The forward-and-head launch's applicability check and CPU reference (kernels/cuda_mlp/mlp_forward_head.h); the
// kernel is in mlp_forward_head_cuda.cu.
#include "kernels/cuda_mlp/mlp_forward_head.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/cuda_mlp/activation_hd.h"
#include "kernels/cuda/softmax_xent_row.h"
#include "kernels/cuda_mlp/warp_split_sum.h"

namespace sgmcmc::kernels {

namespace {

using S = MlpForwardHeadShape;

bool same_kind(const torch::Tensor& t, const torch::Tensor& like) {
  return t.defined() && t.is_contiguous() && t.scalar_type() == like.scalar_type() && t.device() == like.device();
}

bool matrix(const torch::Tensor& t, int64_t rows, int64_t cols, const torch::Tensor& like) {
  return same_kind(t, like) && t.dim() == 2 && t.size(0) == rows && t.size(1) == cols;
}

template <typename T>
void reference(const MlpForwardHeadArgs& t) {
  const int64_t n = t.a.size(0), k = t.a.size(1), hdim = t.weight.size(0);
  const T* a = t.a.data_ptr<T>();
  const T* w = t.weight.data_ptr<T>();
  const T* b = t.bias.data_ptr<T>();
  T* h = t.h_out.data_ptr<T>();
  const bool head = t.out_weight.defined();
  const int64_t outs = head ? t.out_weight.size(0) : 0;
  const int64_t* y = head ? t.targets.data_ptr<int64_t>() : nullptr;
  for (int64_t i = 0; head && i < n; ++i)
    if (y[i] < 0 || y[i] >= outs)
      throw std::invalid_argument("mlp_forward_head_reference: label " + std::to_string(y[i]) + " of row " +
                                  std::to_string(i) + " outside [0, " + std::to_string(outs) + ")");
  // z = a Wᵀ: each warp's fma chain over its k's of every chunk, then the warps in order
  for (int64_t i = 0; i < n; ++i)
    for (int64_t u = 0; u < hdim; ++u) {
      const T z = warp_split_sum<S::kChunk, S::kWarps, T>(
          k, [&](int64_t q) { return std::pair{a[i * k + q], w[u * k + q]}; });
      h[i * hdim + u] = activate_hd(t.act, z + b[u]);
    }
  if (!head) return;
  const T* wo = t.out_weight.data_ptr<T>();
  const T* bo = t.out_bias.data_ptr<T>();
  T* g = t.g_out.data_ptr<T>();
  T* d = t.g_hidden.data_ptr<T>();
  T* nll = t.row_nll.data_ptr<T>();
  // the head, row by row, as head_rows computes it
  std::vector<T> f(outs), lanes(32);
  for (int64_t i = 0; i < n; ++i) {
    const T* hi = h + i * hdim;
    for (int64_t c = 0; c < outs; ++c) {
      for (int l = 0; l < 32; ++l) {
        T s = 0;
        for (int64_t j = l; j < hdim; j += 32) s = std::fma(hi[j], wo[c * hdim + j], s);
        lanes[l] = s;
      }
      for (int off = 16; off > 0; off >>= 1) {  // __shfl_xor_sync's butterfly: every lane at once
        std::vector<T> next(32);
        for (int l = 0; l < 32; ++l) next[l] = lanes[l] + lanes[l ^ off];
        lanes = next;
      }
      f[c] = lanes[0] + bo[c];
    }
    nll[i] = softmax_xent_row<T>(f.data(), y[i], outs, static_cast<T>(t.scale), g + i * outs);
    for (int64_t j = 0; j < hdim; ++j) {
      T s = 0;
      for (int64_t c = 0; c < outs; ++c) s = std::fma(g[i * outs + c], wo[c * hdim + j], s);
      d[i * hdim + j] = derivative_times_hd(t.act, s, hi[j]);
    }
  }
}

}  // namespace

bool mlp_forward_head_applies(const MlpForwardHeadArgs& t) {
  const auto& a = t.a;
  if (!a.defined() || (a.scalar_type() != torch::kFloat32 && a.scalar_type() != torch::kFloat64)) return false;
  if (!same_kind(a, a) || a.dim() != 2 || !t.weight.defined() || t.weight.dim() != 2) return false;
  const bool head = t.out_weight.defined();
  const int64_t n = a.size(0), k = a.size(1), hdim = t.weight.size(0);
  if (n < 1 || k < 1 || hdim < 1) return false;
  if (n >= std::numeric_limits<int32_t>::max() / std::max(k, hdim) || k * hdim >= std::numeric_limits<int32_t>::max())
    return false;
  if (!matrix(t.weight, hdim, k, a) || !matrix(t.h_out, n, hdim, a) || !same_kind(t.bias, a) || t.bias.numel() != hdim)
    return false;
  if (!head)  // a hidden layer alone: nothing of the head's
    return !t.out_bias.defined() && !t.targets.defined() && !t.g_out.defined() && !t.g_hidden.defined() &&
           !t.row_nll.defined() && static_cast<size_t>(S::smem_elems(hdim, 0)) * a.element_size() <= S::kMaxSmemBytes;
  if (t.out_weight.dim() != 2) return false;
  const int64_t outs = t.out_weight.size(0);
  if (outs < 1 || !matrix(t.out_weight, outs, hdim, a) || !matrix(t.g_out, n, outs, a) || !matrix(t.g_hidden, n, hdim, a))
    return false;
  for (const auto* v : {&t.out_bias, &t.row_nll})
    if (!same_kind(*v, a)) return false;
  if (t.out_bias.numel() != outs || t.row_nll.numel() != n) return false;
  if (!t.targets.defined() || t.targets.scalar_type() != torch::kInt64 || !t.targets.is_contiguous() ||
      t.targets.numel() != n || t.targets.device() != a.device())
    return false;
  return static_cast<size_t>(S::smem_elems(hdim, outs)) * a.element_size() <= S::kMaxSmemBytes;
}

void mlp_forward_head_reference(const MlpForwardHeadArgs& t) {
  if (!mlp_forward_head_applies(t) || !t.a.device().is_cpu())
    throw std::invalid_argument("mlp_forward_head_reference: tensors outside what the launch takes");
  if (t.a.scalar_type() == torch::kFloat64) reference<double>(t);
  else reference<float>(t);
}

}  // namespace sgmcmc::kernels
