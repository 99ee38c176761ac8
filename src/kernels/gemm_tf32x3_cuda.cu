// kernels/gemm_tf32x3.h: float32 products as 3xTF32 on tensor cores (CUTLASS).
#include "kernels/gemm_tf32x3.h"

#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#if defined(SGMCMC_HAVE_CUTLASS)
#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm.h>
#include <cutlass/gemm/device/gemm_batched.h>
#endif

namespace sgmcmc::kernels {

#if defined(SGMCMC_HAVE_CUTLASS)
namespace {

// 64 × 64 output tiles of 4 warps (32 × 32 each), k 16 deep a stage, 4 stages of asynchronous copies
// (32 KB of shared memory): small tiles, because App. H.1's products have only 16–26 tiles of that
// size, and split-K multiplies them towards the SM count.
using Tile = cutlass::gemm::GemmShape<64, 64, 16>;
using Warp = cutlass::gemm::GemmShape<32, 32, 16>;
using Mma = cutlass::gemm::GemmShape<16, 8, 8>;
using Epilogue = cutlass::epilogue::thread::LinearCombination<float, 4, float, float>;
constexpr int kStages = 4, kAlign = 4;

template <typename LayoutA, typename LayoutB>
using Gemm3x = cutlass::gemm::device::Gemm<float, LayoutA, float, LayoutB, float, cutlass::layout::RowMajor, float,
                                           cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, Tile, Warp, Mma, Epilogue,
                                           cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, kStages,
                                           kAlign, kAlign, /*SplitKSerial=*/true, cutlass::arch::OpMultiplyAddFastF32>;

// Chains: one product per chain, the batch as the grid's third dimension (no split-K: C × the tiles
// fill the SMs from a few chains on).
template <typename LayoutA, typename LayoutB>
using Gemm3xBatched =
    cutlass::gemm::device::GemmBatched<float, LayoutA, float, LayoutB, float, cutlass::layout::RowMajor, float,
                                       cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, Tile, Warp, Mma, Epilogue,
                                       cutlass::gemm::threadblock::GemmBatchedIdentityThreadblockSwizzle, kStages,
                                       kAlign, kAlign, cutlass::arch::OpMultiplyAddFastF32>;

// Row-major [rows, cols] (the last two dimensions) with leading dimension the rows' stride, or
// column-major with the columns'.
bool row_major(const torch::Tensor& t) {
  const int d = static_cast<int>(t.dim());
  return t.stride(d - 1) == 1 && (t.size(d - 2) == 1 || t.stride(d - 2) >= t.size(d - 1));
}
bool col_major(const torch::Tensor& t) {
  const int d = static_cast<int>(t.dim());
  return t.stride(d - 2) == 1 && (t.size(d - 1) == 1 || t.stride(d - 1) >= t.size(d - 2));
}
int64_t leading_dim(const torch::Tensor& t) {
  const int d = static_cast<int>(t.dim());
  return row_major(t) ? t.stride(d - 2) : t.stride(d - 1);
}

template <typename L>
L layout_of(const torch::Tensor& t) {
  return L(static_cast<int>(leading_dim(t)));
}

template <typename LayoutA, typename LayoutB>
bool run(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate, int split_k) {
  using G = Gemm3x<LayoutA, LayoutB>;
  const int m = static_cast<int>(c.size(0)), n = static_cast<int>(c.size(1)), k = static_cast<int>(a.size(1));
  const cutlass::gemm::GemmCoord size(m, n, k);
  float* cp = c.data_ptr<float>();
  typename G::Arguments args(size, {a.data_ptr<float>(), layout_of<LayoutA>(a)}, {b.data_ptr<float>(), layout_of<LayoutB>(b)},
                             {cp, cutlass::layout::RowMajor(static_cast<int>(c.stride(0)))},
                             {cp, cutlass::layout::RowMajor(static_cast<int>(c.stride(0)))},
                             {1.0f, accumulate ? 1.0f : 0.0f}, split_k);
  if (G::can_implement(args) != cutlass::Status::kSuccess) return false;
  // the split-K semaphores (one int a tile): zeroed by initialize() on the stream, a memset node in a graph
  const size_t bytes = G::get_workspace_size(args);
  torch::Tensor workspace;
  if (bytes > 0) workspace = at::empty({static_cast<int64_t>(bytes)}, c.options().dtype(torch::kUInt8));
  G gemm;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (gemm.initialize(args, bytes > 0 ? workspace.data_ptr() : nullptr, stream) != cutlass::Status::kSuccess) return false;
  if (gemm.run(stream) != cutlass::Status::kSuccess) return false;
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename LayoutA, typename LayoutB>
bool run_batched(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate) {
  using G = Gemm3xBatched<LayoutA, LayoutB>;
  const int m = static_cast<int>(c.size(1)), n = static_cast<int>(c.size(2)), k = static_cast<int>(a.size(2));
  float* cp = c.data_ptr<float>();
  const cutlass::layout::RowMajor lc(static_cast<int>(c.stride(1)));
  typename G::Arguments args({m, n, k}, {a.data_ptr<float>(), layout_of<LayoutA>(a)}, a.stride(0),
                             {b.data_ptr<float>(), layout_of<LayoutB>(b)}, b.stride(0), {cp, lc}, c.stride(0), {cp, lc},
                             c.stride(0), {1.0f, accumulate ? 1.0f : 0.0f}, static_cast<int>(c.size(0)));
  if (G::can_implement(args) != cutlass::Status::kSuccess) return false;
  G gemm;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (gemm.initialize(args, nullptr, stream) != cutlass::Status::kSuccess) return false;
  if (gemm.run(stream) != cutlass::Status::kSuccess) return false;
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

bool aligned(const torch::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

// What both entry points check: float32 on one CUDA device, a [.., m, k], b [.., k, n], c [.., m, n]
// row-major, every extent and leading (and batch) stride a multiple of 4, 16-byte aligned pointers.
bool applies(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c, int64_t dims) {
  if (!a.is_cuda() || a.scalar_type() != torch::kFloat32 || b.scalar_type() != torch::kFloat32 ||
      c.scalar_type() != torch::kFloat32 || a.dim() != dims || b.dim() != dims || c.dim() != dims ||
      b.device() != a.device() || c.device() != a.device())
    return false;
  const int64_t d = dims;
  const int64_t m = a.size(d - 2), k = a.size(d - 1), n = b.size(d - 1);
  if (b.size(d - 2) != k || c.size(d - 2) != m || c.size(d - 1) != n || !row_major(c)) return false;
  if (m % kAlign || n % kAlign || k % kAlign || m > INT32_MAX / 2 || n > INT32_MAX / 2 || k > INT32_MAX / 2) return false;
  if (!aligned(a) || !aligned(b) || !aligned(c)) return false;
  for (const torch::Tensor* t : {&a, &b, &c}) {
    if (!row_major(*t) && !col_major(*t)) return false;
    const int64_t ld = leading_dim(*t);
    if (ld % kAlign != 0 || ld > INT32_MAX / 2) return false;
    if (d == 3 && (t->stride(0) % kAlign != 0 || t->size(0) != c.size(0))) return false;
  }
  return true;
}

}  // namespace

bool gemm_tf32x3_built() { return true; }

bool gemm_tf32x3(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate, int split_k) {
  if (!applies(a, b, c, 2)) return false;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (split_k <= 0) {  // tiles × slices ≈ the SM count, each slice at least two k steps
    const int64_t tiles = ((m + Tile::kM - 1) / Tile::kM) * ((n + Tile::kN - 1) / Tile::kN);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    split_k = static_cast<int>(std::clamp<int64_t>(sms / std::max<int64_t>(tiles, 1), 1, std::max<int64_t>(k / (2 * Tile::kK), 1)));
  }
  using Row = cutlass::layout::RowMajor;
  using Col = cutlass::layout::ColumnMajor;
  if (row_major(a) && col_major(b)) return run<Row, Col>(a, b, c, accumulate, split_k);
  if (col_major(a) && row_major(b)) return run<Col, Row>(a, b, c, accumulate, split_k);
  if (row_major(a) && row_major(b)) return run<Row, Row>(a, b, c, accumulate, split_k);
  return false;
}

bool gemm_tf32x3_batched(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate) {
  if (!applies(a, b, c, 3) || c.size(0) > 65535) return false;
  using Row = cutlass::layout::RowMajor;
  using Col = cutlass::layout::ColumnMajor;
  if (row_major(a) && col_major(b)) return run_batched<Row, Col>(a, b, c, accumulate);
  if (col_major(a) && row_major(b)) return run_batched<Col, Row>(a, b, c, accumulate);
  return false;
}

#else

bool gemm_tf32x3_built() { return false; }

bool gemm_tf32x3(const torch::Tensor&, const torch::Tensor&, torch::Tensor&, bool, int) { return false; }

bool gemm_tf32x3_batched(const torch::Tensor&, const torch::Tensor&, torch::Tensor&, bool) { return false; }

#endif

}  // namespace sgmcmc::kernels
