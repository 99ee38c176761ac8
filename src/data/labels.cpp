#include "data/labels.h"

#include <stdexcept>

namespace sgmcmc {

int64_t class_count(const torch::Tensor& train_labels, const std::string& train_file) {
  if (train_labels.numel() == 0) throw std::invalid_argument(train_file + ": no training labels");
  const torch::Tensor y = train_labels.cpu().to(torch::kInt64);
  const int64_t lo = y.min().item<int64_t>(), hi = y.max().item<int64_t>();
  if (lo < 0) throw std::invalid_argument(train_file + ": label " + std::to_string(lo) + " is negative (labels are 0..K-1)");
  if (hi >= kMaxClasses)
    throw std::invalid_argument(train_file + ": label " + std::to_string(hi) + " is not a class index (labels are 0..K-1, K <= " +
                                std::to_string(kMaxClasses) + ")");
  const int64_t classes = hi + 1;
  const int64_t present = (torch::bincount(y, {}, classes) > 0).sum().item<int64_t>();
  if (classes > 2 && 2 * present < classes)
    throw std::invalid_argument(train_file + ": label " + std::to_string(hi) + " would make " + std::to_string(classes) +
                                " classes, of which only " + std::to_string(present) +
                                " occur in the training labels (labels are 0..K-1)");
  return classes;
}

void check_labels(const torch::Tensor& labels, int64_t classes, const std::string& file) {
  if (labels.numel() == 0) return;
  const torch::Tensor y = labels.cpu().to(torch::kInt64);
  const int64_t lo = y.min().item<int64_t>(), hi = y.max().item<int64_t>();
  if (lo < 0) throw std::invalid_argument(file + ": label " + std::to_string(lo) + " is negative (labels are 0..K-1)");
  if (hi >= classes)
    throw std::invalid_argument(file + ": label " + std::to_string(hi) + " is outside the training labels' classes 0.." +
                                std::to_string(classes - 1));
}

}  // namespace sgmcmc
