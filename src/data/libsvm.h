// Sparse classification data in the LIBSVM text format (a9a, w8a, … as the LIBSVM site and most
// papers' code distribute them), the `libsvm` data format.
//
// File: one example a line, "<label> <index>:<value> <index>:<value> …", indices 1-based and
// increasing, whitespace-separated; a '#' starts a comment; blank lines are skipped. Labels are
// numbers (±1, 0/1, 1..K): the distinct labels of the training file, sorted, become the classes
// 0..K-1 (so −1/+1 and 0/1 both give 0/1). Errors are one line, "<file>:<line>: ...".
//
// Data-block keys (context "data"):
//   path           the training file (required)
//   test_path      the test file (a9a.t beside a9a); without it the rows are split as the csv
//                  format splits them: test_fraction (0.2) held out after a permutation seeded by
//                  split_seed (0)
//   features       the input dimension (0, the default: the largest index of the files, so that a
//                  test file with fewer columns still fits; a9a's 123 needs features: 123 only when
//                  neither file uses the last one)
// data.val_size carves a validation split from the training rows (auto: a sixth). The values are
// used as they are (LIBSVM's files are scaled already; svm-scale does it for one's own).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>

#include "core/option_map.h"
#include "core/option_table.h"
#include "data/dataset.h"

namespace sgmcmc {

// A file read: dense float32 inputs [n, features] and the raw labels as written.
struct LibsvmRows {
  torch::Tensor inputs;        // [n, features] float32 (features: the largest index seen)
  std::vector<double> labels;  // per row
};

// Reads a LIBSVM file; `min_features`: pad the inputs to at least this many columns.
LibsvmRows read_libsvm(const std::string& path, int64_t min_features = 0);

struct LibsvmOptions {
  LibsvmOptions() = default;
  // Throws std::invalid_argument "<where>.<key>: ..." for what can be checked without the files.
  void validate(const std::string& where = "data") const;
  TORCH_ARG(std::string, path);
  TORCH_ARG(std::string, test_path);
  TORCH_ARG(double, test_fraction) = 0.2;  // in (0, 1), without test_path
  TORCH_ARG(int64_t, split_seed) = 0;      // >= 0
  TORCH_ARG(int64_t, features) = 0;        // >= 0; 0: from the files
};

// The keys parse_libsvm_options reads: types, defaults (LibsvmOptions') and meanings (--help-keys).
std::vector<OptionDoc> libsvm_option_docs();

// The libsvm-specific keys of a `data:` block (marks them read), validated.
LibsvmOptions parse_libsvm_options(const OptionMap& options);

// The `libsvm` data format; `val_size` (-1: auto, a sixth) and `seed` carve the validation split.
Dataset load_libsvm_dataset(const LibsvmOptions& options, int64_t val_size, uint64_t seed,
                            const std::string& where = "data");

}  // namespace sgmcmc
