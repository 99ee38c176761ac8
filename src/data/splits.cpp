#include "data/splits.h"

#include <stdexcept>

#include "compat.h"

namespace sgmcmc {

std::pair<Batch, Batch> split_validation(const Batch& train, int64_t val_size, uint64_t seed,
                                         const std::string& where) {
  const int64_t n = train.size();
  if (val_size < 0) throw std::invalid_argument(where + ": must be >= 0, got " + std::to_string(val_size));
  if (val_size == 0) return {train, Batch{}};
  if (val_size >= n)
    throw std::invalid_argument(where + ": validation size " + std::to_string(val_size) +
                                " must be smaller than the training set (" + std::to_string(n) + " examples)");
  // A generator of its own (seed-derived), so the split does not depend on anything else.
  auto gen = compat::make_generator(torch::kCPU, seed * 0x9E3779B97F4A7C15ULL + 0x5bd1e995ULL);
  auto perm = at::randperm(n, gen, torch::TensorOptions().dtype(torch::kInt64));
  auto val_idx = std::get<0>(perm.slice(0, 0, val_size).sort());
  auto train_idx = std::get<0>(perm.slice(0, val_size, n).sort());
  auto pick = [&](const torch::Tensor& idx) {
    Batch b;
    b.inputs = train.inputs.index_select(0, idx.to(train.inputs.device()));
    b.targets = train.targets.index_select(0, idx.to(train.targets.device()));
    return b;
  };
  return {pick(train_idx), pick(val_idx)};
}

Batch take_first(const Batch& b, int64_t n) {
  if (n <= 0 || n >= b.size()) return b;
  return Batch{b.inputs.slice(0, 0, n), b.targets.slice(0, 0, n)};
}

}  // namespace sgmcmc
