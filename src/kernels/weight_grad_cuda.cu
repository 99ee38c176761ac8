// The tiled weight-gradient launch of kernels/weight_grad.h on CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <cstdint>

#include "kernels/pdl_cuda.h"
#include "kernels/weight_grad.h"

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

// Four consecutive elements of shared memory (16-byte aligned for float, 32 for double) into v.
__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  const float4 q = *reinterpret_cast<const float4*>(p);
  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void load4(const double* p, double (&v)[4]) {
  const double2 q0 = *reinterpret_cast<const double2*>(p), q1 = *reinterpret_cast<const double2*>(p + 2);
  v[0] = q0.x, v[1] = q0.y, v[2] = q1.x, v[3] = q1.y;
}

template <typename T>
struct Args {
  const T* a = nullptr;  // [r, m]
  const T* b = nullptr;  // [r, n]
  T* c = nullptr;        // [m, n]
  int r = 0, m = 0, n = 0, tiles_n = 1;
  bool accumulate = false;
};

template <typename T>
__global__ void __launch_bounds__(S::kThreads) weight_grad_kernel(const __grid_constant__ Args<T> p) {
  pdl_enter();
  __shared__ __align__(16) T as[S::kChunk * S::kM];  // [row][m], as in memory
  __shared__ __align__(16) T bs[S::kChunk * S::kN];  // [row][n]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, lr = lane / 8, lc = lane % 8;
  const int m0 = (blockIdx.x / p.tiles_n) * S::kM, n0 = (blockIdx.x % p.tiles_n) * S::kN;
  // this thread's elements of a chunk: A's column acol of rows arow + kARowsPer·q, B's bcol of brow + kBRowsPer·q
  const int acol = tid % S::kM, arow = tid / S::kM, bcol = tid % S::kN, brow = tid / S::kN;
  const bool aok = m0 + acol < p.m, bok = n0 + bcol < p.n;
  const T* const abase = p.a + static_cast<int64_t>(arow) * p.m + m0 + acol;
  const T* const bbase = p.b + static_cast<int64_t>(brow) * p.n + n0 + bcol;
  T abuf[kALoads], bbuf[kBLoads];
  const auto load = [&](int c) {
    const int r0 = c * S::kChunk;
#pragma unroll
    for (int q = 0; q < kALoads; ++q) {
      const int row = r0 + arow + kARowsPer * q;
      abuf[q] = aok && row < p.r ? abase[static_cast<int64_t>(r0 + kARowsPer * q) * p.m] : T(0);
    }
#pragma unroll
    for (int q = 0; q < kBLoads; ++q) {
      const int row = r0 + brow + kBRowsPer * q;
      bbuf[q] = bok && row < p.r ? bbase[static_cast<int64_t>(r0 + kBRowsPer * q) * p.n] : T(0);
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
  const int chunks = (p.r + S::kChunk - 1) / S::kChunk;
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
  // the warps' partial tiles, added in warp order: z = ((p_0 + p_1) + …) + p_7
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
    if (i < p.m && j < p.n) {
      T* const out = p.c + static_cast<int64_t>(i) * p.n + j;
      *out = p.accumulate ? *out + z : z;
    }
  }
}

}  // namespace
}  // namespace weight_grad_tiles

bool weight_grad_cuda(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate) {
  namespace wg = weight_grad_tiles;
  if (!weight_grad_applies(a, b, c) || !a.is_cuda()) return false;
  const auto launch = [&](auto zero) {
    using T = decltype(zero);
    wg::Args<T> p;
    p.a = a.data_ptr<T>(), p.b = b.data_ptr<T>(), p.c = c.data_ptr<T>();
    p.r = static_cast<int>(a.size(0)), p.m = static_cast<int>(a.size(1)), p.n = static_cast<int>(b.size(1));
    p.tiles_n = (p.n + WeightGradShape::kN - 1) / WeightGradShape::kN;
    p.accumulate = accumulate;
    const int tiles_m = (p.m + WeightGradShape::kM - 1) / WeightGradShape::kM;
    launch_pdl(wg::weight_grad_kernel<T>, dim3(static_cast<unsigned>(tiles_m * p.tiles_n)), dim3(WeightGradShape::kThreads),
               0, at::cuda::getCurrentCUDAStream(), p);
  };
  if (a.scalar_type() == torch::kFloat64) launch(0.0);
  else launch(0.0f);
  return true;
}

}  // namespace sgmcmc::kernels
