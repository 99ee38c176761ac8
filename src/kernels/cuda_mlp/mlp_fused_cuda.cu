// The fused MLP pass of kernels/cuda_mlp/mlp_fused.h on CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/macros/Macros.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/kernel_settings.h"
#include "kernels/cuda_mlp/activation_hd.h"
#include "kernels/cuda/block_sum_cuda.h"
#include "kernels/update/fused_elementwise.h"
#include "kernels/cuda_mlp/mlp_forward_head.h"
#include "kernels/cuda_mlp/mlp_fused.h"
#include "kernels/cuda_mlp/mlp_head_cuda.h"
#include "kernels/cuda_mlp/gemm_lt.h"
#include "kernels/cuda_mlp/mlp_tail.h"
#include "kernels/cuda/launch_cuda.h"
#include "kernels/cuda/smem_cuda.h"
#include "kernels/cuda/softmax_xent_row.h"
#include "kernels/cuda_mlp/weight_grad.h"

namespace sgmcmc::kernels {

namespace {

// A block is 16 × 16 threads over a square 32 × 32 tile (2 × 2 outputs per thread), 16 deep. A 64-wide
// tile (4 × 4 a thread) measured slower on every shape tried (docs/gpu_kernels.md).
constexpr int kBK = 16, kThreadsN = 16, kThreadsM = 16;
constexpr int kThreads = kThreadsN * kThreadsM;  // 256
constexpr int kMaxProblems = 8;
constexpr int kHeadThreads = 256;
// Rows per head block: App. H.1's step on an H100 (graph-replayed, two rounds) is 64.3–64.6 µs with 1,
// 64.8–65.1 with 2, 66.8–67.0 with 4 and 69.8–70.1 with 8: more blocks, each with a shorter serial chain.
constexpr int kHeadRows = 1;
constexpr size_t kHeadSmemBytes = 48 * 1024;  // the default dynamic shared memory limit
// kernels.cuda_mlp: auto takes the pass for layers up to this many weights (FNN-800's 800 × 800): H.1's
// step is 54 µs graph-replayed against ATen's 146, FNN-800's 137 against 144 (docs/performance.md).
constexpr int64_t kAutoMaxLayer = 640000;

// kAddPrior: C(m, j) += λ_c·prior_c(m, j) alone (k = 0), after cuBLAS wrote C (the cuBLAS route below).
enum class Epilogue : int { kStore, kAccumulate, kBiasActivation, kDerivative, kAddPrior };

// C(m, j) ← epilogue(Σ_k A(m, k) B(k, j)) with A(m, k) = a[m·a_rs + k·a_cs], B(k, j) = b[k·b_rs + j·b_cs];
// with `ones`, B has a column j = n of ones whose results go to extra[m] (the bias gradient).
template <typename T>
struct Gemm {
  const T* a = nullptr;
  int64_t a_rs = 0, a_cs = 0;
  const T* b = nullptr;
  int64_t b_rs = 0, b_cs = 0;
  int m = 0, n = 0, k = 0;
  bool ones = false;
  T* c = nullptr;
  int64_t c_rs = 0;
  T* extra = nullptr;
  const T* bias = nullptr;  // kBiasActivation
  const T* y = nullptr;     // kDerivative: act'(y(m, j)), y [m, n] contiguous
  // kStore with a prior: C(m, j) += λ_c·prior_c(m, j) (prior_c laid out as C), extra[m] += λ_e·prior_e[m]
  const T* prior_c = nullptr;
  const T* lambda_c = nullptr;
  const T* prior_e = nullptr;
  const T* lambda_e = nullptr;
  Epilogue epi = Epilogue::kStore;
  Activation act = Activation::kNone;
  T* work = nullptr;       // [chains, splits, m, n + ones] partial sums (splits > 1)
  int* counters = nullptr;  // [chains, tiles] arrivals
  int tiles_n = 1, splits = 1, k_chunk = 0, first_block = 0;
  // Parallel chains (blockIdx.y = chain c): every operand of chain c starts c·*_bs elements further on
  // (0: shared by the chains); λ are not per chain (the pass takes no prior with chains).
  int64_t a_bs = 0, b_bs = 0, c_bs = 0, e_bs = 0, bias_bs = 0, y_bs = 0, prior_c_bs = 0, prior_e_bs = 0;
};

// Several independent products in one launch (block ranges by first_block), and one more block that sums
// sum_in[0 … sum_n) into *sum_out when sum_out is set.
template <typename T>
struct GemmBatch {
  Gemm<T> p[kMaxProblems];
  int count = 0;
  int gemm_blocks = 0;
  const T* sum_in = nullptr;
  int sum_n = 0;
  T* sum_out = nullptr;
  double* loss_sum = nullptr;  // with sum_out: *loss_sum += loss_weight · *sum_out
  double loss_weight = 0;
};

template <typename T, int kN>
__device__ void block_sum(const T* in, int n, T* out, double* loss_sum, double loss_weight) {
  __shared__ T part[kN];
  const T v = block_tree_sum<T, kN>(in, n, part);
  if (threadIdx.x == 0) {
    *out = v;
    if (loss_sum != nullptr) *loss_sum += loss_weight * static_cast<double>(v);
  }
}

// The end of a block's tile, whichever kernel computed it: with split-K, this split's partial sums go to
// the work buffer and the tile's last split to arrive adds all of them in split order (the same bits
// from one call to the next); then the epilogue. row(i) and col(j) are the thread's output coordinates
// within the tile; every thread of the block calls it (it synchronises).
template <typename T, int kTM, int kTN, int kBM, typename Row, typename Col>
__device__ void finish_tile(const Gemm<T>& g, int64_t chain, int tile, int split,
                            T (&acc)[kTM][kTN], Row row, Col col, int* is_last) {
  const int tid = threadIdx.x;
  const int m0 = (tile / g.tiles_n) * kBM, n0 = (tile % g.tiles_n) * kBM;
  const int n_all = g.n + (g.ones ? 1 : 0);
  if (g.splits > 1) {
    const int tiles = ((g.m + kBM - 1) / kBM) * g.tiles_n;
    T* const work = g.work + chain * g.splits * static_cast<int64_t>(g.m) * n_all;
    int* const counters = g.counters + chain * tiles;
    T* w = work + static_cast<int64_t>(split) * g.m * n_all;
#pragma unroll
    for (int i = 0; i < kTM; ++i)
#pragma unroll
      for (int j = 0; j < kTN; ++j) {
        const int gm = m0 + row(i), gn = n0 + col(j);
        if (gm < g.m && gn < n_all) w[static_cast<int64_t>(gm) * n_all + gn] = acc[i][j];
      }
    __threadfence();
    __syncthreads();
    if (tid == 0) *is_last = atomicAdd(counters + tile, 1) == g.splits - 1;
    __syncthreads();
    if (!*is_last) return;
    __threadfence();
    // Each element's partial sums added in split order from 0 (the same bits as one split after the
    // other), kBatch splits of every element of the thread's a round trip: their loads are independent,
    // so a split-K tile waits for global memory ⌈splits / kBatch⌉ times, not once per split and element.
    constexpr int kBatch = kTM * kTN >= 16 ? 1 : 16 / (kTM * kTN);
    T sum[kTM][kTN];
#pragma unroll
    for (int i = 0; i < kTM; ++i)
#pragma unroll
      for (int j = 0; j < kTN; ++j) sum[i][j] = T(0);
    for (int sp0 = 0; sp0 < g.splits; sp0 += kBatch) {
      T v[kBatch][kTM][kTN];
#pragma unroll
      for (int q = 0; q < kBatch; ++q)
#pragma unroll
        for (int i = 0; i < kTM; ++i)
#pragma unroll
          for (int j = 0; j < kTN; ++j) {
            const int gm = m0 + row(i), gn = n0 + col(j);
            v[q][i][j] = sp0 + q < g.splits && gm < g.m && gn < n_all
                             ? __ldcg(work + (static_cast<int64_t>(sp0 + q) * g.m + gm) * n_all + gn)
                             : T(0);
          }
#pragma unroll
      for (int q = 0; q < kBatch; ++q)
#pragma unroll
        for (int i = 0; i < kTM; ++i)
#pragma unroll
          for (int j = 0; j < kTN; ++j)
            if (sp0 + q < g.splits) sum[i][j] += v[q][i][j];
    }
#pragma unroll
    for (int i = 0; i < kTM; ++i)
#pragma unroll
      for (int j = 0; j < kTN; ++j)
        if (m0 + row(i) < g.m && n0 + col(j) < n_all) acc[i][j] = sum[i][j];
    if (tid == 0) counters[tile] = 0;  // ready for the next call (and graph replay)
  }
  T* const c_ptr = g.c + chain * g.c_bs;
  T* const extra_ptr = g.extra == nullptr ? nullptr : g.extra + chain * g.e_bs;
  const T* const bias_ptr = g.bias == nullptr ? nullptr : g.bias + chain * g.bias_bs;
  const T* const y_ptr = g.y == nullptr ? nullptr : g.y + chain * g.y_bs;
  const T* const prior_c_ptr = g.prior_c == nullptr ? nullptr : g.prior_c + chain * g.prior_c_bs;
  const T* const prior_e_ptr = g.prior_e == nullptr ? nullptr : g.prior_e + chain * g.prior_e_bs;
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int gm = m0 + row(i), gn = n0 + col(j);
      if (gm >= g.m || gn >= n_all) continue;
      const T v = acc[i][j];
      if (gn == g.n) {  // the ones column: Σ_k A(m, k), the bias gradient
        T* e = extra_ptr + gm;
        if (g.lambda_e != nullptr) *e = v + *g.lambda_e * prior_e_ptr[gm];
        else *e = g.epi == Epilogue::kAccumulate ? *e + v : v;
        continue;
      }
      T* out = c_ptr + gm * g.c_rs + gn;
      switch (g.epi) {
        case Epilogue::kStore: *out = g.lambda_c != nullptr ? v + *g.lambda_c * prior_c_ptr[gm * g.c_rs + gn] : v; break;
        case Epilogue::kAccumulate: *out = *out + v; break;
        case Epilogue::kBiasActivation: *out = activate_hd(g.act, v + bias_ptr[gn]); break;
        case Epilogue::kDerivative: *out = derivative_times_hd(g.act, v, y_ptr[static_cast<int64_t>(gm) * g.n + gn]); break;
        case Epilogue::kAddPrior: *out = *out + *g.lambda_c * prior_c_ptr[gm * g.c_rs + gn]; break;
      }
    }
}

// The batch's extra block, after its GEMM blocks, sums sum_in into sum_out (and the loss): true for it.
template <typename T, int kN>
__device__ bool sum_block(const GemmBatch<T>& batch, int block, int64_t chain) {
  if (block < batch.gemm_blocks) return false;
  if (chain == 0) block_sum<T, kN>(batch.sum_in, batch.sum_n, batch.sum_out, batch.loss_sum, batch.loss_weight);
  return true;
}

// The block's problem in a batch (blocks by first_block).
template <typename T>
__device__ const Gemm<T>& problem_of(const GemmBatch<T>& batch, int block) {
  int pi = 0;
  while (pi + 1 < batch.count && block >= batch.p[pi + 1].first_block) ++pi;
  return batch.p[pi];
}

// A GEMM block's share of its problem: its kBM × kBM output tile, its k split and its chain's operands.
template <typename T>
struct BlockShare {
  int tile, split, m0, n0, k_begin, k_end;
  const T* a;
  const T* b;
};

template <typename T, int kBM>
__device__ BlockShare<T> share_of(const Gemm<T>& g, int block, int64_t chain) {
  BlockShare<T> w;
  const int local = block - g.first_block;
  w.tile = local / g.splits, w.split = local % g.splits;
  w.m0 = (w.tile / g.tiles_n) * kBM, w.n0 = (w.tile % g.tiles_n) * kBM;
  w.k_begin = w.split * g.k_chunk, w.k_end = min(g.k, w.k_begin + g.k_chunk);
  w.a = g.a + chain * g.a_bs, w.b = g.b + chain * g.b_bs;
  return w;
}

// Which element of each operand's kBK × kBM tile a thread stages in its r-th load: consecutive threads
// take consecutive addresses along whichever of the operand's two dimensions is contiguous.
template <typename T, int kBM, int kThreadCount, int kLoads>
__device__ void staging_of(const Gemm<T>& g, int tid, int (&am)[kLoads], int (&ak)[kLoads], int (&bn)[kLoads],
                           int (&bk)[kLoads]) {
  const bool a_k_contig = g.a_cs == 1, b_k_contig = g.b_rs == 1;
#pragma unroll
  for (int r = 0; r < kLoads; ++r) {
    const int i = tid + r * kThreadCount;
    am[r] = a_k_contig ? i / kBK : i % kBM;
    ak[r] = a_k_contig ? i % kBK : i / kBM;
    bn[r] = b_k_contig ? i / kBK : i % kBM;
    bk[r] = b_k_contig ? i % kBK : i / kBM;
  }
}

template <typename T, int kBM>
__global__ void __launch_bounds__(kThreads) gemm_kernel(const __grid_constant__ GemmBatch<T> batch) {
  constexpr int kBN = kBM, kTM = kBM / kThreadsM, kTN = kBN / kThreadsN;
  constexpr int kLoads = kBM * kBK / kThreads;  // elements of each operand a thread stages per k step
  static_assert(kBM % kThreadsM == 0 && kBM * kBK % kThreads == 0, "tile shape");
  __shared__ T As[kBK][kBM + 1];
  __shared__ T Bs[kBK][kBN + 1];
  __shared__ int is_last;
  const int tid = threadIdx.x;
  const int block = blockIdx.x;
  const int64_t chain = blockIdx.y;
  if (sum_block<T, kThreads>(batch, block, chain)) return;
  const Gemm<T>& g = problem_of(batch, block);
  const auto w = share_of<T, kBM>(g, block, chain);
  const int tx = tid % kThreadsN, ty = tid / kThreadsN;
  T ra[kLoads], rb[kLoads];
  int am[kLoads], ak[kLoads], bn[kLoads], bk[kLoads];
  staging_of<T, kBM, kThreads>(g, tid, am, ak, bn, bk);
  auto fetch = [&](int k0) {
#pragma unroll
    for (int r = 0; r < kLoads; ++r) {
      const int gm = w.m0 + am[r], gka = k0 + ak[r];
      ra[r] = (gm < g.m && gka < w.k_end) ? w.a[gm * g.a_rs + gka * g.a_cs] : T(0);
      const int gn = w.n0 + bn[r], gkb = k0 + bk[r];
      T v = T(0);
      if (gkb < w.k_end) {
        if (gn < g.n) v = w.b[gkb * g.b_rs + gn * g.b_cs];
        else if (g.ones && gn == g.n) v = T(1);
      }
      rb[r] = v;
    }
  };
  T acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = T(0);
  if (w.k_begin < w.k_end) fetch(w.k_begin);
  for (int k0 = w.k_begin; k0 < w.k_end; k0 += kBK) {
#pragma unroll
    for (int r = 0; r < kLoads; ++r) {
      As[ak[r]][am[r]] = ra[r];
      Bs[bk[r]][bn[r]] = rb[r];
    }
    __syncthreads();
    if (k0 + kBK < w.k_end) fetch(k0 + kBK);  // the next tile's loads in flight during this one's FMAs
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      T av[kTM], bv[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) av[i] = As[kk][ty + i * kThreadsM];
#pragma unroll
      for (int j = 0; j < kTN; ++j) bv[j] = Bs[kk][tx + j * kThreadsN];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
  finish_tile<T, kTM, kTN, kBM>(
      g, chain, w.tile, w.split, acc, [&](int i) { return ty + i * kThreadsM; },
      [&](int j) { return tx + j * kThreadsN; }, &is_last);
}

// One element from global into shared memory without passing through registers (sm_80's asynchronous
// copy), zero-filled when !valid (no global read then); before sm_80, a plain load and store.
template <typename T>
__device__ __forceinline__ void copy_async(T* smem, const T* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(sizeof(T)),
               "r"(valid ? static_cast<int>(sizeof(T)) : 0));
#else
  *smem = valid ? *gmem : T(0);
#endif
}
__device__ __forceinline__ void copy_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until at most `kPending` of this thread's committed copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// The same products as gemm_kernel<T, 32> (the same tiles, k splits and epilogues), built for latency.
// The tiled kernel's blocks wait on global memory once per 16-deep k step (13 steps of a split of App.
// H.1's first product) and issue one shared-memory read per FMA. Here the block's 256 threads keep
// kPipeStages k steps in flight as asynchronous copies, and split each step's 16 k four ways: each
// quarter of the block (64 threads, 8 × 8) keeps 4 × 4 outputs of the whole 32 × 32 tile over its 4 k of
// every step (2 float4 shared reads per 16 FMAs); the quarters' partial tiles are added in shared memory,
// in quarter order, at the end (the same bits from one call to the next). A first version with 64-thread
// blocks, each thread over all 16 k, ran H.1's step in 114 µs against the tiled kernel's 68 on an H100:
// one warp per scheduler cannot hide the FMA and shared-memory latencies, hence the four slices.
constexpr int kPipeThreads = 256, kPipeStages = 4, kPipeBM = 32, kPipeSlices = 4;
constexpr int kPipeLd = kPipeBM + 4;  // padded rows: fewer bank conflicts on the copies, float4 still aligned

template <typename T>
__global__ void __launch_bounds__(kPipeThreads, 2) gemm_pipelined_kernel(const __grid_constant__ GemmBatch<T> batch) {
  constexpr int kBM = kPipeBM, kTM = 4, kTN = 4, kSide = kBM / kTM;  // 8 × 8 threads a slice
  constexpr int kSliceThreads = kSide * kSide, kSliceK = kBK / kPipeSlices;
  constexpr int kLoads = kBM * kBK / kPipeThreads;  // elements of each operand a thread copies per step
  constexpr int kStage = 2 * kBK * kPipeLd;         // one stage: A's then B's [kBK][kPipeLd]
  static_assert(kSliceThreads * kPipeSlices == kPipeThreads && kSliceK * kPipeSlices == kBK, "slices");
  static_assert(kBM * kBK % kPipeThreads == 0 && kBM * kBM == kPipeThreads * kTN, "tile shape");
  static_assert(kPipeSlices * kBM * kBM <= kPipeStages * kStage, "the partial tiles fit the stage buffers");
  __shared__ __align__(16) T smem[kPipeStages * kStage];
  __shared__ int is_last;
  auto As = [&](int buf, int k, int m) -> T& { return smem[buf * kStage + k * kPipeLd + m]; };
  auto Bs = [&](int buf, int k, int n) -> T& { return smem[buf * kStage + (kBK + k) * kPipeLd + n]; };
  const int tid = threadIdx.x;
  const int block = blockIdx.x;
  const int64_t chain = blockIdx.y;
  if (sum_block<T, kPipeThreads>(batch, block, chain)) return;
  const Gemm<T>& g = problem_of(batch, block);
  const auto w = share_of<T, kBM>(g, block, chain);
  const int slice = tid / kSliceThreads, st = tid % kSliceThreads, tx = st % kSide, ty = st / kSide;
  int am[kLoads], ak[kLoads], bn[kLoads], bk[kLoads];
  staging_of<T, kBM, kPipeThreads>(g, tid, am, ak, bn, bk);
  // k step `step` of this split into stage buffer `buf`
  auto issue = [&](int step, int buf) {
    const int k0 = w.k_begin + step * kBK;
#pragma unroll
    for (int r = 0; r < kLoads; ++r) {
      const int gm = w.m0 + am[r], gka = k0 + ak[r];
      const bool va = gm < g.m && gka < w.k_end;
      copy_async(&As(buf, ak[r], am[r]), va ? w.a + gm * g.a_rs + gka * g.a_cs : w.a, va);
      const int gn = w.n0 + bn[r], gkb = k0 + bk[r];
      if (g.ones && gn == g.n) {
        Bs(buf, bk[r], bn[r]) = gkb < w.k_end ? T(1) : T(0);
      } else {
        const bool vb = gn < g.n && gkb < w.k_end;
        copy_async(&Bs(buf, bk[r], bn[r]), vb ? w.b + gkb * g.b_rs + gn * g.b_cs : w.b, vb);
      }
    }
  };
  T acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = T(0);
  const int steps = w.k_begin < w.k_end ? (w.k_end - w.k_begin + kBK - 1) / kBK : 0;
  // One commit per step, empty ones too, so that "all but kPipeStages − 2 groups done" always means
  // "step t done".
#pragma unroll
  for (int t = 0; t < kPipeStages - 1; ++t) {
    if (t < steps) issue(t, t);
    copy_async_commit();
  }
  for (int t = 0; t < steps; ++t) {
    copy_async_wait<kPipeStages - 2>();
    // step t's copies (every thread's) have landed, and every thread is done with step t − 1's buffer,
    // which step t + kPipeStages − 1 refills
    __syncthreads();
    if (t + kPipeStages - 1 < steps) issue(t + kPipeStages - 1, (t + kPipeStages - 1) % kPipeStages);
    copy_async_commit();
    const int buf = t % kPipeStages;
#pragma unroll
    for (int q = 0; q < kSliceK; ++q) {
      const int kk = slice * kSliceK + q;
      T av[kTM], bv[kTN];
      load4(&As(buf, kk, ty * kTM), av);
      load4(&Bs(buf, kk, tx * kTN), bv);
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
  }
  copy_async_wait<0>();  // no copy outlives the loop (the last groups are empty, but by rule)
  __syncthreads();       // every thread done with the stage buffers: they hold the partial tiles now
  T* const part = smem;  // [kPipeSlices][kBM][kBM]
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) part[(slice * kBM + ty * kTM + i) * kBM + tx * kTN + j] = acc[i][j];
  __syncthreads();
  // thread tid: row tid / 8 of the tile, columns 4·(tid % 8) … + 3, the slices added in order
  const int row = tid / kSide, col0 = (tid % kSide) * kTN;
  T out[1][kTN];
#pragma unroll
  for (int j = 0; j < kTN; ++j) {
    T s = part[row * kBM + col0 + j];
#pragma unroll
    for (int sl = 1; sl < kPipeSlices; ++sl) s += part[(sl * kBM + row) * kBM + col0 + j];
    out[0][j] = s;
  }
  finish_tile<T, 1, kTN, kBM>(
      g, chain, w.tile, w.split, out, [&](int) { return row; }, [&](int j) { return col0 + j; }, &is_last);
}

// The output layer for `rows_per_block` rows per block (head_rows, mlp_head_cuda.h). Chain c = blockIdx.y:
// its n rows of h, y, g, d and row_nll and its own W and b follow chain c − 1's. `shared` (the chains'
// shared minibatch): every chain reads all n labels, and h, h_out and d are [n, C·hdim], chain c's row
// in columns c·hdim … (g and row_nll stay chain-major).
template <typename T>
__global__ void __launch_bounds__(kHeadThreads)
    head_kernel(const T* h, const T* w, const T* bias, const int64_t* y, int n, int hdim, int outs, int rows_per_block,
                T scale, Activation act, T* g, T* d, T* row_nll, const T* pre_bias, T* h_out, int parts,
                int64_t part_stride, bool shared) {
  const int64_t chain = blockIdx.y;
  const int64_t hid_cs = shared ? hdim : int64_t{n} * hdim;  // chain c's first hidden value
  const int64_t rs = shared ? int64_t{gridDim.y} * hdim : hdim;
  h += chain * hid_cs, w += chain * outs * hdim, bias += chain * outs, y += shared ? 0 : chain * n;
  g += chain * n * outs, row_nll += chain * n;
  if (d != nullptr) d += chain * hid_cs;
  if (pre_bias != nullptr) pre_bias += chain * hdim, h_out += chain * hid_cs;
  SGMCMC_DYNAMIC_SMEM(head_smem);
  const int r0 = blockIdx.x * rows_per_block;
  head_rows<T, kHeadThreads>(h, w, bias, y, r0, min(rows_per_block, n - r0), hdim, rs, outs, scale, act, g, d,
                             row_nll, pre_bias, h_out, parts, part_stride, reinterpret_cast<T*>(head_smem));
}

// A [size] tensor of `like`'s options in `slot`, reused when it already holds at least that many.
torch::Tensor& ensure(torch::Tensor& slot, int64_t size, const torch::TensorOptions& options, bool zeroed) {
  if (!slot.defined() || slot.numel() < size || slot.scalar_type() != options.dtype().toScalarType() ||
      slot.device() != options.device())
    slot = zeroed ? at::zeros({size}, options) : at::empty({size}, options);
  return slot;
}

torch::Tensor& ensure2(torch::Tensor& slot, int64_t rows, int64_t cols, const torch::TensorOptions& options) {
  if (!slot.defined() || slot.dim() != 2 || slot.size(0) != rows || slot.size(1) != cols ||
      slot.scalar_type() != options.dtype().toScalarType() || slot.device() != options.device())
    slot = at::empty({rows, cols}, options);
  return slot;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Tiles and k splits for one product over `chains` chains (about kBlocksPerSm blocks per SM when the chains'
// tiles are fewer; at least 64 of k per split), with its partial-sum and counter buffers from scratch slot
// `slot`. More blocks hide more of the global loads' latency (each k step of a block is 16 deep) at the price
// of more partial sums: 2 measured fastest on an H100 (1, 4, 8 and 16 slower; docs/gpu_kernels.md).
constexpr int kTile = 32, kBlocksPerSm = 2;
template <typename T>
void plan(Gemm<T>& g, int sms, int chains, MlpFusedScratch& s, size_t slot, const torch::Tensor& like) {
  const int n_all = g.n + (g.ones ? 1 : 0);
  g.tiles_n = ceil_div(n_all, kTile);
  const int tiles = ceil_div(g.m, kTile) * g.tiles_n;
  const int want = std::max(1, std::min(kBlocksPerSm * sms / std::max(tiles * chains, 1), g.k / 64));
  g.k_chunk = std::max(kBK, ceil_div(ceil_div(std::max(g.k, 1), want), kBK) * kBK);
  g.splits = std::max(1, ceil_div(g.k, g.k_chunk));
  if (g.splits > 1) {
    if (s.work.size() <= slot) s.work.resize(slot + 1), s.counters.resize(slot + 1);
    g.work = ensure(s.work[slot], int64_t{chains} * g.splits * g.m * n_all, like.options(), false).template data_ptr<T>();
    g.counters =
        ensure(s.counters[slot], int64_t{chains} * tiles, like.options().dtype(torch::kInt32), true).data_ptr<int>();
  }
}

// kernels.cuda_mlp_gemm, auto: the cuBLAS route for one chain wherever it applies (up to 4 layers; its
// graph-replayed step on an H100: H.1 49.5 µs against pipelined 61, FNN-800 92 µs against pipelined 132;
// docs/performance.md), its products on cuBLASLt with the kernel and split-K measured per shape and kept
// in kernels.cuda_gemm_cache (on an H200: H.1 45.3 µs against cuBLAS's 46.2, FNN-800 90.4–90.7 against
// 92.4–92.5; float64 stays on cuBLAS), the pipelined kernel for one chain beyond, the tiled kernel for
// chains (100 chains 2.35 ms a step against pipelined 2.38; kernels.cuda_mlp: auto leaves chains to
// ATen).
using MlpGemm = KernelSettings::MlpGemm;
MlpGemm gemm_choice(int chains, size_t layers) {
  const auto g = kernel_settings().cuda_mlp_gemm;
  if (g != MlpGemm::kAuto) return g;
  if (chains > 1) return MlpGemm::kTiled;
  return 2 * layers - 1 <= kMaxProblems ? MlpGemm::kCublasLt : MlpGemm::kPipelined;
}

// The chains' shared minibatch takes the cuBLAS route only (its two large products are plain 2-D GEMMs, as
// one chain's): auto is cublaslt as for one chain; tiled and pipelined decline (autograd runs).
bool shared_gemm_taken(MlpGemm g) { return g == MlpGemm::kAuto || g == MlpGemm::kCublas || g == MlpGemm::kCublasLt; }
MlpGemm shared_gemm_choice() {
  const auto g = kernel_settings().cuda_mlp_gemm;
  return g == MlpGemm::kAuto ? MlpGemm::kCublasLt : g;
}

template <typename T>
void launch(GemmBatch<T>& batch, int chains, bool pipe, cudaStream_t stream) {
  int blocks = 0;
  for (int i = 0; i < batch.count; ++i) {
    auto& g = batch.p[i];
    g.first_block = blocks;
    blocks += ceil_div(g.m, kTile) * g.tiles_n * g.splits;
  }
  batch.gemm_blocks = blocks;
  if (batch.sum_out != nullptr) ++blocks;
  if (blocks == 0) return;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(chains));
  if (pipe) launch_kernel(gemm_pipelined_kernel<T>, grid, dim3(kPipeThreads), 0, stream, batch);
  else launch_kernel(gemm_kernel<T, kTile>, grid, dim3(kThreads), 0, stream, batch);
}

// Plans every product of `batch` and launches it.
template <typename T>
void plan_and_launch(GemmBatch<T>& batch, int sms, int chains, bool pipe, MlpFusedScratch& s, size_t& slot,
                     const torch::Tensor& like, cudaStream_t stream) {
  for (int i = 0; i < batch.count; ++i) plan(batch.p[i], sms, chains, s, slot++, like);
  launch(batch, chains, pipe, stream);
}

bool fits_int(int64_t v) { return v >= 0 && v < std::numeric_limits<int>::max() / 2; }

// One chain's layer shape: W [out, in] or, stacked over chains, [C, out, in].
int64_t outs_of(const torch::Tensor& W) { return W.size(W.dim() - 2); }
int64_t ins_of(const torch::Tensor& W) { return W.size(W.dim() - 1); }

// out ← act(out + b) in place over [rows, w], b one chain's [w] (or [1, w]) or the chains' [C, w]
// (rows chain-major): ATen's ops (a fused bias-and-activation kernel measured slower, docs/gpu_kernels.md).
void bias_activate(torch::Tensor& out, const torch::Tensor& b, Activation act, int chains) {
  out.view({chains, -1, out.size(1)}).add_(b.reshape({chains, 1, -1}));
  switch (act) {
    case Activation::kSigmoid: out.sigmoid_(); break;
    case Activation::kRelu: out.relu_(); break;
    case Activation::kTanh: out.tanh_(); break;
    case Activation::kNone: break;
  }
}

// g ← g ⊙ act'(y) in place, y the activated values: ATen's backward ops, the formulas of
// kernels/cuda_mlp/activation_hd.h (and of the tiled kernel's kDerivative epilogue).
void times_derivative(torch::Tensor& g, const torch::Tensor& y, Activation act) {
  switch (act) {
    case Activation::kSigmoid: at::sigmoid_backward_out(g, g, y); break;
    case Activation::kRelu: at::threshold_backward_out(g, g, y, 0); break;
    case Activation::kTanh: at::tanh_backward_out(g, g, y); break;
    case Activation::kNone: break;
  }
}

// c [kp, m, n] ← the kp partial products of a [m, k] · b [k, n] over consecutive k ranges of k / kp, in one
// batched cuBLASLt product (strided views of a and b, no split-K reduction kernel); the caller adds the
// parts in order. False where gemm_lt does not take it (or kp does not divide k).
bool gemm_lt_k_parts(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c) {
  const int64_t kp = c.size(0), m = a.size(0), k = a.size(1), n = b.size(1);
  if (kp < 1 || k % kp != 0) return false;
  const int64_t kk = k / kp;
  return gemm_lt(a.as_strided({kp, m, kk}, {kk * a.stride(1), a.stride(0), a.stride(1)}),
                 b.as_strided({kp, kk, n}, {kk * b.stride(0), b.stride(0), b.stride(1)}), c, false);
}

// One call of the pass: its shapes, the route it takes and the steps below, in the order run() calls them.
// Chains: x holds `chains` blocks of n rows (chain-major) and every layer's tensors are stacked along dim 0;
// each kernel runs every chain at once (blockIdx.y), each chain's rows against its own layers. Scratch rows
// are chain-major too. `shared` (handled(): one hidden layer, the cuBLAS route): x holds the n rows every
// chain uses, and the hidden layer's scratch (its pre-activations, h_1, g_1) is [n, C·h] (mlp_fused.h).
//
// The cuBLAS route (kernels.cuda_mlp_gemm: cublas or cublaslt, auto for one chain): every product of the
// hidden layers on cuBLAS (ATen's mm, or bmm for chains: the same float32 arithmetic without TF32 unless
// train.tf32 allows it) or, with cublaslt, on cuBLASLt with the kernel and split-K measured per shape
// (float32; kernels/cuda_mlp/gemm_lt.h): h_{l+1} = x W_lᵀ (the inputs' layer) or h_l W_lᵀ, then g_l = g_{l+1} W_l
// and ∇W_l = g_{l+1}ᵀ h_l; the rest in the pass's kernels and ATen's elementwise ops: a middle layer's bias
// and activation after its product (ATen's two ops), the last hidden layer's in the head as it loads it, a
// middle layer's act' after its product (ATen's backward op), and the last launch adds each hidden layer's
// ∇b_l (a product against the ones column alone) and λ_W W_l (an epilogue alone, k = 0) beside the output
// layer's gradients. Up to 4 layers (the last launch's problems: 2L − 1 of kMaxProblems).
template <typename T>
class Pass {
 public:
  Pass(const torch::Tensor& x, const torch::Tensor& targets, const std::vector<MlpLayerTensors>& layers, Activation act,
       T scale, bool overwrite, int chains, bool shared, MlpFusedScratch& s)
      : x_(x), targets_(targets), layers_(layers), act_(act), scale_(scale), overwrite_(overwrite), chains_(chains),
        shared_(shared), s_(s), L_(layers.size()),
        n_(static_cast<int>(shared ? x.size(0) : x.size(0) / chains)),
        rows_(int64_t{n_} * chains),
        outs_(static_cast<int>(outs_of(layers[L_ - 1].weight))),
        hdim_(static_cast<int>(ins_of(layers[L_ - 1].weight))),
        opts_(x.options()),
        sms_(at::cuda::getCurrentDeviceProperties()->multiProcessorCount),
        stream_(at::cuda::getCurrentCUDAStream()),
        gemm_(shared ? shared_gemm_choice() : gemm_choice(chains, L_)),
        lt_(gemm_ == MlpGemm::kCublasLt && std::is_same_v<T, float>),
        route_((gemm_ == MlpGemm::kCublas || gemm_ == MlpGemm::kCublasLt) && L_ >= 2 &&
               2 * static_cast<int>(L_) - 1 <= kMaxProblems),
        pipe_(gemm_ == MlpGemm::kPipelined),
        wgrad_tiles_(chains == 1 && kernel_settings().cuda_mlp_wgrad == KernelSettings::MlpLaunch::kFused) {
    // rows per head block: kHeadRows, fewer where shared memory or n end
    head_rows_ = static_cast<int>(std::min<int64_t>(
        {kHeadRows, n_, (static_cast<int64_t>(kHeadSmemBytes / sizeof(T)) - int64_t{outs_} * hdim_) / per_row()}));
  }

  // nll = Σ_i nll_i (0-dim), or undefined where the head's weights do not fit its shared memory.
  torch::Tensor run() {
    if (head_rows_ < 1) return {};
    s_.h.resize(L_);
    s_.g.resize(L_ + 1);
    h_.assign(L_, nullptr);
    h_[0] = x_.template data_ptr<T>();
    s_.forward_head_applied = false;
    s_.forward_applied = 0;
    s_.wgrad_applied = 0;
    if (route_) forward_route();
    forward_tiled();
    head();
    backward_hidden();
    if (route_ && wgrad_tiles_ && rows_ > 0) {
      auto nll = backward_tiles();
      if (nll.defined()) return nll;
    }
    if (route_ && chains_ == 1 && n_ > 0 && kernel_settings().cuda_mlp_tail == KernelSettings::MlpTail::kColumns) {
      auto nll = tail_columns();
      if (nll.defined()) return nll;
    }
    return last_launch();
  }

 private:
  int per_row() const { return hdim_ + 2 * outs_; }

  // c = a·b (accumulate: c += a·b): [m, k]·[k, n] for one chain, [C, m, k]·[C, k, n] for chains
  void product(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate) const {
    if (lt_ && gemm_lt(a, b, c, accumulate)) return;  // 2-D or chains' 3-D
    if (c.dim() == 2) {
      if (accumulate) c.addmm_(a, b);
      else at::mm_out(c, a, b);
    } else {
      if (accumulate) c.baddbmm_(a, b);
      else at::bmm_out(c, a, b);
    }
  }
  // one chain's [rows, w] as [rows, w], chains' as [C, n, w]
  torch::Tensor per_chain(const torch::Tensor& t) const { return chains_ == 1 ? t : t.view({chains_, n_, t.size(-1)}); }
  // layer l's W [out, in] (chains: [C, out, in]) and ∇W
  torch::Tensor weight_of(const torch::Tensor& W) const { return chains_ == 1 ? W.view({outs_of(W), ins_of(W)}) : W; }
  // h_l as a tensor (h_0 = x)
  const torch::Tensor& h_of(size_t l) const { return l == 0 ? x_ : s_.h[l]; }

  // The route's forward products: h_{l+1} for every hidden layer; the last one's pre-activation goes to the
  // head (or, kernels.cuda_mlp_forward: fused, the last hidden layer and the head in one launch).
  void forward_route() {
    for (size_t l = 0; l + 1 < L_; ++l) {
      const bool last = l + 2 == L_;
      if (chains_ == 1 && rows_ > 0 && kernel_settings().cuda_mlp_forward == KernelSettings::MlpLaunch::kFused &&
          forward_own_launch(l, last))
        continue;
      if (last && forward_k_parts(l)) continue;
      const int64_t out_l = outs_of(layers_[l].weight), in_l = ins_of(layers_[l].weight);
      auto& dst = ensure2(last ? s_.pre : s_.h[l + 1], rows_, out_l, opts_);
      if (shared_) {  // every chain's pre-activations in one product: x · [W_0^(1); …; W_0^(C)]ᵀ, [n, C·h]
        auto p = dst.view({n_, chains_ * out_l});
        product(x_, layers_[l].weight.view({chains_ * out_l, in_l}).transpose(0, 1), p, false);
        h_[l + 1] = dst.template data_ptr<T>();
        continue;  // the head adds the bias and applies the activation
      }
      auto dst_c = per_chain(dst);
      product(per_chain(h_of(l)), weight_of(layers_[l].weight).transpose(-2, -1), dst_c, false);
      if (!last) bias_activate(dst, layers_[l].bias, act_, chains_);
      h_[l + 1] = dst.template data_ptr<T>();
    }
  }

  // Hidden layer l's product, bias and activation in one launch (kernels/cuda_mlp/mlp_forward_head.h), and for the
  // last hidden layer the head in the same launch; false where that launch does not take them.
  bool forward_own_launch(size_t l, bool last) {
    const int64_t out_l = outs_of(layers_[l].weight), in_l = ins_of(layers_[l].weight);
    MlpForwardHeadArgs f;
    f.a = h_of(l), f.weight = layers_[l].weight.view({out_l, in_l}), f.bias = layers_[l].bias, f.act = act_;
    f.h_out = ensure2(s_.h[l + 1], rows_, out_l, opts_);
    if (last) {
      f.out_weight = layers_[L_ - 1].weight.view({outs_, hdim_}), f.out_bias = layers_[L_ - 1].bias;
      f.targets = targets_, f.scale = static_cast<double>(scale_);
      f.g_out = ensure2(s_.g[L_], rows_, outs_, opts_), f.g_hidden = ensure2(s_.g[L_ - 1], rows_, hdim_, opts_);
      f.row_nll = ensure(s_.row_nll, rows_, opts_, false).narrow(0, 0, rows_);
      const int64_t groups = (rows_ + MlpForwardHeadShape::kRows - 1) / MlpForwardHeadShape::kRows;
      f.counters = ensure(s_.forward_counters, groups, opts_.dtype(torch::kInt32), true);
    }
    if (!mlp_forward_head_cuda(f)) return false;
    h_[l + 1] = f.h_out.template data_ptr<T>();
    ++s_.forward_applied;
    if (last) s_.forward_head_applied = true;
    return true;
  }

  // kernels.cuda_mlp_kparts: the product into the head (last hidden layer l) as kp partial products over k,
  // which the head adds in order; false where it does not apply.
  bool forward_k_parts(size_t l) {
    const int kp = kernel_settings().cuda_mlp_kparts;
    const int64_t out_l = outs_of(layers_[l].weight), in_l = ins_of(layers_[l].weight);
    if (!lt_ || chains_ != 1 || kp <= 1 || in_l % kp != 0 || rows_ <= 0) return false;
    auto c = ensure(s_.pre_parts, kp * rows_ * out_l, opts_, false).narrow(0, 0, kp * rows_ * out_l).view({kp, rows_, out_l});
    if (!gemm_lt_k_parts(h_of(l), layers_[l].weight.view({out_l, in_l}).transpose(0, 1), c)) return false;
    head_parts_ = kp;
    h_[l + 1] = c.template data_ptr<T>();
    return true;
  }

  // h_{l+1} = act(h_l W_lᵀ + b_l) in the pass's GEMM kernel, for the hidden layers the route did not run.
  void forward_tiled() {
    for (size_t l = route_ ? L_ - 1 : 0; l + 1 < L_; ++l) {
      const auto& W = layers_[l].weight;
      GemmBatch<T> b;
      Gemm<T>& g = b.p[0];
      b.count = 1;
      g.m = n_, g.n = static_cast<int>(outs_of(W)), g.k = static_cast<int>(ins_of(W));
      g.a = h_[l], g.a_rs = g.k, g.a_cs = 1, g.a_bs = int64_t{n_} * g.k;
      g.b = W.template data_ptr<T>(), g.b_rs = 1, g.b_cs = g.k, g.b_bs = int64_t{g.n} * g.k;
      auto& out = ensure2(s_.h[l + 1], rows_, g.n, opts_);
      g.c = out.template data_ptr<T>(), g.c_rs = g.n, g.c_bs = int64_t{n_} * g.n;
      g.epi = Epilogue::kBiasActivation, g.act = act_, g.bias = layers_[l].bias.template data_ptr<T>(), g.bias_bs = g.n;
      plan_and_launch(b, sms_, chains_, pipe_, s_, slot_, x_, stream_);
      h_[l + 1] = g.c;
    }
  }

  // The head: f, nll_i, g_L and g_{L−1} (unless the forward launch ran it).
  void head() {
    auto& gl = ensure2(s_.g[L_], rows_, outs_, opts_);
    T* d = nullptr;
    if (L_ > 1) d = ensure2(s_.g[L_ - 1], rows_, hdim_, opts_).template data_ptr<T>();
    auto& row_nll = ensure(s_.row_nll, rows_, opts_, false);
    if (s_.forward_head_applied) return;
    if (n_ == 0) {
      if (route_) h_[L_ - 1] = ensure2(s_.h[L_ - 1], rows_, hdim_, opts_).template data_ptr<T>();
      return;
    }
    const size_t smem =
        sizeof(T) * (static_cast<size_t>(outs_) * hdim_ + static_cast<size_t>(head_rows_) * per_row());
    const dim3 grid(static_cast<unsigned>(ceil_div(n_, head_rows_)), static_cast<unsigned>(chains_));
    T* h_out = route_ ? ensure2(s_.h[L_ - 1], rows_, hdim_, opts_).template data_ptr<T>() : nullptr;
    const T* pre_bias = route_ ? layers_[L_ - 2].bias.template data_ptr<T>() : nullptr;
    launch_kernel(head_kernel<T>, grid, dim3(kHeadThreads), smem, stream_, h_[L_ - 1],
                  layers_[L_ - 1].weight.template data_ptr<T>(), layers_[L_ - 1].bias.template data_ptr<T>(),
                  targets_.data_ptr<int64_t>(), n_, hdim_, outs_, head_rows_, scale_, act_, gl.template data_ptr<T>(), d,
                  row_nll.template data_ptr<T>(), pre_bias, h_out, head_parts_, int64_t{rows_} * hdim_, shared_);
    if (route_) h_[L_ - 1] = h_out;
  }

  // g_l = (g_{l+1} W_l) ⊙ act'(h_l), 0 < l < L−1: the route's product then act' in place, else the GEMM
  // kernel's kDerivative epilogue.
  void backward_hidden() {
    for (size_t l = L_ - 1; l-- > 1;) {
      const auto& W = layers_[l].weight;
      if (route_) {
        auto& dl = ensure2(s_.g[l], rows_, ins_of(W), opts_);
        auto dl_c = per_chain(dl);
        product(per_chain(s_.g[l + 1]), weight_of(W), dl_c, false);
        times_derivative(dl, s_.h[l], act_);
        continue;
      }
      GemmBatch<T> b;
      Gemm<T>& g = b.p[0];
      b.count = 1;
      const int out = static_cast<int>(outs_of(W)), in = static_cast<int>(ins_of(W));
      g.m = n_, g.n = in, g.k = out;
      g.a = s_.g[l + 1].template data_ptr<T>(), g.a_rs = out, g.a_cs = 1, g.a_bs = int64_t{n_} * out;
      g.b = W.template data_ptr<T>(), g.b_rs = in, g.b_cs = 1, g.b_bs = int64_t{out} * in;
      auto& dl = ensure2(s_.g[l], rows_, in, opts_);
      g.c = dl.template data_ptr<T>(), g.c_rs = in, g.c_bs = int64_t{n_} * in;
      g.epi = Epilogue::kDerivative, g.act = act_, g.y = h_[l], g.y_bs = int64_t{n_} * in;
      plan_and_launch(b, sms_, chains_, pipe_, s_, slot_, x_, stream_);
    }
  }

  // The route's hidden layer l: ∇W_l = g_{l+1}ᵀ h_l on the route's products (kernels.cuda_mlp_wgrad: fused
  // — one chain — as the pass's own tiled launch, kernels/cuda_mlp/weight_grad.h).
  void weight_grad_product(size_t l) {
    auto gw = weight_of(layers_[l].weight_grad);
    const bool accumulate = !overwrite_;
    if (wgrad_tiles_ && weight_grad_cuda(weight_grad_of(s_.g[l + 1], h_of(l), gw, accumulate))) {
      ++s_.wgrad_applied;
      return;
    }
    if (shared_) {  // [∇W_0^(1); …; ∇W_0^(C)] = g_1ᵀ x, one product: [C·h, n] · [n, in]
      const int64_t out = outs_of(layers_[l].weight);
      auto c = layers_[l].weight_grad.view({chains_ * out, ins_of(layers_[l].weight)});
      product(s_.g[l + 1].view({n_, chains_ * out}).transpose(0, 1), x_, c, accumulate);
      return;
    }
    product(per_chain(s_.g[l + 1]).transpose(-2, -1), per_chain(h_of(l)), gw, accumulate);
  }

  // kernels.cuda_mlp_wgrad: fused: every layer's ∇W_l and ∇b_l (λθ added) and the nll in one tiled launch
  // (kernels/cuda_mlp/weight_grad.h) instead of the hidden layers' products and the last launch; undefined where
  // that launch does not take them.
  torch::Tensor backward_tiles() {
    WeightGradLaunch wl;
    wl.accumulate = !overwrite_;
    for (size_t l = 0; l < L_; ++l) {
      const MlpLayerTensors& layer = layers_[l];
      WeightGradProblem q;
      q.a = s_.g[l + 1], q.b = h_of(l), q.c = weight_of(layer.weight_grad), q.bias_grad = layer.bias_grad;
      if (layer.weight_lambda.defined())
        q.weight = weight_of(layer.weight), q.weight_lambda = layer.weight_lambda, q.bias = layer.bias,
        q.bias_lambda = layer.bias_lambda;
      wl.problems.push_back(q);
    }
    auto nll = at::empty({}, opts_);
    wl.row_nll = s_.row_nll.narrow(0, 0, rows_), wl.nll = nll;
    wl.loss_sum = s_.loss_sum, wl.loss_weight = s_.loss_weight;
    if (!weight_grad_cuda(wl)) return {};
    s_.wgrad_applied = static_cast<int>(L_) - 1;
    return nll;
  }

  // kernels.cuda_mlp_tail: columns — the last launch as column blocks, every sum inside one block
  // (kernels/cuda_mlp/mlp_tail.h), after the hidden layers' ∇W products (λ_W W_l is added onto their ∇W_l); auto
  // stays on the GEMM kernel until a GPU has timed the blocks' current shape (docs/gpu_kernels.md).
  // Undefined where the blocks do not take the shapes.
  torch::Tensor tail_columns() {
    MlpTailArgs ta;
    ta.g_out = s_.g[L_], ta.h_last = s_.h[L_ - 1], ta.out = layers_[L_ - 1];
    for (size_t l = 0; l + 1 < L_; ++l) ta.g_hidden.push_back(s_.g[l + 1]), ta.hidden.push_back(layers_[l]);
    ta.accumulate = !overwrite_;
    ta.row_nll = s_.row_nll.narrow(0, 0, rows_);
    ta.loss_sum = s_.loss_sum, ta.loss_weight = s_.loss_weight;
    // kernels.cuda_mlp_kparts: each hidden layer's ∇W_l as kp partial products over ranges of the rows, in
    // one batched cuBLASLt product, which the column blocks' elementwise blocks add in order (no split-K
    // reduction kernel)
    const int kp = kernel_settings().cuda_mlp_kparts;
    const bool parts = lt_ && overwrite_ && kp > 1 && rows_ % kp == 0 && !wgrad_tiles_;
    if (parts) {
      s_.wgrad_parts.resize(L_ - 1);
      for (size_t l = 0; l + 1 < L_; ++l) {
        const int64_t numel = layers_[l].weight.numel();
        ta.weight_grad_parts.push_back(ensure(s_.wgrad_parts[l], kp * numel, opts_, false)
                                           .narrow(0, 0, kp * numel)
                                           .view({kp, outs_of(layers_[l].weight), ins_of(layers_[l].weight)}));
      }
    }
    if (!mlp_tail_applies(ta)) return {};
    for (size_t l = 0; l + 1 < L_; ++l) {
      // g_{l+1}ᵀ [out, rows] · h_l [rows, in] in parts over ranges of the rows
      if (parts && gemm_lt_k_parts(s_.g[l + 1].transpose(0, 1), h_of(l), ta.weight_grad_parts[l])) continue;
      if (parts) ta.weight_grad_parts[l] = torch::Tensor();  // not taken: the plain product writes ∇W_l
      weight_grad_product(l);
    }
    return mlp_tail_cuda(ta);
  }

  // ∇W_l, ∇b_l for every layer, and nll = Σ_i nll_i, in one launch of the GEMM kernel (the route: the hidden
  // layers' ∇W_l on its products, the launch's other problems).
  torch::Tensor last_launch() {
    GemmBatch<T> b;
    b.count = static_cast<int>(L_);
    for (size_t l = route_ ? L_ - 1 : 0; l < L_; ++l) weight_problem(b.p[l], l);
    for (size_t l = 0; route_ && l + 1 < L_; ++l) route_bias_problems(b, l);
    auto nll = at::empty({}, opts_);
    b.sum_in = s_.row_nll.template data_ptr<T>(), b.sum_n = static_cast<int>(rows_), b.sum_out = nll.template data_ptr<T>();
    if (s_.loss_sum.defined()) b.loss_sum = s_.loss_sum.data_ptr<double>(), b.loss_weight = s_.loss_weight;
    for (int i = 0; i < b.count; ++i) plan(b.p[i], sms_, chains_, s_, slot_++, x_);
    if (route_)
      for (size_t l = 0; l + 1 < L_; ++l) weight_grad_product(l);
    launch(b, chains_, pipe_, stream_);
    return nll;
  }

  // Layer l's ∇W_l = g_{l+1}ᵀ h_l and ∇b_l (the ones column), with λθ where the layer has precisions.
  void weight_problem(Gemm<T>& g, size_t l) const {
    const auto& W = layers_[l].weight;
    const int out = static_cast<int>(outs_of(W)), in = static_cast<int>(ins_of(W));
    g.m = out, g.n = in, g.k = n_, g.ones = true;
    g.a = s_.g[l + 1].template data_ptr<T>(), g.a_rs = 1, g.a_cs = out, g.a_bs = int64_t{n_} * out;
    g.b = h_[l], g.b_rs = in, g.b_cs = 1, g.b_bs = int64_t{n_} * in;
    if (shared_) g.b_rs = int64_t{chains_} * in, g.b_bs = in;  // h_1 [n, C·h]: chain c's columns c·h …
    g.c = layers_[l].weight_grad.template data_ptr<T>(), g.c_rs = in, g.c_bs = int64_t{out} * in;
    g.extra = layers_[l].bias_grad.template data_ptr<T>(), g.e_bs = out;
    g.epi = overwrite_ ? Epilogue::kStore : Epilogue::kAccumulate;
    if (layers_[l].weight_lambda.defined()) {  // handled(): both λ, overwriting, one chain
      g.prior_c = W.template data_ptr<T>(), g.lambda_c = layers_[l].weight_lambda.template data_ptr<T>();
      g.prior_e = layers_[l].bias.template data_ptr<T>(), g.lambda_e = layers_[l].bias_lambda.template data_ptr<T>();
    }
  }

  // The route's hidden layer l in the last launch: ∇b_l = Σ_i g_{l+1,i} (+ λ_b b_l), the ones column alone
  // (problem l); then, with a prior, ∇W_l += λ_W W_l (a problem of its own, k = 0).
  void route_bias_problems(GemmBatch<T>& b, size_t l) const {
    const MlpLayerTensors& layer = layers_[l];
    const int out = static_cast<int>(outs_of(layer.weight)), in = static_cast<int>(ins_of(layer.weight));
    Gemm<T>& g = b.p[l];
    g.m = out, g.n = 0, g.k = n_, g.ones = true;
    g.a = s_.g[l + 1].template data_ptr<T>(), g.a_rs = 1, g.a_cs = out, g.a_bs = int64_t{n_} * out;
    if (shared_) g.a_cs = int64_t{chains_} * out, g.a_bs = out;  // g_1 [n, C·h]
    g.b = h_[l], g.b_rs = in, g.b_cs = 1;  // never read: no column but the ones
    g.c = layer.weight_grad.template data_ptr<T>(), g.c_rs = in, g.c_bs = int64_t{out} * in;
    g.extra = layer.bias_grad.template data_ptr<T>(), g.e_bs = out;
    g.epi = overwrite_ ? Epilogue::kStore : Epilogue::kAccumulate;
    if (!layer.weight_lambda.defined()) return;
    g.prior_e = layer.bias.template data_ptr<T>(), g.lambda_e = layer.bias_lambda.template data_ptr<T>();
    Gemm<T>& p = b.p[b.count++];
    p.m = out, p.n = in, p.k = 0;
    p.a = g.a, p.b = g.b;  // never read (k = 0)
    p.c = g.c, p.c_rs = in;
    p.epi = Epilogue::kAddPrior;
    p.prior_c = layer.weight.template data_ptr<T>(), p.lambda_c = layer.weight_lambda.template data_ptr<T>();
  }

  const torch::Tensor& x_;
  const torch::Tensor& targets_;
  const std::vector<MlpLayerTensors>& layers_;
  const Activation act_;
  const T scale_;
  const bool overwrite_;
  const int chains_;
  const bool shared_;
  MlpFusedScratch& s_;
  const size_t L_;
  const int n_;          // rows per chain
  const int64_t rows_;   // every chain's rows (shared: the same n, C times)
  const int outs_, hdim_;  // the output layer's outputs and inputs
  const torch::TensorOptions opts_;
  const int sms_;
  const cudaStream_t stream_;
  const MlpGemm gemm_;
  const bool lt_, route_, pipe_, wgrad_tiles_;
  int head_rows_ = 1;
  int head_parts_ = 1;  // the head's input as that many partial products over k (kernels.cuda_mlp_kparts)
  std::vector<const T*> h_;  // h_0 = x … h_{L−1} as the kernels read them
  size_t slot_ = 0;          // the next scratch slot for a product's split-K buffers
};

// Whether the pass handles these tensors (checked before anything is launched).
bool handled(const torch::Tensor& x, const torch::Tensor& targets, const std::vector<MlpLayerTensors>& layers,
             bool overwrite, int64_t chains, bool shared) {
  if (layers.empty() || layers.size() > static_cast<size_t>(kMaxProblems)) return false;
  if (!x.is_cuda() || x.dim() != 2 || !x.is_contiguous() || !fits_int(x.numel())) return false;
  if (chains < 1 || chains > 65535 || (!shared && x.size(0) % chains != 0)) return false;
  // shared: several chains, one hidden layer, the cuBLAS route's 2-D products
  if (shared && (chains < 2 || layers.size() != 2 || !shared_gemm_taken(kernel_settings().cuda_mlp_gemm))) return false;
  const int64_t rows = shared ? x.size(0) * chains : x.size(0);  // every chain's rows
  // one chain: [out, in] layers (or [1, out, in]); chains: stacked [C, out, in] and [C, out]
  const bool stacked = layers.front().weight.dim() == 3;
  if (chains > 1 && !stacked) return false;
  if (x.scalar_type() != torch::kFloat32 && x.scalar_type() != torch::kFloat64) return false;
  if (!targets.is_cuda() || targets.dim() != 1 || targets.size(0) != x.size(0) || !targets.is_contiguous() ||
      targets.scalar_type() != torch::kInt64 || targets.device() != x.device())
    return false;
  int64_t in = x.size(1);
  for (const auto& L : layers) {
    for (const auto* t : {&L.weight, &L.bias, &L.weight_grad, &L.bias_grad})
      if (!t->defined() || !t->is_contiguous() || t->scalar_type() != x.scalar_type() || t->device() != x.device())
        return false;
    if (L.weight.dim() != (stacked ? 3 : 2) || ins_of(L.weight) != in || L.weight_grad.sizes() != L.weight.sizes())
      return false;
    if (stacked && (L.weight.size(0) != chains || L.bias.dim() != 2 || L.bias.size(0) != chains)) return false;
    if (L.weight_lambda.defined() != L.bias_lambda.defined() || (L.weight_lambda.defined() && !overwrite)) return false;
    if (L.weight_lambda.defined() && chains > 1) return false;  // one λ per chain is not implemented
    for (const auto* t : {&L.weight_lambda, &L.bias_lambda})
      if (t->defined() && (t->numel() != 1 || t->scalar_type() != x.scalar_type() || t->device() != x.device()))
        return false;
    const int64_t out = outs_of(L.weight);
    if (L.bias.numel() != chains * out || L.bias_grad.numel() != chains * out || !fits_int(chains * out * (in + 1)) ||
        !fits_int(rows * (out + 1)))
      return false;
    in = out;
  }
  return true;
}

}  // namespace

bool mlp_fused_cuda_enabled() { return kernel_settings().cuda_mlp != KernelSettings::Choice::kAten; }

bool mlp_fused_prior_enabled() { return kernel_settings().cuda_mlp_prior_fused; }

torch::Tensor mlp_backward_fused_cuda(const torch::Tensor& x, const torch::Tensor& targets,
                                      const std::vector<MlpLayerTensors>& layers, Activation act, double scale,
                                      bool overwrite, MlpFusedScratch& scratch, int64_t chains, bool shared) {
  shared = shared && chains > 1;  // one chain's shared minibatch is its own
  if (!handled(x, targets, layers, overwrite, chains, shared)) return {};
  const auto& sum = scratch.loss_sum;
  if (sum.defined() && (sum.scalar_type() != torch::kFloat64 || sum.numel() != 1 || sum.device() != x.device()))
    return {};
  if (kernel_settings().cuda_mlp == KernelSettings::Choice::kAuto) {
    if (chains > 1) return {};  // half ATen's batched products' speed at 100 and 1,000 chains (H100): `fused` only
    for (const auto& l : layers)
      if (l.weight.numel() > kAutoMaxLayer) return {};
  }
  const c10::cuda::CUDAGuard guard(x.device());
  const int c = static_cast<int>(chains);
  if (x.scalar_type() == torch::kFloat64)
    return Pass<double>(x, targets, layers, act, scale, overwrite, c, shared, scratch).run();
  return Pass<float>(x, targets, layers, act, static_cast<float>(scale), overwrite, c, shared, scratch).run();
}

}  // namespace sgmcmc::kernels
