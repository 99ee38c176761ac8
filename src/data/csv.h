// CSV regression data (e.g. UCI Boston housing), the `csv` data format.
//
// File: a header row of column names (optionally double-quoted), then one row of numeric fields per
// example, separated by commas; blank lines are skipped. Errors are one-line
// std::invalid_argument "<file>:<line>: ..." (non-numeric field, wrong number of fields).
//
// Data-block keys (context "data"):
//   path           the CSV file (required)
//   target         name of the target column (default: the last column)
//   test_fraction  fraction of rows held out as the test set (default 0.1)
//   split          split index k >= 0 (default 0): the rows are permuted by
//                  seeded_permutation(n, split_seed + k) (src/data/kfold.h); the first
//                  round(test_fraction · n) permuted rows are the test set
//   split_seed     (default 0)
//   val_fraction   fraction of the remaining training rows carved off (in permuted order) as a
//                  validation set (default 0)
// Features and target are standardized with the mean and (population) std of the training split;
// the Dataset carries target_mean / target_scale so that the trainer reports RMSE and test
// log-likelihood in the original units. data.val_size / data.dir are ignored by this format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>

#include "core/option_map.h"
#include "core/option_table.h"
#include "data/dataset.h"

namespace sgmcmc {

struct CsvTable {
  std::vector<std::string> columns;
  torch::Tensor values;  // [rows, columns] float64
};

// Reads a numeric CSV file with a header row.
CsvTable read_csv(const std::string& path);

// The keys above, typed; validate() checks what can be checked without the file.
struct CsvOptions {
  CsvOptions() = default;
  // Throws std::invalid_argument "<where>.<key>: ..." (path missing, fractions out of range, ...).
  void validate(const std::string& where = "data") const;
  TORCH_ARG(std::string, path);
  TORCH_ARG(std::string, target);             // "" = the last column
  TORCH_ARG(double, test_fraction) = 0.1;     // in (0, 1)
  TORCH_ARG(int64_t, split) = 0;              // >= 0
  TORCH_ARG(int64_t, split_seed) = 0;         // >= 0
  TORCH_ARG(double, val_fraction) = 0.0;      // in [0, 1)
};

// The csv-specific keys of a `data:` block (marks them read; the other keys are the config's),
// validated with the block's context in messages.
// The keys parse_csv_options reads: types, defaults (CsvOptions') and meanings, for --help-keys.
std::vector<OptionDoc> csv_option_docs();

CsvOptions parse_csv_options(const OptionMap& options);

// The `csv` data format; `where` names the block in messages ("data", "configs/x.yaml: data").
Dataset load_csv_dataset(const CsvOptions& options, const std::string& where = "data");
// parse_csv_options, then the above.
Dataset load_csv_dataset(const OptionMap& options);

}  // namespace sgmcmc
