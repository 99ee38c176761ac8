#include "data/byte_rows.h"

#include "core/kernel_settings.h"

#include <ATen/record_function.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu/gather_rows.h"

namespace sgmcmc {

namespace {

// bytes[i] = k with table[k] == x[i] bit for bit, where k = round(x[i]·s); false if some x[i] has none.
bool to_bytes(const float* x, uint8_t* bytes, int64_t n, const float* table, float s) {
  std::atomic<bool> ok{true};
  at::parallel_for(0, n, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end && ok.load(std::memory_order_relaxed); ++i) {
      const float k = std::nearbyint(x[i] * s);
      if (!(k >= 0.0f && k <= 255.0f) || std::memcmp(&table[static_cast<int>(k)], &x[i], sizeof(float)) != 0) {
        ok.store(false, std::memory_order_relaxed);
        return;
      }
      bytes[i] = static_cast<uint8_t>(k);
    }
  });
  return ok.load();
}

// The tensors widen() made, each with its bytes. A weak reference keeps a freed tensor's TensorImpl
// from being reused at the same address while its entry exists, so identity cannot be mistaken.
struct Widened {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> x;
  int64_t version;
  torch::Tensor bytes;
  float scale;
};
std::mutex widened_mutex;
std::vector<Widened> widened;  // a handful: one per split a loader widened

// Forgets the entries whose tensor is freed (widened_mutex held).
void forget_freed() {
  widened.erase(std::remove_if(widened.begin(), widened.end(), [](const Widened& w) { return w.x.expired(); }),
                widened.end());
}

// The bytes widen() gave x, if x is that very tensor and unwritten since.
std::optional<std::pair<torch::Tensor, float>> widened_bytes(const torch::Tensor& x) {
  std::lock_guard<std::mutex> lock(widened_mutex);
  forget_freed();
  for (const auto& w : widened)
    if (w.x._unsafe_get_target() == x.unsafeGetTensorImpl() && x._version() == w.version &&
        x.sizes() == w.bytes.sizes() && x.is_contiguous())
      return std::make_pair(w.bytes, w.scale);
  return std::nullopt;
}

}  // namespace

torch::Tensor ByteRows::widen(const torch::Tensor& bytes, float scale) {
  if (!bytes.defined() || bytes.dim() < 1)
    throw std::invalid_argument("ByteRows::widen: uint8 rows [n, ...] on the CPU");
  const auto b = bytes.contiguous();
  torch::Tensor x;  // b's shape: the gather keeps every dimension after the first
  kernels::gather_widen_rows_out(x, b, torch::arange(b.size(0), torch::kInt64), scale);
  std::lock_guard<std::mutex> lock(widened_mutex);
  forget_freed();
  widened.push_back({c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(x.getIntrusivePtr()),
                     x._version(), b, scale});
  return x;
}

std::optional<ByteRows> ByteRows::of(const torch::Tensor& x) {
  if (!x.defined() || !x.device().is_cpu() || x.scalar_type() != torch::kFloat32 || x.dim() < 1 || x.numel() == 0)
    return std::nullopt;
  if (auto known = widened_bytes(x)) return ByteRows(known->first, known->second);
  torch::NoGradGuard no_grad;
  const auto xc = x.contiguous();
  const auto all_bytes = torch::arange(256, torch::kInt32).to(torch::kUInt8).reshape({1, 256});
  const auto first = torch::zeros({1}, torch::kInt64);
  auto bytes = torch::empty(x.sizes(), x.options().dtype(torch::kUInt8));
  for (const float s : {255.0f, 1.0f}) {
    torch::Tensor table;  // table[k]: what the gather gives for byte k at this scale
    kernels::gather_widen_rows_out(table, all_bytes, first, s);
    if (to_bytes(xc.data_ptr<float>(), bytes.data_ptr<uint8_t>(), xc.numel(), table.data_ptr<float>(), s))
      return ByteRows(bytes, s);
  }
  return std::nullopt;
}

void ByteRows::gather_out(torch::Tensor& out, const torch::Tensor& idx) const {
  RECORD_FUNCTION("sgmcmc::gather_bytes", std::vector<c10::IValue>());
  kernels::gather_widen_rows_out(out, bytes_, idx, scale_);
}

bool byte_rows_enabled() { return kernel_settings().byte_rows; }

}  // namespace sgmcmc
