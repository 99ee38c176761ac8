// The column blocks' applicability check and CPU reference (kernels/cuda_mlp/mlp_tail.h); the kernel is in
// mlp_tail_cuda.cu.
#include "kernels/cuda_mlp/mlp_tail.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace sgmcmc::kernels {

namespace {

using S = MlpTailShape;

bool same_kind(const torch::Tensor& t, const torch::Tensor& like) {
  return t.defined() && t.is_contiguous() && t.scalar_type() == like.scalar_type() && t.device() == like.device();
}

bool matrix(const torch::Tensor& t, int64_t rows, const torch::Tensor& like) {
  return same_kind(t, like) && t.dim() == 2 && t.size(0) == rows;
}

// A layer's tensors: W and ∇W of `weights` elements, b and ∇b of `outs`; λ both or neither (0-dim of the
// same kind), only when overwriting.
bool layer_ok(const MlpLayerTensors& l, int64_t outs, const torch::Tensor& like, bool accumulate) {
  for (const auto* t : {&l.weight, &l.weight_grad, &l.bias, &l.bias_grad})
    if (!same_kind(*t, like)) return false;
  if (l.bias.numel() != outs || l.bias_grad.numel() != outs || l.weight.numel() != l.weight_grad.numel() ||
      l.weight.numel() % std::max<int64_t>(outs, 1) != 0 || l.weight.numel() >= std::numeric_limits<int32_t>::max())
    return false;
  if (l.weight_lambda.defined() != l.bias_lambda.defined()) return false;
  if (l.weight_lambda.defined()) {
    if (accumulate) return false;
    for (const auto* t : {&l.weight_lambda, &l.bias_lambda})
      if (!same_kind(*t, like) || t->numel() != 1) return false;
  }
  return true;
}

template <typename T>
T fma_of(T a, T b, T c) {
  return std::fma(a, b, c);
}

// Column j of a [n × w] problem (j = w: the ones column), sum i of m: each of the kGroups row groups' fma
// chain (rows ≡ q mod kGroups, in increasing order, from 0), the groups of each super-group (kSuper
// consecutive groups) added in group order, then the super-groups in order. a == nullptr: the column sums
// of b (m = 1).
template <typename T>
T column_sum(const T* a, int m, int i, const T* b, int64_t n, int64_t w, int64_t j) {
  T v = 0;
  for (int sg = 0; sg < S::kGroups / S::kSuper; ++sg) {
    T u = 0;
    for (int q = sg * S::kSuper; q < (sg + 1) * S::kSuper; ++q) {
      T p = 0;
      for (int64_t r = q; r < n; r += S::kGroups) {
        const T bij = j < w ? b[r * w + j] : T(1);
        p = a == nullptr ? p + bij : fma_of(a[r * m + i], bij, p);
      }
      u = q == sg * S::kSuper ? p : u + p;
    }
    v = sg == 0 ? u : v + u;
  }
  return v;
}

template <typename T>
T finish(T v, T* slot, const T* prior, const T* lambda, bool accumulate) {
  if (lambda != nullptr) return fma_of(*lambda, *prior, v);
  return accumulate ? *slot + v : v;
}

template <typename T>
const T* ptr_or_null(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

template <typename T>
torch::Tensor reference(const MlpTailArgs& t) {
  const int64_t n = t.g_out.size(0), outs = t.g_out.size(1), hdim = t.h_last.size(1);
  const bool acc = t.accumulate;
  {  // the output layer: ∇W_{L−1} (columns < hdim) and ∇b_{L−1} (the ones column)
    const T* a = t.g_out.data_ptr<T>();
    const T* b = t.h_last.data_ptr<T>();
    T* c = t.out.weight_grad.data_ptr<T>();
    T* e = t.out.bias_grad.data_ptr<T>();
    const T* lc = ptr_or_null<T>(t.out.weight_lambda);
    const T* le = ptr_or_null<T>(t.out.bias_lambda);
    const T* w = t.out.weight.data_ptr<T>();
    const T* bias = t.out.bias.data_ptr<T>();
    for (int i = 0; i < outs; ++i)
      for (int64_t j = 0; j <= hdim; ++j) {
        const T v = column_sum(a, static_cast<int>(outs), i, b, n, hdim, j);
        if (j < hdim) c[i * hdim + j] = finish(v, c + i * hdim + j, w + i * hdim + j, lc, acc);
        else e[i] = finish(v, e + i, bias + i, le, acc);
      }
  }
  for (size_t l = 0; l < t.hidden.size(); ++l) {  // ∇b_l = Σ_i g_{l+1,i}
    const auto& L = t.hidden[l];
    const int64_t out = t.g_hidden[l].size(1);
    const T* b = t.g_hidden[l].data_ptr<T>();
    T* e = L.bias_grad.data_ptr<T>();
    const T* le = ptr_or_null<T>(L.bias_lambda);
    const T* bias = L.bias.data_ptr<T>();
    for (int64_t j = 0; j < out; ++j) e[j] = finish(column_sum<T>(nullptr, 1, 0, b, n, out, j), e + j, bias + j, le, acc);
  }
  for (size_t l = 0; l < t.hidden.size(); ++l) {  // ∇W_l ← fma(λ_W, W_l, ∇W_l), ∇W_l the parts' sum if given
    const auto& L = t.hidden[l];
    const bool parts = l < t.weight_grad_parts.size() && t.weight_grad_parts[l].defined();
    T* c = L.weight_grad.data_ptr<T>();
    const int64_t count = L.weight.numel();
    if (parts) {
      const auto& pt = t.weight_grad_parts[l];
      const T* p = pt.data_ptr<T>();
      for (int64_t i = 0; i < count; ++i) {
        T v = p[i];
        for (int64_t q = 1; q < pt.size(0); ++q) v += p[q * count + i];
        c[i] = v;
      }
    }
    if (!L.weight_lambda.defined()) continue;
    const T lambda = *L.weight_lambda.data_ptr<T>();
    const T* w = L.weight.data_ptr<T>();
    for (int64_t i = 0; i < count; ++i) c[i] = fma_of(lambda, w[i], c[i]);
  }
  // nll: thread q's sum over i ≡ q (mod kThreads) from 0, then the tree over the threads
  std::vector<T> part(S::kThreads, T(0));
  const T* in = t.row_nll.data_ptr<T>();
  for (int q = 0; q < S::kThreads; ++q)
    for (int64_t i = q; i < n; i += S::kThreads) part[q] += in[i];
  for (int w = S::kThreads / 2; w > 0; w >>= 1)
    for (int q = 0; q < w; ++q) part[q] += part[q + w];
  auto nll = torch::full({}, part[0], t.g_out.options());
  if (t.loss_sum.defined()) {
    double* sum = t.loss_sum.data_ptr<double>();
    *sum = std::fma(t.loss_weight, static_cast<double>(part[0]), *sum);
  }
  return nll;
}

}  // namespace

bool mlp_tail_applies(const MlpTailArgs& t) {
  const auto& like = t.g_out;
  if (!like.defined() || (like.scalar_type() != torch::kFloat32 && like.scalar_type() != torch::kFloat64)) return false;
  if (like.dim() != 2) return false;
  const int64_t n = like.size(0), outs = like.size(1);
  if (n < 1 || outs < 1 || outs > S::kMaxM || !like.is_contiguous()) return false;
  if (!matrix(t.h_last, n, like) || t.h_last.size(1) < 1) return false;
  const int64_t hdim = t.h_last.size(1);
  if (n * std::max<int64_t>(hdim, outs) >= std::numeric_limits<int32_t>::max()) return false;
  if (!layer_ok(t.out, outs, like, t.accumulate) || t.out.weight.numel() != outs * hdim) return false;
  if (t.g_hidden.size() != t.hidden.size()) return false;
  for (size_t l = 0; l < t.hidden.size(); ++l) {
    const auto& g = t.g_hidden[l];
    if (!matrix(g, n, like) || g.size(1) < 1 || n * g.size(1) >= std::numeric_limits<int32_t>::max()) return false;
    if (!layer_ok(t.hidden[l], g.size(1), like, t.accumulate)) return false;
  }
  if (t.weight_grad_parts.size() > t.hidden.size()) return false;
  for (size_t l = 0; l < t.weight_grad_parts.size(); ++l) {
    const auto& pt = t.weight_grad_parts[l];
    if (!pt.defined()) continue;
    const auto& W = t.hidden[l].weight;
    if (t.accumulate || !same_kind(pt, like) || pt.dim() != 3 || pt.size(0) < 1 || pt.size(1) * pt.size(2) != W.numel() ||
        pt.numel() >= std::numeric_limits<int32_t>::max())
      return false;
  }
  if (!same_kind(t.row_nll, like) || t.row_nll.numel() != n) return false;
  if (t.loss_sum.defined() && (!t.loss_sum.is_contiguous() || t.loss_sum.scalar_type() != torch::kFloat64 ||
                               t.loss_sum.numel() != 1 || t.loss_sum.device() != like.device()))
    return false;
  const size_t smem = static_cast<size_t>(std::max<int64_t>(n * outs, S::reduce_elems(outs))) * like.element_size();
  return smem <= S::kMaxSmemBytes;
}

torch::Tensor mlp_tail_reference(const MlpTailArgs& t) {
  if (!mlp_tail_applies(t) || !t.g_out.device().is_cpu())
    throw std::invalid_argument("mlp_tail_reference: tensors outside what the column blocks take (or not on the CPU)");
  return t.g_out.scalar_type() == torch::kFloat64 ? reference<double>(t) : reference<float>(t);
}

}  // namespace sgmcmc::kernels
