// Class labels against the class count. The count is the training labels' maximum + 1; labels must
// be integers in [0, count), and the training labels must look like 0..K-1 (at least half of the
// classes 0..max present), so that a stray label of 200 among 0..9 is an error naming the file,
// not a silent 201-class model. A test (or validation) label beyond the training labels' range is an
// error naming its file.
#pragma once

#include <cstdint>
#include <string>

#include <torch/torch.h>

namespace sgmcmc {

constexpr int64_t kMaxClasses = 100000;

// The class count from the training labels (std::invalid_argument naming `train_file`).
int64_t class_count(const torch::Tensor& train_labels, const std::string& train_file);
// Labels of another split against `classes` (std::invalid_argument naming `file`).
void check_labels(const torch::Tensor& labels, int64_t classes, const std::string& file);

}  // namespace sgmcmc
