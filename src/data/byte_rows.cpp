#include "data/byte_rows.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

namespace sgmcmc {
namespace {

// out[i] = float(bytes[idx[i]]) / scale, row by row, in one pass (CPU): the gather and the widening
// without the float intermediate of ATen's three ops. Division, not a reciprocal multiply, as
// ATen's div_ by a float32 scalar; of() checks the bits against the float tensor anyway.
torch::Tensor gather_widen_cpu(const torch::Tensor& bytes, const torch::Tensor& idx, float scale) {
  auto sizes = bytes.sizes().vec();
  const int64_t rows = bytes.size(0), n = idx.numel(), row = rows ? bytes.numel() / rows : 0;
  sizes[0] = n;
  auto out = torch::empty(sizes, torch::kFloat32);
  const auto index = idx.to(torch::kInt64).contiguous();
  const int64_t* ix = index.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    TORCH_CHECK(ix[i] >= 0 && ix[i] < rows, "ByteRows: index ", ix[i], " out of range for ", rows, " rows");
  const uint8_t* src = bytes.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();
  at::parallel_for(0, n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint8_t* __restrict s = src + ix[i] * row;
      float* __restrict d = dst + i * row;
      for (int64_t j = 0; j < row; ++j) d[j] = static_cast<float>(s[j]) / scale;
    }
  });
  return out;
}

}  // namespace

torch::Tensor ByteRows::widen_rows(const torch::Tensor& idx) const {
  if (bytes_.is_cpu()) return gather_widen_cpu(bytes_, idx, static_cast<float>(scale_));
  auto x = bytes_.index_select(0, idx).to(torch::kFloat32);
  return scale_ == 1.0 ? x : x.div_(scale_);  // as data/load.cpp: images.to(float32), then div_(255.0)
}

std::optional<ByteRows> ByteRows::of(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  if (!x.defined() || x.scalar_type() != torch::kFloat32 || x.dim() < 1 || x.numel() == 0) return std::nullopt;
  const auto lo = x.min().item<float>(), hi = x.max().item<float>();
  if (!(lo >= 0.0f) || !(hi <= 255.0f)) return std::nullopt;
  for (const double scale : {255.0, 1.0}) {
    auto k = (x * scale).round_();
    if (!(k.max().item<float>() <= 255.0f)) continue;
    ByteRows rows(k.to(torch::kUInt8).contiguous(), scale);
    // Every row through the same path index_select takes: equal bits or no ByteRows.
    const auto all = torch::arange(x.size(0), torch::TensorOptions().dtype(torch::kInt64).device(x.device()));
    if (torch::equal(rows.widen_rows(all), x)) return rows;
  }
  return std::nullopt;
}

torch::Tensor ByteRows::index_select(const torch::Tensor& idx) const {
  RECORD_FUNCTION("sgmcmc::byte_rows_gather", std::vector<c10::IValue>());
  return widen_rows(idx);
}

}  // namespace sgmcmc
