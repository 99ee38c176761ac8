// The tiled weight-gradient launch of kernels/cuda_mlp/weight_grad.h on CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <cstdint>

#include "kernels/cuda/block_sum_cuda.h"
#include "kernels/cuda/launch_cuda.h"
#include "kernels/cuda/smem_cuda.h"
#include "kernels/cuda_mlp/weight_grad.h"

namespace sgmcmc::kernels {

// (a namespace of its own: the compile check includes every .cu into one unit)
namespace weight_grad_tiles {
namespace {

using S = WeightGradShape;
// a chunk's staged rows: kChunk rows of A's kM columns and of B's kN columns
constexpr int kARowsPer = S::kThreads / S::kM, kBRowsPer = S::kThreads / S::kN;  // rows a pass of the threads
constexpr int kALoads = S::kChunk / kARowsPer, kBLoads = S::kChunk / kBRowsPer;
static_assert(S::kThreads % S::kM == 0 && S::kThreads % S::kN == 0 && S::kChunk % kARowsPer == 0 &&
              S::kChunk % kBRowsPer == 0 && S::kChunk % S::kWarps == 0);
static_assert(S::kM == 16 && S::kN == 32 && S::kWarps == 8, "the lanes' 4 × 4 outputs cover the tile");

template <typename T>
struct Problem {
  const T* a = nullptr;  // [r, m]
  const T* b = nullptr;  // [r, n]
  T* c = nullptr;        // [m, n]
  T* e = nullptr;        // [m]: the ones column n (or none)
  const T* w = nullptr;  // the prior: C = fma(λ_W, W, z), e = fma(λ_b, b, z_e)
  const T* lw = nullptr;
  const T* bb = nullptr;
  const T* lb = nullptr;
  int m = 0, n = 0, tiles_n = 1, first_block = 0;
};

template <typename T>
struct Args {
  Problem<T> p[S::kMaxProblems];
  int problems = 0, r = 0, tile_blocks = 0;  // blocks [0, tile_blocks) tiles, then the nll's
  bool accumulate = false;
  const T* row_nll = nullptr;
  T* nll = nullptr;
  double* loss_sum = nullptr;
  double loss_weight = 0;
};

// The nll block: the rows' nll summed by block_tree_sum in part [kThreads] (the tiles' shared memory), and
// loss_weight · nll added to the trainer's float64 sum.
template <typename T>
__device__ void nll_sum(const Args<T>& g, T* part) {
  const T v = block_tree_sum<T, S::kThreads>(g.row_nll, g.r, part);
  if (threadIdx.x == 0) {
    *g.nll = v;
    if (g.loss_sum != nullptr) *g.loss_sum += g.loss_weight * static_cast<double>(v);
  }
}

template <typename T>
__global__ void __launch_bounds__(S::kThreads) weight_grad_kernel(const __grid_constant__ Args<T> g) {
  __shared__ __align__(16) T as[S::kChunk * S::kM];  // [row][m], as in memory
  __shared__ __align__(16) T bs[S::kChunk * S::kN];  // [row][n]
  if (static_cast<int>(blockIdx.x) >= g.tile_blocks) {
    nll_sum(g, bs);
    return;
  }
  int pi = 0;
  while (pi + 1 < g.problems && static_cast<int>(blockIdx.x) >= g.p[pi + 1].first_block) ++pi;
  const Problem<T> p = g.p[pi];
  const int r = g.r, tile = static_cast<int>(blockIdx.x) - p.first_block;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, lr = lane / 8, lc = lane % 8;
  const int m0 = (tile / p.tiles_n) * S::kM, n0 = (tile % p.tiles_n) * S::kN;
  // this thread's elements of a chunk: A's column acol of rows arow + kARowsPer·q, B's bcol of brow + kBRowsPer·q
  // (B's column n is the ones column where the problem has one)
  const int acol = tid % S::kM, arow = tid / S::kM, bcol = tid % S::kN, brow = tid / S::kN;
  const bool aok = m0 + acol < p.m, bone = p.e != nullptr && n0 + bcol == p.n, bok = n0 + bcol < p.n || bone;
  const T* const abase = p.a + static_cast<int64_t>(arow) * p.m + m0 + acol;
  const T* const bbase = p.b + static_cast<int64_t>(brow) * p.n + n0 + bcol;
  T abuf[kALoads], bbuf[kBLoads];
  const auto load = [&](int c) {
    const int r0 = c * S::kChunk;
#pragma unroll
    for (int q = 0; q < kALoads; ++q) {
      const int row = r0 + arow + kARowsPer * q;
      abuf[q] = aok && row < r ? abase[static_cast<int64_t>(r0 + kARowsPer * q) * p.m] : T(0);
    }
#pragma unroll
    for (int q = 0; q < kBLoads; ++q) {
      const int row = r0 + brow + kBRowsPer * q;
      bbuf[q] = bok && row < r ? (bone ? T(1) : bbase[static_cast<int64_t>(r0 + kBRowsPer * q) * p.n]) : T(0);
    }
  };
  const auto store = [&]() {
#pragma unroll
    for (int q = 0; q < kALoads; ++q) as[(arow + kARowsPer * q) * S::kM + acol] = abuf[q];
#pragma unroll
    for (int q = 0; q < kBLoads; ++q) bs[(brow + kBRowsPer * q) * S::kN + bcol] = bbuf[q];
  };
  T acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = T(0);
  const int chunks = (r + S::kChunk - 1) / S::kChunk;
  load(0);
  store();
  __syncthreads();
  const T* const arows = as + warp * S::kPerWarp * S::kM + 4 * lr;
  const T* const brows = bs + warp * S::kPerWarp * S::kN + 4 * lc;
  for (int c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) load(c + 1);  // in flight during this chunk's FMAs
#pragma unroll
    for (int rr = 0; rr < S::kPerWarp; ++rr) {
      T av[4], bv[4];
      load4(arows + rr * S::kM, av);
      load4(brows + rr * S::kN, bv);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
    if (c + 1 < chunks) {
      store();
      __syncthreads();
    }
  }
  // the warps' partial tiles, added in warp order: z = ((p_0 + p_1) + …) + p_7, then the epilogue
  T* const red = bs;  // [kWarps, kM, kN]: bs holds kChunk · kN ≥ that
  static_assert(S::kChunk * S::kN >= S::kWarps * S::kM * S::kN);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) red[(warp * S::kM + 4 * lr + i) * S::kN + 4 * lc + j] = acc[i][j];
  __syncthreads();
  for (int o = tid; o < S::kM * S::kN; o += S::kThreads) {
    T z = red[o];
#pragma unroll
    for (int w = 1; w < S::kWarps; ++w) z += red[w * S::kM * S::kN + o];
    const int i = m0 + o / S::kN, j = n0 + o % S::kN;
    if (i >= p.m) continue;
    if (j < p.n) {
      const int64_t at = static_cast<int64_t>(i) * p.n + j;
      T* const out = p.c + at;
      *out = g.accumulate ? *out + z : p.lw != nullptr ? fma(*p.lw, p.w[at], z) : z;
    } else if (j == p.n && p.e != nullptr) {
      T* const out = p.e + i;
      *out = g.accumulate ? *out + z : p.lb != nullptr ? fma(*p.lb, p.bb[i], z) : z;
    }
  }
}

}  // namespace
}  // namespace weight_grad_tiles

