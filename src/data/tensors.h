// Tensors saved from Python, the `tensors` data format:
//   torch.save({"x_train": X, "y_train": y, "x_test": Xt, "y_test": yt[, "x_val": Xv, "y_val": yv]}, path)
// read with torch::pickle_load (no Python at run time).
//
// Data-block keys (context "data"):
//   path   the file (required)
//   task   classification (default) | regression
// x_*: floating tensors [n, ...] (converted to float32; the model receives them as they are,
//      e.g. [n, 1, 28, 28] images or [n, d] features); every split has the same trailing shape.
// y_*: classification: integer class labels [n] (int64; classes = max label + 1);
//      regression: floating targets [n] or [n, 1] (float32 [n]; not standardized).
// Without x_val/y_val, data.val_size examples are carved from the training split (seeded);
// data.train_limit / data.test_limit truncate. Every check is a one-line std::invalid_argument
// naming the file and the key: a missing key, a wrong dtype or rank, lengths of x and y that
// differ, non-finite values, a negative label.
// dims: features (product of the trailing shape), and channels/height/width for [n, c, h, w] inputs.
#pragma once

#include <string>

#include "core/option_map.h"
#include "core/option_table.h"
#include "data/dataset.h"

namespace sgmcmc {

struct TensorsOptions {
  std::string path;
  Task task = Task::kClassification;
};

// The tensors-specific keys of a `data:` block (path, task), validated.
// The keys parse_tensors_options reads: types, defaults and meanings (--help-keys).
std::vector<OptionDoc> tensors_option_docs();
TensorsOptions parse_tensors_options(const OptionMap& options);

// Loads the file; `val_size` and `seed` carve a validation split when the file has none.
Dataset load_tensors_dataset(const TensorsOptions& options, int64_t val_size, uint64_t seed,
                             const std::string& where = "data");

// A dict of tensors saved by Python's torch.save, read with torch::pickle_load; std::invalid_argument
// "<path>: ..." when the file is missing or is not such a dict.
std::map<std::string, torch::Tensor> read_tensor_dict(const std::string& path);
// The object a torch.save / torch::pickle_save file holds (std::invalid_argument naming `path` when the file
// cannot be opened or read).
c10::IValue read_pickle_file(const std::string& path);

// One split of such a dict, `x_key` and `y_key`, with the checks above; without `y_key` in the dict
// the targets stay undefined unless `targets_required`.
Batch read_tensor_split(const std::map<std::string, torch::Tensor>& dict, const std::string& path,
                        const std::string& x_key, const std::string& y_key, Task task, bool targets_required = true);

// Writes `value` with torch::pickle_save (the format Python's torch.load reads), atomically.
void write_pickle_file(const std::string& path, const c10::IValue& value);

}  // namespace sgmcmc
