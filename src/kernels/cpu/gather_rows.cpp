#include "kernels/cpu/gather_rows.h"

#include <ATen/record_function.h>

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sgmcmc::kernels {

namespace {

constexpr int64_t kAhead = 4;          // rows prefetched ahead of the one being copied
constexpr int64_t kTaskBytes = 64 << 10;  // ~64 KB of rows per task: small batches stay on one thread

void prefetch_row(const char* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
}

// Rows of one 4- or 8-byte scalar (labels, regression targets): a memcpy of constant size is one load
// and one store, so a row is a few instructions and many rows' cache misses overlap. (Through the
// general loop each row was a call and a prefetch: the App. H.1 step's 500 labels took ~7 µs.)
template <int64_t B>
void copy_scalar_rows(char* dst, const char* src, const int64_t* idx, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) std::memcpy(dst + r * B, src + idx[r] * B, B);
}

void copy_rows(char* dst, const char* src, const int64_t* idx, int64_t begin, int64_t end, int64_t row_bytes) {
  if (row_bytes == 8) return copy_scalar_rows<8>(dst, src, idx, begin, end);
  if (row_bytes == 4) return copy_scalar_rows<4>(dst, src, idx, begin, end);
  for (int64_t r = begin; r < end; ++r) {
    if (r + kAhead < end) prefetch_row(src + idx[r + kAhead] * row_bytes, row_bytes);
    std::memcpy(dst + r * row_bytes, src + idx[r] * row_bytes, row_bytes);
  }
}

// Rows idx[begin, end) of the bytes widened: dst[r, j] = float(src[idx[r], j]) / scale, as the
// quotient q = x·(1/s) corrected once by its residual: q + (x − q·s)·(1/s) with two fused
// multiply-adds, which vectorizes (a division does not, at this speed). ByteRows checks the bits of
// every value it serves against the float data, through this very function. Compiled for the
// baseline ISA (fmaf from libm: same bits, slowly), AVX2+FMA and x86-64-v4, chosen at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("default", "arch=haswell", "arch=x86-64-v4")))
#endif
void widen_rows(float* dst, const uint8_t* src, const int64_t* idx, int64_t begin, int64_t end, int64_t row,
                float scale) {
  const float rcp = 1.0f / scale;
  for (int64_t r = begin; r < end; ++r) {
    if (r + kAhead < end) prefetch_row(reinterpret_cast<const char*>(src + idx[r + kAhead] * row), row);
    const uint8_t* __restrict s = src + idx[r] * row;
    float* __restrict d = dst + r * row;
    for (int64_t j = 0; j < row; ++j) {
      const float x = static_cast<float>(s[j]);
      const float q = x * rcp;
      d[j] = std::fma(std::fma(-q, scale, x), rcp, q);
    }
  }
}

void check_indices(const int64_t* ip, int64_t n, int64_t rows) {
  for (int64_t r = 0; r < n; ++r)
    if (ip[r] < 0 || ip[r] >= rows)
      throw std::out_of_range("gather_rows_out: index " + std::to_string(ip[r]) + " is out of range for " +
                              std::to_string(rows) + " rows");
}

// `out` as [n, sizes of src after the first] of `dtype` (CPU, contiguous), reused when it already is.
void ensure_out(torch::Tensor& out, const torch::Tensor& src, int64_t n, torch::ScalarType dtype) {
  auto sizes = src.sizes().vec();
  sizes[0] = n;
  if (!out.defined() || out.sizes() != c10::IntArrayRef(sizes) || out.scalar_type() != dtype ||
      !out.device().is_cpu() || !out.is_contiguous())
    out = at::empty(sizes, src.options().dtype(dtype));
}

}  // namespace

void gather_rows_out(torch::Tensor& out, const torch::Tensor& src, const torch::Tensor& idx) {
  RECORD_FUNCTION("sgmcmc::gather_rows", std::vector<c10::IValue>());
  if (!src.device().is_cpu() || !idx.device().is_cpu() || !src.is_contiguous() || src.dim() < 1 ||
      idx.scalar_type() != torch::kInt64 || idx.dim() != 1 || !idx.is_contiguous()) {
    out = src.index_select(0, idx);
    return;
  }
  const int64_t n = idx.size(0), rows = src.size(0);
  const int64_t* ip = idx.data_ptr<int64_t>();
  check_indices(ip, n, rows);
  ensure_out(out, src, n, src.scalar_type());
  const int64_t row_bytes = src.numel() / std::max<int64_t>(rows, 1) * static_cast<int64_t>(src.element_size());
  if (n == 0 || row_bytes == 0) return;
  char* dst = static_cast<char*>(out.data_ptr());
  const char* sp = static_cast<const char*>(src.data_ptr());
  const int64_t grain = std::max<int64_t>(1, kTaskBytes / row_bytes);
  // a few rows (up to one grain) run on the calling thread: at::parallel_for opens no region for them
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { copy_rows(dst, sp, ip, b, e, row_bytes); });
}

void gather_widen_rows_out(torch::Tensor& out, const torch::Tensor& src, const torch::Tensor& idx, float scale) {
  if (!src.device().is_cpu() || src.scalar_type() != torch::kUInt8 || !src.is_contiguous() || src.dim() < 1 ||
      !idx.device().is_cpu() || idx.scalar_type() != torch::kInt64 || idx.dim() != 1 || !idx.is_contiguous())
    throw std::invalid_argument("gather_widen_rows_out: contiguous uint8 rows and a 1-D int64 index on the CPU");
  if (!(scale > 0.0f) || !std::isfinite(scale))
    throw std::invalid_argument("gather_widen_rows_out: scale must be positive and finite");
  const int64_t n = idx.size(0), rows = src.size(0);
  const int64_t* ip = idx.data_ptr<int64_t>();
  check_indices(ip, n, rows);
  ensure_out(out, src, n, torch::kFloat32);
  const int64_t row = src.numel() / std::max<int64_t>(rows, 1);
  if (n == 0 || row == 0) return;
  float* dst = out.data_ptr<float>();
  const uint8_t* sp = src.data_ptr<uint8_t>();
  const int64_t grain = std::max<int64_t>(1, kTaskBytes / (row * static_cast<int64_t>(sizeof(float))));
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { widen_rows(dst, sp, ip, b, e, row, scale); });
}

}  // namespace sgmcmc::kernels
