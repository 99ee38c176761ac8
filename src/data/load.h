// Data set loading, dispatching on data.format:
//   idx:     MNIST layout in data.dir: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
//            (MNIST, Fashion-MNIST). Inputs float [n, 1, rows, cols] scaled to [0, 1]
//            (data.normalize), targets int64. dims: channels, height, width, features.
//   ratings: MovieLens ratings.dat / u.data / ratings.csv (src/data/ratings.h), k-fold split
//            (src/data/kfold.h: keys path, ratings_format, min_rating, max_rating, folds, fold,
//            split_seed, val_fraction; val_size/dir are ignored). Writes id_map.csv to the run.
//   csv:     a numeric CSV with a header (src/data/csv.h: keys path, target, test_fraction, split,
//            split_seed, val_fraction), standardized on the training split; val_size/dir ignored.
// A validation split of data.val_size examples is carved from train with a seed derived from
// `seed`; data.train_limit / data.test_limit truncate (for quick runs). Everything stays on CPU;
// the trainer moves the data set to the training device.
#pragma once

#include <cstdint>

#include "config/experiment_config.h"
#include "data/dataset.h"

namespace sgmcmc {

// Throws std::invalid_argument for unknown data-block keys, missing/corrupt files, bad sizes.
Dataset load_dataset(const DataConfig& config, uint64_t seed);

// The ratings branch on its own.
Dataset load_ratings_format(const DataConfig& config);

// The csv branch on its own.
Dataset load_csv_format(const DataConfig& config);

// The idx branch on its own.
Dataset load_idx_dataset(const DataConfig& config, uint64_t seed);

}  // namespace sgmcmc
