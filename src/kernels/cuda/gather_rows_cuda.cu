// gather_rows_pair_cuda (kernels/cpu/gather_rows.h): two row gathers by the same indices in one kernel.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/macros/Macros.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/gather_rows.h"
#include "kernels/cuda/launch_cuda.h"

namespace sgmcmc::kernels {

namespace {

// Block row y of the grid copies minibatch row r = blockIdx.x · blockDim.y + threadIdx.y: its index is
// read once and its a-row copied in V-word vectors (V = 4: 16-byte loads and stores, where a's rows are
// whole vectors and both pointers 16-byte aligned), then its b-row word by word. A row to a block row:
// every load of a row is in flight at once behind its one dependent read of idx, and no thread divides
// by the row width (a thread per output word does, per word, in 64 bits).
template <int V>
__global__ void gather_pair_kernel(uint32_t* a_out, const uint32_t* a, int64_t wa, uint32_t* b_out, const uint32_t* b,
                                   int64_t wb, const int64_t* idx, int64_t n, int64_t rows) {
  using Vec = std::conditional_t<V == 4, uint4, uint32_t>;
  const int64_t va = wa / V;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.y) + threadIdx.y; r < n;
       r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const int64_t src = idx[r];
    CUDA_KERNEL_ASSERT(src >= 0 && src < rows);
    const Vec* from = reinterpret_cast<const Vec*>(a + src * wa);
    Vec* to = reinterpret_cast<Vec*>(a_out + r * wa);
    for (int64_t w = threadIdx.x; w < va; w += blockDim.x) to[w] = from[w];
    for (int64_t w = threadIdx.x; w < wb; w += blockDim.x) b_out[r * wb + w] = b[src * wb + w];
  }
}

// Words per row of t when its rows are whole 4-byte words, else 0.
int64_t row_words(const torch::Tensor& t) {
  const int64_t rows = t.size(0);
  if (rows == 0) return 0;
  const int64_t bytes = t.numel() / rows * static_cast<int64_t>(t.element_size());
  return bytes % 4 == 0 ? bytes / 4 : 0;
}

void ensure(torch::Tensor& out, const torch::Tensor& src, int64_t n) {
  auto sizes = src.sizes().vec();
  sizes[0] = n;
  if (!out.defined() || out.sizes() != c10::IntArrayRef(sizes) || out.scalar_type() != src.scalar_type() ||
      out.device() != src.device() || !out.is_contiguous())
    out = at::empty(sizes, src.options());
}

}  // namespace

bool gather_rows_pair_cuda(torch::Tensor& a_out, const torch::Tensor& a, torch::Tensor& b_out, const torch::Tensor& b,
                           const torch::Tensor& idx) {
  if (!a.is_cuda() || !b.is_cuda() || !idx.is_cuda() || a.device() != b.device() || idx.device() != a.device() ||
      !a.is_contiguous() || !b.is_contiguous() || a.dim() < 1 || b.dim() < 1 || a.size(0) != b.size(0) ||
      idx.dim() != 1 || idx.scalar_type() != torch::kInt64 || !idx.is_contiguous())
    return false;
  const int64_t wa = row_words(a), wb = row_words(b), n = idx.size(0);
  if (wa == 0 || wb == 0) return false;
  ensure(a_out, a, n);
  ensure(b_out, b, n);
  if (n == 0) return true;
  const c10::cuda::CUDAGuard guard(a.device());
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec4 = wa % 4 == 0 && aligned(a.data_ptr()) && aligned(a_out.data_ptr());
  // a row's threads: its widest loop rounded up to whole warps, at most 256; the rest of the block's 256
  // threads take further rows (narrow rows: several a block)
  const int64_t widest = std::max(vec4 ? wa / 4 : wa, wb);
  const int tx = static_cast<int>(std::min<int64_t>(256, (widest + 31) / 32 * 32)), ty = 256 / tx;
  const dim3 block(tx, ty);
  const auto grid = static_cast<unsigned>(std::min<int64_t>((n + ty - 1) / ty, 65535));
  auto* ao = static_cast<uint32_t*>(a_out.data_ptr());
  const auto* ai = static_cast<const uint32_t*>(a.data_ptr());
  auto* bo = static_cast<uint32_t*>(b_out.data_ptr());
  const auto* bi = static_cast<const uint32_t*>(b.data_ptr());
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t* ix = idx.data_ptr<int64_t>();
  const int64_t rows = a.size(0);
  launch_kernel(vec4 ? gather_pair_kernel<4> : gather_pair_kernel<1>, grid, block, 0, stream, ao, ai, wa, bo, bi, wb, ix, n, rows);
  return true;
}

}  // namespace sgmcmc::kernels
