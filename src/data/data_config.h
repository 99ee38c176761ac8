// The typed `data:` block of an experiment config: which format, where, and the split sizes. The
// config layer fills it (src/config/experiment_config.h); load_dataset (data/load.h) reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/option_map.h"
#include "data/bow.h"
#include "data/csv.h"
#include "data/kfold.h"
#include "data/libsvm.h"
#include "data/ood.h"
#include "data/tensors.h"

namespace sgmcmc {

struct DataConfig {
  std::string format = "idx";      // idx | ratings | csv | tensors | libsvm | bow
  std::string dir;                 // directory holding the files
  // Validation examples carved from train (seeded); 0 = none; -1 = auto (the default): a sixth of the
  // training file, e.g. 10,000 of Fashion-MNIST's 60,000 (resolved_val_size).
  int64_t val_size = -1;
  int64_t train_limit = 0;         // use only the first N training examples (0 = all)
  int64_t test_limit = 0;          // use only the first N test examples (0 = all)
  bool normalize = true;           // idx: scale pixels to [0, 1]
  OodOptions ood;                  // data.ood, ood_classes, ood_dir (src/data/ood.h)
  // The whole `data:` block (its keys known and read: for the resolved config and messages).
  OptionMap options;
  // The format's own keys, typed and validated by build_config (format csv / ratings). A DataConfig
  // built by hand may leave them unset: load_dataset then parses them from `options`.
  std::optional<CsvOptions> csv;
  std::optional<RatingsOptions> ratings;
  std::optional<TensorsOptions> tensors;
  std::optional<LibsvmOptions> libsvm;
  std::optional<BowOptions> bow;
};

// data.val_size for a training file of `n` examples: the configured size, or a sixth of n under auto.
inline int64_t resolved_val_size(int64_t configured, int64_t n) { return configured >= 0 ? configured : n / 6; }

}  // namespace sgmcmc
