// The column blocks of kernels/cuda_mlp/mlp_tail.h on CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/block_sum_cuda.h"
#include "kernels/cuda/launch_cuda.h"
#include "kernels/cuda_mlp/mlp_tail.h"
#include "kernels/cuda/smem_cuda.h"

namespace sgmcmc::kernels {

// (a namespace of its own: the compile check includes every .cu into one unit)
namespace tail_columns {
namespace {

using S = MlpTailShape;
constexpr int kMaxProblems = 8;
constexpr int kPriorLoads = S::kPriorPerBlock / S::kThreads;
static_assert(S::kGroups % S::kSuper == 0 && S::kThreads == S::kCols * S::kGroups);

// Columns of b [n, w] (and, with `ones`, the column j = w of ones) summed over the rows against a [n, m]:
// C(i, j) = Σ_r a(r, i)·b(r, j) into c [m, w], the ones column into e [m]; a == nullptr: the column sums
// of b (m = 1) into e [w].
template <typename T>
struct Problem {
  const T* a = nullptr;
  const T* b = nullptr;
  int m = 1, w = 0;
  bool ones = false;
  T* c = nullptr;
  T* e = nullptr;
  const T* prior_c = nullptr;  // with lambda_c: C(i, j) = fma(λ_c, prior_c(i, j), sum)
  const T* lambda_c = nullptr;
  const T* prior_e = nullptr;
  const T* lambda_e = nullptr;
  int first_block = 0;
};

// c ← fma(λ, w, c) over `count` elements (λ == nullptr: c as it is). With parts > 1, c's
// sums come as that many partial sums, part_stride apart: c ← fma(λ, w, ((p_0 + p_1) + …)) (or the sum).
template <typename T>
struct Prior {
  T* c = nullptr;
  const T* w = nullptr;
  const T* lambda = nullptr;
  const T* parts = nullptr;
  int nparts = 0;
  int64_t part_stride = 0;
  int count = 0, first_block = 0;
};

template <typename T>
struct Args {
  Problem<T> p[kMaxProblems];
  int problems = 0;
  Prior<T> q[kMaxProblems];
  int priors = 0;
  int n = 0;
  bool accumulate = false;
  int column_blocks = 0, prior_end = 0;  // blocks [0, column_blocks) columns, then priors, then the nll's
  const T* row_nll = nullptr;
  T* nll = nullptr;
  double* loss_sum = nullptr;
  double loss_weight = 0;
};

// One rounding of a·b + c in T (fmaf for float: no detour through double).
template <typename T>
__device__ __forceinline__ T fma_t(T a, T b, T c) {
  if constexpr (std::is_same_v<T, float>) return fmaf(a, b, c);
  else return ::fma(a, b, c);
}

template <typename T>
__device__ __forceinline__ T finish(T v, T* slot, const T* prior, const T* lambda, int64_t at, bool accumulate) {
  if (lambda != nullptr) return fma_t(*lambda, prior[at], v);
  return accumulate ? slot[at] + v : v;
}

// The rows r = grp, grp + kGroups, … of one column against the staged a (m ≤ MB outputs: MB a bucket of m,
// so that the unrolled loop carries no more than a few predicated-off outputs): acc[i] = fma(a_ri, b_rj,
// acc[i]) in increasing r; a == nullptr: acc[0] += b_rj. Each batch of kBatch rows' loads is in flight at
// once, the next batch's during this one's FMAs.
template <typename T, int MB, bool kOnes>
__device__ __forceinline__ void sum_rows(const Problem<T>& p, const T* stage, int n, int grp, int j, bool col_ok,
                                         T (&acc)[MB], T (&cur)[S::kBatch]) {
  constexpr int kStep = S::kGroups * S::kBatch;  // rows a group advances per batch
  const int m = p.m, w = p.w;
  T next[S::kBatch];
  for (int r0 = grp; r0 < n; r0 += kStep) {
    const bool more = r0 + kStep < n;
    if (more) {
#pragma unroll
      for (int t = 0; t < S::kBatch; ++t) {
        const int r = r0 + kStep + t * S::kGroups;
        next[t] = r < n && col_ok ? (j < w ? __ldg(p.b + static_cast<int64_t>(r) * w + j) : T(1)) : T(0);
      }
    }
#pragma unroll
    for (int t = 0; t < S::kBatch; ++t) {
      const int r = r0 + t * S::kGroups;
      if (r >= n) break;
      if constexpr (kOnes) {
        acc[0] += cur[t];
      } else {
        const T* ar = stage + r * m;
#pragma unroll
        for (int i = 0; i < MB; ++i)
          if (i < m) acc[i] = fma_t(ar[i], cur[t], acc[i]);
      }
    }
    if (more) {
#pragma unroll
      for (int t = 0; t < S::kBatch; ++t) cur[t] = next[t];
    }
  }
}

// The group sums into red [kGroups][m][kCols]; each super-group's kSuper groups added in group order into
// its first group's slot (each slot read and written by one thread only); then the super-groups in order
// by the thread that finishes the element.
template <typename T, int MB>
__device__ __forceinline__ T reduce_groups(const T (&acc)[MB], int m, int grp, int lane, T* red) {
  constexpr int kSupers = S::kGroups / S::kSuper;
  const int tid = threadIdx.x, mc = m * S::kCols;
#pragma unroll
  for (int i = 0; i < MB; ++i)
    if (i < m) red[(grp * m + i) * S::kCols + lane] = acc[i];
  __syncthreads();
  for (int idx = tid; idx < kSupers * mc; idx += S::kThreads) {
    const int sg = idx / mc, rest = idx - sg * mc;
    T* g = red + sg * S::kSuper * mc + rest;
    T v = g[0];
#pragma unroll
    for (int q = 1; q < S::kSuper; ++q) v += g[q * mc];
    g[0] = v;
  }
  __syncthreads();
  if (tid >= mc) return T(0);
  T v = red[tid];
#pragma unroll
  for (int sg = 1; sg < kSupers; ++sg) v += red[sg * S::kSuper * mc + tid];
  return v;
}

template <typename T, int MB, bool kOnes>
__device__ void column_block_m(const Args<T>& args, const Problem<T>& p, int block, T* smem) {
  const int tid = threadIdx.x, lane = tid % S::kCols, grp = tid / S::kCols;
  const int n = args.n, m = p.m, w = p.w;
  const int col0 = (block - p.first_block) * S::kCols, j = col0 + lane;
  const int n_all = w + (p.ones ? 1 : 0);
  const bool col_ok = j < n_all;
  T cur[S::kBatch];
#pragma unroll
  for (int t = 0; t < S::kBatch; ++t) {  // the first batch's loads beside a's staging
    const int r = grp + t * S::kGroups;
    cur[t] = r < n && col_ok ? (j < w ? __ldg(p.b + static_cast<int64_t>(r) * w + j) : T(1)) : T(0);
  }
  if constexpr (!kOnes) {  // a into shared memory, kStage loads of each thread in flight at once
    constexpr int kStage = 16;
    const int nm = n * m;
    for (int base = 0; base < nm; base += kStage * S::kThreads) {
      T v[kStage];
#pragma unroll
      for (int q = 0; q < kStage; ++q) {
        const int i = base + q * S::kThreads + tid;
        v[q] = i < nm ? p.a[i] : T(0);
      }
#pragma unroll
      for (int q = 0; q < kStage; ++q) {
        const int i = base + q * S::kThreads + tid;
        if (i < nm) smem[i] = v[q];
      }
    }
  }
  __syncthreads();
  T acc[MB];
#pragma unroll
  for (int i = 0; i < MB; ++i) acc[i] = T(0);
  sum_rows<T, MB, kOnes>(p, smem, n, grp, j, col_ok, acc, cur);
  __syncthreads();  // a's stage read by every thread: the group sums take its place
  const T v = reduce_groups<T, MB>(acc, m, grp, lane, smem);
  if (tid >= m * S::kCols) return;
  const int i = tid / S::kCols, jj = col0 + tid % S::kCols;
  if (jj >= n_all) return;
  if constexpr (kOnes) {
    p.e[jj] = finish(v, p.e, p.prior_e, p.lambda_e, jj, args.accumulate);
  } else if (jj < w) {
    const int64_t at = static_cast<int64_t>(i) * w + jj;
    p.c[at] = finish(v, p.c, p.prior_c, p.lambda_c, at, args.accumulate);
  } else {
    p.e[i] = finish(v, p.e, p.prior_e, p.lambda_e, i, args.accumulate);
  }
}

template <typename T>
__device__ void column_block(const Args<T>& args, int block, T* smem) {
  int pi = 0;
  while (pi + 1 < args.problems && block >= args.p[pi + 1].first_block) ++pi;
  const Problem<T> p = args.p[pi];  // a copy: registers, not indexed loads from the parameter block
  // the outputs' bucket (block-uniform): the unrolled loops carry at most a few predicated-off outputs
  if (p.a == nullptr) column_block_m<T, 1, true>(args, p, block, smem);
  else if (p.m <= 4) column_block_m<T, 4, false>(args, p, block, smem);
  else if (p.m <= 10) column_block_m<T, 10, false>(args, p, block, smem);
  else column_block_m<T, S::kMaxM, false>(args, p, block, smem);
}

template <typename T>
__device__ void prior_block(const Args<T>& args, int block) {
  int qi = 0;
  while (qi + 1 < args.priors && block >= args.q[qi + 1].first_block) ++qi;
  const Prior<T>& q = args.q[qi];
  const T lambda = q.lambda != nullptr ? *q.lambda : T(0);
  const int base = (block - q.first_block) * S::kPriorPerBlock + static_cast<int>(threadIdx.x);
  T cv[kPriorLoads], wv[kPriorLoads];
  if (q.parts != nullptr) {  // the partial sums added in part order (each part's loads in flight at once)
#pragma unroll
    for (int t = 0; t < kPriorLoads; ++t) {
      const int at = base + t * S::kThreads;
      cv[t] = at < q.count ? q.parts[at] : T(0);
      wv[t] = at < q.count && q.lambda != nullptr ? q.w[at] : T(0);
    }
    for (int p = 1; p < q.nparts; ++p) {
      T pv[kPriorLoads];
#pragma unroll
      for (int t = 0; t < kPriorLoads; ++t) {
        const int at = base + t * S::kThreads;
        pv[t] = at < q.count ? q.parts[p * q.part_stride + at] : T(0);
      }
#pragma unroll
      for (int t = 0; t < kPriorLoads; ++t) cv[t] += pv[t];
    }
  } else {
#pragma unroll
    for (int t = 0; t < kPriorLoads; ++t) {
      const int at = base + t * S::kThreads;
      const bool in = at < q.count && q.lambda != nullptr;
      cv[t] = in ? q.c[at] : T(0);
      wv[t] = in ? q.w[at] : T(0);
    }
  }
#pragma unroll
  for (int t = 0; t < kPriorLoads; ++t) {
    const int at = base + t * S::kThreads;
    if (at >= q.count) continue;
    if (q.lambda != nullptr) q.c[at] = fma_t(lambda, wv[t], cv[t]);
    else if (q.parts != nullptr) q.c[at] = cv[t];
  }
}

template <typename T>
__device__ void nll_block(const Args<T>& args, T* part) {
  const T v = block_tree_sum<T, S::kThreads>(args.row_nll, args.n, part);
  if (threadIdx.x == 0) {
    *args.nll = v;
    if (args.loss_sum != nullptr) *args.loss_sum = fma_t(args.loss_weight, static_cast<double>(v), *args.loss_sum);
  }
}

template <typename T>
__global__ void __launch_bounds__(S::kThreads) tail_kernel(const __grid_constant__ Args<T> args) {
  SGMCMC_DYNAMIC_SMEM(smem_bytes);
  T* smem = reinterpret_cast<T*>(smem_bytes);
  const int block = blockIdx.x;
  if (block < args.column_blocks) column_block(args, block, smem);
  else if (block < args.prior_end) prior_block(args, block);
  else nll_block(args, smem);
}

template <typename T>
const T* ptr_or_null(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

template <typename T>
void launch(const MlpTailArgs& t, torch::Tensor& nll) {
  Args<T> g;
  g.n = static_cast<int>(t.g_out.size(0));
  g.accumulate = t.accumulate;
  size_t smem = sizeof(T) * S::kThreads;  // the nll block's
  int blocks = 0;
  const auto add = [&](Problem<T> p) {
    p.first_block = blocks;
    blocks += ceil_div(p.w + (p.ones ? 1 : 0), S::kCols);
    const int64_t elems = std::max<int64_t>(p.a != nullptr ? int64_t{g.n} * p.m : 0, S::reduce_elems(p.m));
    smem = std::max(smem, sizeof(T) * static_cast<size_t>(elems));
    g.p[g.problems++] = p;
  };
  {
    Problem<T> p;
    p.a = t.g_out.data_ptr<T>(), p.b = t.h_last.data_ptr<T>();
    p.m = static_cast<int>(t.g_out.size(1)), p.w = static_cast<int>(t.h_last.size(1)), p.ones = true;
    p.c = t.out.weight_grad.data_ptr<T>(), p.e = t.out.bias_grad.data_ptr<T>();
    if (t.out.weight_lambda.defined()) {
      p.prior_c = t.out.weight.data_ptr<T>(), p.lambda_c = t.out.weight_lambda.data_ptr<T>();
      p.prior_e = t.out.bias.data_ptr<T>(), p.lambda_e = t.out.bias_lambda.data_ptr<T>();
    }
    add(p);
  }
  for (size_t l = 0; l < t.hidden.size(); ++l) {
    Problem<T> p;
    p.b = t.g_hidden[l].data_ptr<T>(), p.w = static_cast<int>(t.g_hidden[l].size(1));
    p.e = t.hidden[l].bias_grad.data_ptr<T>();
    p.prior_e = ptr_or_null<T>(t.hidden[l].bias), p.lambda_e = ptr_or_null<T>(t.hidden[l].bias_lambda);
    if (p.lambda_e == nullptr) p.prior_e = nullptr;
    add(p);
  }
  g.column_blocks = blocks;
  for (size_t l = 0; l < t.hidden.size(); ++l) {
    const auto& L = t.hidden[l];
    const bool parts = l < t.weight_grad_parts.size() && t.weight_grad_parts[l].defined();
    if (!L.weight_lambda.defined() && !parts) continue;
    Prior<T> q;
    q.c = L.weight_grad.data_ptr<T>(), q.w = L.weight.data_ptr<T>(), q.lambda = ptr_or_null<T>(L.weight_lambda);
    if (parts) {
      const auto& pt = t.weight_grad_parts[l];
      q.parts = pt.data_ptr<T>(), q.nparts = static_cast<int>(pt.size(0)), q.part_stride = pt.stride(0);
    }
    q.count = static_cast<int>(L.weight.numel());
    q.first_block = blocks;
    blocks += ceil_div(q.count, S::kPriorPerBlock);
    g.q[g.priors++] = q;
  }
  g.prior_end = blocks;
  ++blocks;  // the nll's
  g.row_nll = t.row_nll.data_ptr<T>();
  g.nll = nll.data_ptr<T>();
  if (t.loss_sum.defined()) g.loss_sum = t.loss_sum.data_ptr<double>(), g.loss_weight = t.loss_weight;
  launch_kernel(tail_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(S::kThreads), smem, at::cuda::getCurrentCUDAStream(), g);
}

}  // namespace
}  // namespace tail_columns

torch::Tensor mlp_tail_cuda(const MlpTailArgs& t) {
  if (!t.g_out.defined() || !t.g_out.is_cuda() || t.hidden.size() + 1 > tail_columns::kMaxProblems ||
      !mlp_tail_applies(t))
    return {};
  const c10::cuda::CUDAGuard guard(t.g_out.device());
  auto nll = at::empty({}, t.g_out.options());
  if (t.g_out.scalar_type() == torch::kFloat64) tail_columns::launch<double>(t, nll);
  else tail_columns::launch<float>(t, nll);
  return nll;
}

}  // namespace sgmcmc::kernels
