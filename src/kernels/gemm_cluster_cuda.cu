// The cluster products of kernels/gemm_cluster.h on CUDA (sm_90: thread-block clusters and their
// distributed shared memory).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cooperative_groups.h>


#include "kernels/gemm_cluster.h"
#include "kernels/smem_cuda.h"

namespace sgmcmc::kernels {

// (a namespace of its own: the compile check includes every .cu into one unit)
namespace cluster_gemm {
namespace {

namespace cg = cooperative_groups;

constexpr int kTile = GemmClusterPlan::kTile;
constexpr int kQuads = kTile / 4;                // float4s across a tile's row
constexpr int kThreads = kQuads * kQuads;        // 16 × 16 threads, 4 × 4 outputs each
constexpr int kUnits = GemmClusterPlan::kMaxStageK * kTile / 4 / kThreads;  // float4s per operand per thread a stage
static_assert(kThreads == 256 && kUnits == 8, "tile shape");

// One operand as the kernel reads it: element (col, k) at p[col·col_stride + k·k_stride], col along m
// (a) or n (b), `cols` of them; contiguous along k or along col (k_stride == 1 decides).
struct Operand {
  const float* p;
  int col_stride, k_stride, cols;
};

struct Args {
  Operand a, b;
  float* c;
  int c_rs, m, n, k, k_chunk, tiles_n, stage_k;
  bool accumulate;
};

// This thread's float4s of the operand's [ks × kTile] stage at (col0, k0): along k where the operand is
// contiguous along k (unit u: column u % kTile, k quad u / kTile: a warp's lanes take 32 columns), else
// along the columns (unit u: k row u / kQuads, column quad u % kQuads). Outside the matrix: zeros.
__device__ __forceinline__ void load_stage(const Operand& o, int col0, int k0, int ks, int tid, float4 (&r)[kUnits]) {
  const bool k_contig = o.k_stride == 1;
  const int units = ks * kQuads;
#pragma unroll
  for (int i = 0; i < kUnits; ++i) {
    const int u = tid + i * kThreads;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (u < units) {
      const int col = k_contig ? u % kTile : (u % kQuads) * 4;
      const int kk = k_contig ? (u / kTile) * 4 : u / kQuads;
      const int gc = col0 + col;
      if (gc < o.cols)
        v = __ldg(reinterpret_cast<const float4*>(o.p + static_cast<int64_t>(gc) * o.col_stride +
                                                  static_cast<int64_t>(k0 + kk) * o.k_stride));
    }
    r[i] = v;
  }
}

// The stage into shared memory as [ks][kTile] (k-major, columns contiguous: the compute loop reads a
// thread's 4 columns as one float4). Along k: four stores a unit, consecutive lanes at consecutive
// columns (no bank conflicts).
__device__ __forceinline__ void store_stage(const Operand& o, int ks, int tid, const float4 (&r)[kUnits], float* s) {
  const bool k_contig = o.k_stride == 1;
  const int units = ks * kQuads;
#pragma unroll
  for (int i = 0; i < kUnits; ++i) {
    const int u = tid + i * kThreads;
    if (u >= units) continue;
    if (k_contig) {
      const int col = u % kTile, kk = (u / kTile) * 4;
      s[(kk + 0) * kTile + col] = r[i].x;
      s[(kk + 1) * kTile + col] = r[i].y;
      s[(kk + 2) * kTile + col] = r[i].z;
      s[(kk + 3) * kTile + col] = r[i].w;
    } else {
      reinterpret_cast<float4*>(s)[u] = r[i];  // row u / kQuads, quad u % kQuads
    }
  }
}

// Block (tile t, split s) = blockIdx.x = t·S + s, its cluster the S splits of tile t (rank s). At most 128
// registers a thread (ptxas: 4 bytes spilled), so that two blocks fit an SM: a cluster of 8 needs 8 free
// block slots in one GPC, and an H100's GPCs have 14–18 SMs, so at one block an SM a wave can hold fewer
// clusters than H.1's 16 (a GPC of 14 SMs takes one).
__global__ void __launch_bounds__(kThreads, 2) gemm_cluster_kernel(const __grid_constant__ Args g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ float4 smem4[];
  float* const smem = reinterpret_cast<float*>(smem4);
  cg::cluster_group cluster = cg::this_cluster();
  const int splits = static_cast<int>(cluster.num_blocks());
  const int split = static_cast<int>(cluster.block_rank());
  const int tile = blockIdx.x / splits;
  const int m0 = (tile / g.tiles_n) * kTile, n0 = (tile % g.tiles_n) * kTile;
  const int tid = threadIdx.x, tx = tid % kQuads, ty = tid / kQuads;
  const int kb = split * g.k_chunk, ke = min(g.k, kb + g.k_chunk);
  float* const As = smem;                             // [stage_k][kTile]
  float* const Bs = smem + g.stage_k * kTile;          // [stage_k][kTile]
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
  for (int k0 = kb; k0 < ke; k0 += g.stage_k) {
    const int ks = min(g.stage_k, ke - k0);  // a multiple of 4 (k and the chunk are)
    float4 ra[kUnits], rb[kUnits];
    load_stage(g.a, m0, k0, ks, tid, ra);
    load_stage(g.b, n0, k0, ks, tid, rb);
    if (k0 != kb) __syncthreads();  // the previous stage's reads are done
    store_stage(g.a, ks, tid, ra, As);
    store_stage(g.b, ks, tid, rb, Bs);
    __syncthreads();
    const float4* const A4 = reinterpret_cast<const float4*>(As);
    const float4* const B4 = reinterpret_cast<const float4*>(Bs);
#pragma unroll 4
    for (int kk = 0; kk < ks; ++kk) {
      const float4 av = A4[kk * kQuads + ty], bv = B4[kk * kQuads + tx];
      const float a[4] = {av.x, av.y, av.z, av.w}, b[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  }
  // the partial tile into this block's shared memory ([kTile][kTile], over the stage buffers)
  __syncthreads();
  float4* const P4 = reinterpret_cast<float4*>(smem);
#pragma unroll
  for (int i = 0; i < 4; ++i) P4[(ty * 4 + i) * kQuads + tx] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  cluster.sync();  // every split's partial tile written and visible across the cluster
  // this block's rows of the tile, summed over the splits in split order, stored
  const int rows = (kTile + splits - 1) / splits;
  const int r0 = split * rows, r1 = min(kTile, r0 + rows);
  for (int e = tid; e < (r1 - r0) * kTile; e += kThreads) {
    const int row = r0 + e / kTile, col = e % kTile;
    const int at = row * kTile + col;
    float s = cluster.map_shared_rank(smem, 0)[at];
    for (int q = 1; q < splits; ++q) s += cluster.map_shared_rank(smem, q)[at];
    const int gm = m0 + row, gn = n0 + col;
    if (gm < g.m && gn < g.n) {
      float* const out = g.c + static_cast<int64_t>(gm) * g.c_rs + gn;
      *out = g.accumulate ? *out + s : s;
    }
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
#endif
}

Operand operand(const torch::Tensor& t, int k_dim, int cols) {
  const bool k_contig = t.stride(k_dim) == 1;
  Operand o;
  o.p = t.data_ptr<float>();
  o.k_stride = k_contig ? 1 : static_cast<int>(t.stride(k_dim));
  o.col_stride = k_contig ? static_cast<int>(t.stride(1 - k_dim)) : 1;
  o.cols = cols;
  return o;
}

}  // namespace
}  // namespace cluster_gemm

bool gemm_cluster(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate) {
  namespace cl = cluster_gemm;
  if (!a.is_cuda() || !b.is_cuda() || !c.is_cuda() || a.device() != c.device() || b.device() != c.device()) return false;
  if (!gemm_cluster_layout_ok(a, b, c)) return false;
  const c10::cuda::CUDAGuard guard(c.device());
  const auto* props = at::cuda::getCurrentDeviceProperties();
  if (props->major < 9) return false;
  const int m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)), n = static_cast<int>(b.size(1));
  const GemmClusterPlan plan = gemm_cluster_plan(m, n, k, props->multiProcessorCount);
  allow_dynamic_smem(reinterpret_cast<const void*>(cl::gemm_cluster_kernel),
                     static_cast<int>(size_t{2} * GemmClusterPlan::kMaxStageK * cl::kTile * sizeof(float)),
                     c.device().index());
  cl::Args g;
  g.a = cl::operand(a, 1, m);
  g.b = cl::operand(b, 0, n);
  g.c = c.data_ptr<float>();
  g.c_rs = static_cast<int>(c.stride(0));
  g.m = m, g.n = n, g.k = k, g.k_chunk = plan.k_chunk, g.tiles_n = plan.tiles_n, g.stage_k = plan.stage_k;
  g.accumulate = accumulate;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(plan.blocks));
  cfg.blockDim = dim3(cl::kThreads);
  cfg.dynamicSmemBytes = plan.smem_bytes;
  cfg.stream = at::cuda::getCurrentCUDAStream();
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(plan.splits);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, cl::gemm_cluster_kernel, g));
  return true;
}

}  // namespace sgmcmc::kernels
