#include "kernels/gather_rows.h"

#include <ATen/Parallel.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace sgmcmc::kernels {

namespace {

constexpr int64_t kAhead = 4;          // rows prefetched ahead of the one being copied
constexpr int64_t kTaskBytes = 64 << 10;  // ~64 KB of rows per task: small batches stay on one thread

void copy_rows(char* dst, const char* src, const int64_t* idx, int64_t begin, int64_t end, int64_t row_bytes) {
  for (int64_t r = begin; r < end; ++r) {
    if (r + kAhead < end) {
      const char* p = src + idx[r + kAhead] * row_bytes;
      for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(p + b);
    }
    std::memcpy(dst + r * row_bytes, src + idx[r] * row_bytes, row_bytes);
  }
}

}  // namespace

void gather_rows_out(torch::Tensor& out, const torch::Tensor& src, const torch::Tensor& idx) {
  if (!src.device().is_cpu() || !idx.device().is_cpu() || !src.is_contiguous() || src.dim() < 1 ||
      idx.scalar_type() != torch::kInt64 || idx.dim() != 1 || !idx.is_contiguous()) {
    out = src.index_select(0, idx);
    return;
  }
  const int64_t n = idx.size(0), rows = src.size(0);
  const int64_t* ip = idx.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r)
    if (ip[r] < 0 || ip[r] >= rows)
      throw std::out_of_range("gather_rows_out: index " + std::to_string(ip[r]) + " is out of range for " +
                              std::to_string(rows) + " rows");
  auto sizes = src.sizes().vec();
  sizes[0] = n;
  if (!out.defined() || out.sizes() != c10::IntArrayRef(sizes) || out.scalar_type() != src.scalar_type() ||
      !out.device().is_cpu() || !out.is_contiguous())
    out = at::empty(sizes, src.options());
  const int64_t row_bytes = src.numel() / std::max<int64_t>(rows, 1) * static_cast<int64_t>(src.element_size());
  if (n == 0 || row_bytes == 0) return;
  char* dst = static_cast<char*>(out.data_ptr());
  const char* sp = static_cast<const char*>(src.data_ptr());
  const int64_t grain = std::max<int64_t>(1, kTaskBytes / row_bytes);
  // a few rows (up to one grain) run on the calling thread: at::parallel_for opens no region for them
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { copy_rows(dst, sp, ip, b, e, row_bytes); });
}

}  // namespace sgmcmc::kernels
