// Data set loading, dispatching on data.format:
//   idx:     MNIST layout in data.dir: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
//            (MNIST, Fashion-MNIST). Inputs float [n, 1, rows, cols] scaled to [0, 1]
//            (data.normalize), targets int64. dims: channels, height, width, features.
//   ratings: MovieLens ratings.dat / u.data / ratings.csv (src/data/ratings.h), k-fold split
//            (src/data/kfold.h: keys path, ratings_format, min_rating, max_rating, folds, fold,
//            split_seed, val_fraction; val_size/dir are ignored). Writes id_map.csv to the run.
//   csv:     a numeric CSV with a header (src/data/csv.h: keys path, target, test_fraction, split,
//            split_seed, val_fraction), standardized on the training split; val_size/dir ignored.
//   tensors: a dict saved by Python's torch.save (src/data/tensors.h: keys path, task).
//   libsvm:  sparse classification rows in LIBSVM's text format, a9a's (src/data/libsvm.h: keys path,
//            test_path, test_fraction, split_seed, features).
// A validation split of data.val_size examples is carved from train with a seed derived from
// `seed`; data.train_limit / data.test_limit truncate (for quick runs). Everything stays on CPU;
// the trainer moves the data set to the training device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/option_table.h"
#include "data/data_config.h"
#include "data/dataset.h"

namespace sgmcmc {

// A data format, the task of the data sets it gives, and its own keys of the `data:` block (besides
// the keys every format takes, read into DataConfig's typed fields by the config): exactly what its
// options parser (parse_csv_options, parse_ratings_options) reads, documented beside that parser
// (type, default, meaning); `keys` is the docs' keys.
struct DataFormat {
  DataFormat(std::string name, Task task, std::vector<OptionDoc> options);
  std::string name;
  Task task;
  std::vector<std::string> keys;
  std::vector<OptionDoc> options;
};
const std::vector<DataFormat>& data_formats();
// The entry for the block's `format` (read with default idx); std::invalid_argument naming
// <context>.format with a suggestion if unknown.
const DataFormat& find_data_format(const OptionMap& data_block);

// The format-specific options of a `data:` block into `config` (config.csv / config.ratings),
// parsed and validated; config.format must be set. The config's value phase.
void parse_data_format_options(DataConfig& config);

// The task of the data sets `config` gives: the format's, or data.task for the tensors format.
Task data_task(const DataConfig& config);

// Throws std::invalid_argument for missing/corrupt files, bad sizes (and bad option values when
// `config` was not built by build_config, i.e. lacks the typed options of its format).
Dataset load_dataset(const DataConfig& config, uint64_t seed);

// The ratings branch on its own (data.train_limit / test_limit are load_dataset's).
Dataset load_ratings_format(const DataConfig& config);

// The csv branch on its own (likewise).
Dataset load_csv_format(const DataConfig& config);

// The idx branch on its own.
Dataset load_idx_dataset(const DataConfig& config, uint64_t seed);

}  // namespace sgmcmc
