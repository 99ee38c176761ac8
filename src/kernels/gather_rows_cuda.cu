// gather_rows_pair_cuda (kernels/gather_rows.h): two row gathers by the same indices in one kernel.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/macros/Macros.h>

#include <algorithm>
#include <cstdint>

#include "kernels/gather_rows.h"

namespace sgmcmc::kernels {

namespace {

// Thread i copies word i of the n·(wa + wb) output words: first a's rows (wa words each), then b's.
__global__ void gather_pair_kernel(uint32_t* a_out, const uint32_t* a, int64_t wa, uint32_t* b_out, const uint32_t* b,
                                   int64_t wb, const int64_t* idx, int64_t n, int64_t rows) {
  const int64_t total_a = n * wa, total = total_a + n * wb;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    if (i < total_a) {
      const int64_t r = i / wa, w = i - r * wa, src = idx[r];
      CUDA_KERNEL_ASSERT(src >= 0 && src < rows);
      a_out[i] = a[src * wa + w];
    } else {
      const int64_t j = i - total_a, r = j / wb, w = j - r * wb, src = idx[r];
      CUDA_KERNEL_ASSERT(src >= 0 && src < rows);
      b_out[j] = b[src * wb + w];
    }
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
  const int threads = 256;
  const int64_t grid = std::min<int64_t>((n * (wa + wb) + threads - 1) / threads, 65535);
  gather_pair_kernel<<<grid, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      static_cast<uint32_t*>(a_out.data_ptr()), static_cast<const uint32_t*>(a.data_ptr()), wa,
      static_cast<uint32_t*>(b_out.data_ptr()), static_cast<const uint32_t*>(b.data_ptr()), wb,
      idx.data_ptr<int64_t>(), n, a.size(0));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace sgmcmc::kernels
