// Seeded train/validation split.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/batch.h"

namespace sgmcmc {

// Carves `val_size` examples (a seeded random subset) out of `train`; returns {train', val}.
// Both keep the original relative order. Throws (naming `where`) if val_size >= train size.
std::pair<Batch, Batch> split_validation(const Batch& train, int64_t val_size, uint64_t seed,
                                         const std::string& where = "data.val_size");

// The first `n` examples (n <= 0 or n >= size: all of them).
Batch take_first(const Batch& b, int64_t n);

}  // namespace sgmcmc
