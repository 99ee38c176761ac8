// The forward-and-head launch of kernels/cuda_mlp/mlp_forward_head.h on CUDA.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda_mlp/activation_hd.h"
#include "kernels/cuda_mlp/mlp_forward_head.h"
#include "kernels/cuda_mlp/mlp_head_cuda.h"
#include "kernels/cuda/launch_cuda.h"
#include "kernels/cuda/smem_cuda.h"

namespace sgmcmc::kernels {

// (a namespace of its own: the compile check includes every .cu into one unit)
namespace forward_head {
namespace {

using S = MlpForwardHeadShape;
// each thread's share of a staged chunk: kRows rows of a and kUnits rows of W, kChunk wide
constexpr int kLoads = (S::kRows + S::kUnits) * S::kChunk / S::kThreads;
static_assert((S::kRows + S::kUnits) * S::kChunk % S::kThreads == 0 && S::kChunk % S::kWarps == 0);
static_assert(S::kRows == 16 && S::kUnits == 32 && S::kWarps == 8, "the lanes' 4 × 4 outputs cover the tile");

template <typename T>
struct Args {
  const T* a = nullptr;  // [n, k]
  const T* w = nullptr;  // [hdim, k]
  const T* b = nullptr;  // [hdim]
  const T* wo = nullptr;  // [outs, hdim]
  const T* bo = nullptr;  // [outs]
  const int64_t* y = nullptr;
  int n = 0, k = 0, hdim = 0, outs = 0, slices = 1;
  T scale = 1;
  Activation act = Activation::kNone;
  T* h = nullptr;    // [n, hdim]
  T* g = nullptr;    // [n, outs]
  T* d = nullptr;    // [n, hdim]
  T* nll = nullptr;  // [n]
  int* counters = nullptr;  // [row groups]
  bool head = true;         // false: a hidden layer alone (h only)
};

template <typename T>
__global__ void __launch_bounds__(S::kThreads) forward_head_kernel(const __grid_constant__ Args<T> p) {
  SGMCMC_DYNAMIC_SMEM(forward_head_smem);
  T* const sm = reinterpret_cast<T*>(forward_head_smem);  // rows [0, kRows) of a, then kUnits rows of W
  __shared__ int is_last;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, lr = lane / 8, lc = lane % 8;
  const int group = blockIdx.x / p.slices, slice = blockIdx.x % p.slices;
  const int r0 = group * S::kRows, u0 = slice * S::kUnits;
  // the chunk's elements of this thread: column col of the staged rows row0 + kStep·q (kStep = 2 rows at
  // once); rows 0 … kRows − 1 are a's rows r0 + …, the rest W's units u0 + …
  constexpr int kStep = S::kThreads / S::kChunk, kARows = S::kRows / kStep, kWRows = S::kUnits / kStep;
  static_assert(S::kThreads % S::kChunk == 0 && kARows + kWRows == kLoads);
  const int col = tid % S::kChunk, row0 = tid / S::kChunk;
  const T* const abase = p.a + static_cast<int64_t>(r0 + row0) * p.k + col;
  const T* const wbase = p.w + static_cast<int64_t>(u0 + row0) * p.k + col;
  const int64_t step = int64_t{kStep} * p.k;
  unsigned amask = 0, wmask = 0;  // which of the thread's rows exist (r < n, u < hdim)
#pragma unroll
  for (int q = 0; q < kARows; ++q) amask |= r0 + row0 + kStep * q < p.n ? 1u << q : 0u;
#pragma unroll
  for (int q = 0; q < kWRows; ++q) wmask |= u0 + row0 + kStep * q < p.hdim ? 1u << q : 0u;
  T buf[kLoads];
  const auto load = [&](int c) {
    const int k0 = c * S::kChunk;
    const bool in = k0 + col < p.k;
#pragma unroll
    for (int q = 0; q < kARows; ++q) buf[q] = in && (amask >> q & 1u) ? abase[k0 + q * step] : T(0);
#pragma unroll
    for (int q = 0; q < kWRows; ++q) buf[kARows + q] = in && (wmask >> q & 1u) ? wbase[k0 + q * step] : T(0);
  };
  const auto store = [&]() {
#pragma unroll
    for (int q = 0; q < kARows; ++q) sm[(row0 + kStep * q) * S::kStride + col] = buf[q];
#pragma unroll
    for (int q = 0; q < kWRows; ++q) sm[(S::kRows + row0 + kStep * q) * S::kStride + col] = buf[kARows + q];
  };
  T acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = T(0);
  const int chunks = (p.k + S::kChunk - 1) / S::kChunk;
  load(0);
  store();
  __syncthreads();
  const T* const arow = sm + lr * S::kStride + warp * S::kPerWarp;                    // row lr + 4i: + 4i·stride
  const T* const wrow = sm + (S::kRows + lc) * S::kStride + warp * S::kPerWarp;       // unit lc + 8j: + 8j·stride
  for (int c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) load(c + 1);  // in flight during this chunk's FMAs
#pragma unroll
    for (int kk = 0; kk < S::kPerWarp; kk += 4) {
      T av[4][4], wv[4][4];  // [row or unit][k]
#pragma unroll
      for (int i = 0; i < 4; ++i) load4(arow + 4 * i * S::kStride + kk, av[i]);
#pragma unroll
      for (int j = 0; j < 4; ++j) load4(wrow + 8 * j * S::kStride + kk, wv[j]);
#pragma unroll
      for (int v = 0; v < 4; ++v)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fma(av[i][v], wv[j][v], acc[i][j]);
    }
    __syncthreads();
    if (c + 1 < chunks) {
      store();
      __syncthreads();
    }
  }
  // the warps' partial tiles, added in warp order: z = ((p_0 + p_1) + …) + p_7, then h = act(z + b)
  T* const red = sm;  // [kWarps, kRows, kUnits]
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) red[(warp * S::kRows + lr + 4 * i) * S::kUnits + lc + 8 * j] = acc[i][j];
  __syncthreads();
  for (int o = tid; o < S::kRows * S::kUnits; o += S::kThreads) {
    T z = red[o];
#pragma unroll
    for (int wp = 1; wp < S::kWarps; ++wp) z += red[wp * S::kRows * S::kUnits + o];
    const int r = r0 + o / S::kUnits, u = u0 + o % S::kUnits;
    if (r < p.n && u < p.hdim) p.h[static_cast<int64_t>(r) * p.hdim + u] = activate_hd(p.act, z + p.b[u]);
  }
  if (!p.head) return;
  // the row group's last slice block to finish runs the head over the group's rows
  __threadfence();
  __syncthreads();
  if (tid == 0) is_last = atomicAdd(p.counters + group, 1) == p.slices - 1;
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  if (tid == 0) p.counters[group] = 0;  // ready for the next call (and graph replay)
  head_rows<T, S::kThreads>(p.h, p.wo, p.bo, p.y, r0, min(S::kRows, p.n - r0), p.hdim, p.hdim, p.outs, p.scale, p.act, p.g,
                            p.d, p.nll, nullptr, nullptr, 1, 0, sm);
}

template <typename T>
bool launch(const MlpForwardHeadArgs& t) {
  Args<T> p;
  p.a = t.a.data_ptr<T>(), p.w = t.weight.data_ptr<T>(), p.b = t.bias.data_ptr<T>();
  p.n = static_cast<int>(t.a.size(0)), p.k = static_cast<int>(t.a.size(1));
  p.hdim = static_cast<int>(t.weight.size(0));
  p.slices = (p.hdim + S::kUnits - 1) / S::kUnits;
  p.scale = static_cast<T>(t.scale), p.act = t.act;
  p.h = t.h_out.data_ptr<T>();
  p.head = t.out_weight.defined();
  if (p.head) {
    p.wo = t.out_weight.data_ptr<T>(), p.bo = t.out_bias.data_ptr<T>(), p.y = t.targets.data_ptr<int64_t>();
    p.outs = static_cast<int>(t.out_weight.size(0));
    p.g = t.g_out.data_ptr<T>(), p.d = t.g_hidden.data_ptr<T>();
    p.nll = t.row_nll.data_ptr<T>(), p.counters = t.counters.data_ptr<int>();
  }
  const size_t smem = static_cast<size_t>(S::smem_elems(p.hdim, p.outs)) * sizeof(T);
  const auto* prop = at::cuda::getCurrentDeviceProperties();
  if (smem > prop->sharedMemPerBlockOptin) return false;
  // the default limit is 48 KB of shared memory with the kernel's static is_last: past it (FNN-800's head in
  // float32) the kernel's dynamic limit is raised
  if (smem + sizeof(int) > 48 * 1024)
    allow_dynamic_smem(reinterpret_cast<const void*>(forward_head_kernel<T>), static_cast<int>(S::kMaxSmemBytes),
                       t.a.device().index());
  const int groups = (p.n + S::kRows - 1) / S::kRows;
  launch_kernel(forward_head_kernel<T>, dim3(static_cast<unsigned>(groups * p.slices)), dim3(S::kThreads), smem,
                at::cuda::getCurrentCUDAStream(), p);
  return true;
}

}  // namespace
}  // namespace forward_head

bool mlp_forward_head_cuda(const MlpForwardHeadArgs& t) {
  if (!mlp_forward_head_applies(t) || !t.a.is_cuda()) return false;
  const int64_t groups = (t.a.size(0) + MlpForwardHeadShape::kRows - 1) / MlpForwardHeadShape::kRows;
  if (t.out_weight.defined() && (!t.counters.defined() || t.counters.scalar_type() != torch::kInt32 ||
                                 !t.counters.is_contiguous() || t.counters.numel() < groups ||
                                 t.counters.device() != t.a.device()))
    return false;
  return t.a.scalar_type() == torch::kFloat64 ? forward_head::launch<double>(t) : forward_head::launch<float>(t);
}

}  // namespace sgmcmc::kernels
