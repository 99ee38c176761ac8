// Training inputs kept as bytes for the minibatch gather: a float32 tensor whose every value is the
// widening of a byte k ∈ [0, 255] by a scale s (image pixels as data/load.cpp makes them: s = 255
// with data.normalize, s = 1 raw) is also held as uint8, and the step's gather reads those bytes
// and widens them in the same pass (kernels::gather_widen_rows_out). The batch is bit for bit
// x.index_select(0, idx): of() accepts x only when every value equals what the gather gives for its
// byte, so features of any other kind (standardized, CSV) keep the float gather.
//
// Why: the App. H.1 step gathers 500 random rows of 3 KB out of 157 MB of float32 images; from bytes
// it reads 784 B per row out of 39 MB (2-vCPU EPYC, a 4 MB working set between gathers, 2 threads:
// 42 → 18 µs per gather; docs/performance.md).
#pragma once

#include <optional>

#include <torch/torch.h>

namespace sgmcmc {

class ByteRows {
 public:
  // The byte form of `x` (float32, CPU, [n, ...]) or nullopt (other dtypes or devices, empty, or a
  // value that is not the widening of a byte for s = 255 nor for s = 1).
  // A tensor that widen() made and that nobody has written since is taken without that check.
  static std::optional<ByteRows> of(const torch::Tensor& x);

  // `bytes` (uint8, CPU, contiguous, [n, ...]) widened to float32 as the gather widens them
  // (x = bytes / scale, the IEEE quotient). x is remembered with its bytes: of(x) takes them for as
  // long as x lives unwritten (its version counter), instead of checking 4 bytes per value again
  // (Fashion-MNIST's train images: ~0.1 s of a run's start on the 2-vCPU host).
  static torch::Tensor widen(const torch::Tensor& bytes, float scale);

  // out = x.index_select(0, idx) (bit for bit), into `out` reused across calls.
  void gather_out(torch::Tensor& out, const torch::Tensor& idx) const;

  float scale() const { return scale_; }
  const torch::Tensor& bytes() const { return bytes_; }

 private:
  ByteRows(torch::Tensor bytes, float scale) : bytes_(std::move(bytes)), scale_(scale) {}

  torch::Tensor bytes_;  // uint8, x's shape
  float scale_;
};

// False with kernels.byte_rows: false (the float gather everywhere, for A/B measurements).
bool byte_rows_enabled();

}  // namespace sgmcmc
