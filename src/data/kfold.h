// Seeded k-fold cross-validation splits, and the ratings Dataset built from one fold.
//
// The permutation is a Fisher–Yates shuffle driven by std::mt19937_64(seed) with unbiased bounded
// draws (Lemire's rejection), so a (n, seed) pair gives the same folds on every platform and
// LibTorch version. Fold f (0-based) is the test set: permuted positions [f·n/k, (f+1)·n/k).
// An optional validation set is carved from the training folds: the first
// round(val_fraction · n_train) training indices in permuted order. Every index set is sorted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/ratings.h"

namespace sgmcmc {

struct FoldSplit {
  torch::Tensor train, val, test;  // [n_*] int64 row indices, sorted; val may be empty
};

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);

// Throws std::invalid_argument naming data.folds / data.fold / data.val_fraction when out of range
// (folds >= 2, 0 <= fold < folds, 0 <= val_fraction < 1).
FoldSplit kfold_split(int64_t n, int64_t folds, int64_t fold, uint64_t seed, double val_fraction = 0.0);

// A ratings Dataset (on the CPU): inputs [n, 2] int64 (user, item), targets [n] float32,
// Task::kRegression, clip = true with [target_min, target_max] = the observed rating range of the
// whole file, dims {"users": U, "items": I}.
Dataset make_ratings_dataset(const RatingsData& data, const FoldSplit& split, const std::string& description = "");

// Mean and sample standard deviation (n − 1 in the denominator; 0 when n < 2), for fold aggregates.
struct MeanStd {
  double mean = 0, std = 0;
  int64_t n = 0;
};
MeanStd mean_std(const std::vector<double>& values);

}  // namespace sgmcmc
