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

#include <torch/arg.h>

#include "core/option_map.h"
#include "core/option_table.h"
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

// The `ratings` data format from the keys of a `data:` block (context "data"):
//   path            the ratings file (required)
//   ratings_format  auto | dat | tsv | csv (default auto: by file name, then content)
//   min_rating, max_rating   valid rating range (default 0, 5); outside it a line is an error
//   folds, fold     k-fold cross-validation: `fold` (0-based) of `folds` (default 5, 0) is the test set
//   split_seed      seed of the fold permutation (default 0; independent of the run's seed, so the
//                   folds are the same for every run of a comparison)
//   val_fraction    fraction of the training folds held out as validation (default 0)
// Marks those keys used (unknown keys are the caller's). `ratings`, if given, receives the parsed
// file (id maps included). On the CPU.
Dataset load_ratings_dataset(const OptionMap& data_block, RatingsData* ratings = nullptr);

// The keys above, typed; validate() checks what can be checked without the file (the number of
// rows against `folds` is checked by kfold_split).
struct RatingsOptions {
  RatingsOptions() = default;
  // Throws std::invalid_argument "<where>.<key>: ..." (path missing, min_rating >= max_rating,
  // folds < 2, fold outside [0, folds), val_fraction outside [0, 1)).
  void validate(const std::string& where = "data") const;
  TORCH_ARG(std::string, path);
  TORCH_ARG(RatingsReadOptions, read);   // ratings_format, min_rating, max_rating
  TORCH_ARG(int64_t, folds) = 5;
  TORCH_ARG(int64_t, fold) = 0;
  TORCH_ARG(int64_t, split_seed) = 0;
  TORCH_ARG(double, val_fraction) = 0.0;
};

// The ratings-specific keys of a `data:` block (marks them read), validated with the block's
// context in messages.
// The keys parse_ratings_options reads: types, defaults (RatingsOptions') and meanings (--help-keys).
std::vector<OptionDoc> ratings_option_docs();

RatingsOptions parse_ratings_options(const OptionMap& data_block);

// The `ratings` data format from typed options; `where` names the block in messages.
Dataset load_ratings_dataset(const RatingsOptions& options, RatingsData* ratings = nullptr,
                             const std::string& where = "data");

// Mean and sample standard deviation (n − 1 in the denominator; 0 when n < 2), for fold aggregates.
struct MeanStd {
  double mean = 0, std = 0;
  int64_t n = 0;
};
MeanStd mean_std(const std::vector<double>& values);

}  // namespace sgmcmc