namespace weight_grad_tiles {
namespace {

template <typename T>
bool launch(const WeightGradLaunch& t) {
  if (!weight_grad_applies(t) || !t.problems.front().a.is_cuda() ||
      t.problems.front().a.scalar_type() != c10::CppTypeToScalarType<T>::value)
    return false;
  Args<T> g;
  g.r = static_cast<int>(t.problems.front().a.size(0));
  g.accumulate = t.accumulate;
  int blocks = 0;
  for (const auto& q : t.problems) {
    Problem<T>& p = g.p[g.problems++];
    p.a = q.a.data_ptr<T>(), p.b = q.b.data_ptr<T>(), p.c = q.c.data_ptr<T>();
    if (q.bias_grad.defined()) p.e = q.bias_grad.data_ptr<T>();
    if (q.weight_lambda.defined()) {
      p.w = q.weight.data_ptr<T>(), p.lw = q.weight_lambda.data_ptr<T>();
      p.bb = q.bias.data_ptr<T>(), p.lb = q.bias_lambda.data_ptr<T>();
    }
    p.m = static_cast<int>(q.a.size(1)), p.n = static_cast<int>(q.b.size(1));
    p.tiles_n = (p.n + (p.e != nullptr ? 1 : 0) + S::kN - 1) / S::kN;
    p.first_block = blocks;
    blocks += (p.m + S::kM - 1) / S::kM * p.tiles_n;
  }
  g.tile_blocks = blocks;
  if (t.row_nll.defined()) {
    g.row_nll = t.row_nll.data_ptr<T>(), g.nll = t.nll.data_ptr<T>(), ++blocks;
    if (t.loss_sum.defined()) g.loss_sum = t.loss_sum.data_ptr<double>(), g.loss_weight = t.loss_weight;
  }
  launch_kernel(weight_grad_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(S::kThreads), 0,
                at::cuda::getCurrentCUDAStream(), g);
  return true;
}

}  // namespace
}  // namespace weight_grad_tiles

bool weight_grad_cuda(const WeightGradLaunch& t) {
  if (!t.problems.empty() && t.problems.front().a.defined() && t.problems.front().a.scalar_type() == torch::kFloat64)
    return weight_grad_tiles::launch<double>(t);
  return weight_grad_tiles::launch<float>(t);
}

}  // namespace sgmcmc::kernels
