// Training inputs gathered from a quarter of the memory: the rows of a float32 tensor whose every
// value is k / s for an integer k in [0, 255] (image pixels as loaded: s = 255 when data.normalize,
// s = 1 when raw) kept as uint8, and widened after the gather by the very operations that made the
// float values (float(k), then ÷ s in float32), in one pass on the CPU (ATen's index_select, to and
// div_ on CUDA). A gathered batch is bit-for-bit what index_select on the float tensor gives: of()
// gathers every row that way once and declines unless the bits are equal.
//
// Why: the minibatch gather reads B random rows of the training set (App. H.1: 500 rows of 3 KB
// out of 157 MB of float32 images), a cache-missing, memory-bound op that took 8 % of the CPU step
// (docs/performance.md); from uint8 it reads 4x fewer bytes out of 39 MB.
#pragma once

#include <optional>

#include <torch/torch.h>

namespace sgmcmc {

class ByteRows {
 public:
  // The uint8 form of `x` (float32, any shape [n, ...]) when every value of it is k / s as above
  // for s = 255 or s = 1; nullopt otherwise (other dtypes, standardized features, non-integer k).
  static std::optional<ByteRows> of(const torch::Tensor& x);

  // Rows `idx` of the original float tensor: x.index_select(0, idx), bit for bit.
  torch::Tensor index_select(const torch::Tensor& idx) const;
  double scale() const { return scale_; }

 private:
  ByteRows(torch::Tensor bytes, double scale) : bytes_(std::move(bytes)), scale_(scale) {}
  torch::Tensor widen_rows(const torch::Tensor& idx) const;  // rows idx, gathered and widened

  torch::Tensor bytes_;  // uint8, x's shape and device
  double scale_;
};

}  // namespace sgmcmc
