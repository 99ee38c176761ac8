#include "data/load.h"

#include <filesystem>
#include <future>
#include <stdexcept>

#include "data/bow.h"
#include "data/byte_rows.h"
#include "data/csv.h"
#include "data/idx.h"
#include "data/kfold.h"
#include "data/labels.h"
#include "data/ood.h"
#include "data/ratings.h"
#include "data/splits.h"
#include "data/tensors.h"

namespace sgmcmc {
namespace {

std::string where_of(const DataConfig& config) {
  return config.options.context().empty() ? "data" : config.options.context();
}

}  // namespace

DataFormat::DataFormat(std::string name_, Task task_, std::vector<OptionDoc> options_)
    : name(std::move(name_)), task(task_), options(std::move(options_)) {
  keys = doc_keys(options);
}

const std::vector<DataFormat>& data_formats() {
  // Each format's own keys, documented beside its parser (csv.cpp, kfold.cpp, tensors.cpp, libsvm.cpp).
  static const std::vector<DataFormat> formats = {
      {"idx", Task::kClassification, {}},
      {"ratings", Task::kRegression, ratings_option_docs()},
      {"csv", Task::kRegression, csv_option_docs()},
      {"tensors", Task::kClassification, tensors_option_docs()},
      {"libsvm", Task::kClassification, libsvm_option_docs()},
      {"bow", Task::kClassification, bow_option_docs()},
  };
  return formats;
}

const DataFormat& find_data_format(const OptionMap& data_block) {
  std::vector<std::string> names;
  for (const auto& f : data_formats()) names.push_back(f.name);
  const std::string format = data_block.get_choice("format", "idx", names);
  for (const auto& f : data_formats())
    if (f.name == format) return f;
  throw std::logic_error("find_data_format: " + format);  // unreachable: get_choice checked it
}

void parse_data_format_options(DataConfig& config) {
  if (config.format == "csv") config.csv = parse_csv_options(config.options);
  if (config.format == "ratings") config.ratings = parse_ratings_options(config.options);
  if (config.format == "tensors") config.tensors = parse_tensors_options(config.options);
  if (config.format == "libsvm") config.libsvm = parse_libsvm_options(config.options);
  if (config.format == "bow") config.bow = parse_bow_options(config.options);
}

Task data_task(const DataConfig& config) {
  if (config.format == "tensors")
    return (config.tensors ? *config.tensors : parse_tensors_options(config.options)).task;
  for (const auto& f : data_formats())
    if (f.name == config.format) return f.task;
  return Task::kClassification;
}

Dataset load_idx_dataset(const DataConfig& config, uint64_t seed) {
  const std::string& dir = config.dir;
  const std::string where = where_of(config);
  if (!std::filesystem::is_directory(dir))
    throw std::invalid_argument(where + ".dir: '" + dir + "' is not a directory");
  const std::string train_labels = find_idx_file(dir, "train-labels-idx1-ubyte");
  const std::string test_labels = find_idx_file(dir, "t10k-labels-idx1-ubyte");
  // The test files inflate on a second thread while this one inflates the train files (a train
  // file's error still comes first: get() rethrows the test files' after it).
  auto test_read = std::async(std::launch::async, [&] {
    return read_idx_images(find_idx_file(dir, "t10k-images-idx3-ubyte"), test_labels);
  });
  IdxImages train;
  try {
    train = read_idx_images(find_idx_file(dir, "train-images-idx3-ubyte"), train_labels);
  } catch (...) {
    test_read.wait();
    throw;
  }
  auto test = test_read.get();
  if (train.images.size(1) != test.images.size(1) || train.images.size(2) != test.images.size(2))
    throw std::invalid_argument(dir + ": train images are " + std::to_string(train.images.size(1)) + "x" +
                                std::to_string(train.images.size(2)) + " but test images are " +
                                std::to_string(test.images.size(1)) + "x" + std::to_string(test.images.size(2)));
  // Split and cut the bytes, then widen each split once: the train split's floats come with their
  // bytes for the minibatch gather (data/byte_rows.h).
  const float scale = config.normalize ? 255.0f : 1.0f;
  auto widened = [&](Batch b) {
    b.inputs = ByteRows::widen(b.inputs, scale);
    return b;
  };
  Dataset ds;
  ds.task = Task::kClassification;
  Batch full_train = take_first(Batch{train.images.unsqueeze(1), train.labels}, config.train_limit);
  auto [tr, val] = split_validation(full_train, resolved_val_size(config.val_size, full_train.size()), seed,
                                    where + ".val_size");
  ds.train = widened(tr);
  if (val.size() > 0) ds.val = widened(val);
  ds.test = widened(take_first(Batch{test.images.unsqueeze(1), test.labels}, config.test_limit));
  ds.num_classes = class_count(train.labels, train_labels);  // the training labels decide (data/labels.h)
  check_labels(test.labels, ds.num_classes, test_labels);
  const int64_t h = train.images.size(1), w = train.images.size(2);
  ds.dims = {{"channels", 1}, {"height", h}, {"width", w}, {"features", h * w}, {"classes", ds.num_classes}};
  ds.description = std::filesystem::path(dir).filename().string() + " (idx): " + std::to_string(ds.train.size()) +
                   " train / " + std::to_string(ds.val.size()) + " val / " + std::to_string(ds.test.size()) +
                   " test, " + std::to_string(h) + "x" + std::to_string(w) + ", " + std::to_string(ds.num_classes) +
                   " classes";
  return ds;
}

Dataset load_ratings_format(const DataConfig& config) {
  // The ratings format splits by k-fold (data.folds, data.fold, data.val_fraction); data.val_size and
  // data.dir are ignored (a resolved config.yaml carries their defaults, so they cannot be rejected).
  RatingsData raw;
  const RatingsOptions opts = config.ratings ? *config.ratings : parse_ratings_options(config.options);
  Dataset ds = load_ratings_dataset(opts, &raw, where_of(config));
  ds.run_files["id_map.csv"] = id_map_csv(raw);
  return ds;
}

Dataset load_csv_format(const DataConfig& config) {
  // Splits by data.test_fraction / data.split / data.val_fraction (src/data/csv.h); data.val_size
  // and data.dir are ignored like in the ratings format.
  return load_csv_dataset(config.csv ? *config.csv : parse_csv_options(config.options), where_of(config));
}

// The formats whose loader leaves data.train_limit / data.test_limit to the caller (idx cuts its own, before
// its validation split): the first N of each split after loading.
static Dataset load_split_format(const DataConfig& config, uint64_t seed) {
  const std::string where = where_of(config);
  if (config.format == "ratings") return load_ratings_format(config);
  if (config.format == "csv") return load_csv_format(config);
  if (config.format == "tensors")  // val_size -1: a sixth
    return load_tensors_dataset(config.tensors ? *config.tensors : parse_tensors_options(config.options),
                                config.val_size, seed, where);
  if (config.format == "libsvm")
    return load_libsvm_dataset(config.libsvm ? *config.libsvm : parse_libsvm_options(config.options),
                               config.val_size, seed, where);
  if (config.format == "bow")
    return load_bow_dataset(config.bow ? *config.bow : parse_bow_options(config.options), config.val_size, seed, where);
  throw std::invalid_argument(where + ".format: '" + config.format +
                              "' is not available in this build yet (have: idx, ratings, csv, tensors, libsvm, bow)");
}

static Dataset load_format(const DataConfig& config, uint64_t seed) {
  if (config.format == "idx") return load_idx_dataset(config, seed);
  Dataset ds = load_split_format(config, seed);
  ds.train = take_first(ds.train, config.train_limit);
  ds.test = take_first(ds.test, config.test_limit);
  return ds;
}

Dataset load_dataset(const DataConfig& config, uint64_t seed) {
  Dataset ds = load_format(config, seed);
  apply_ood(ds, config.ood, seed, where_of(config));
  return ds;
}

}  // namespace sgmcmc
