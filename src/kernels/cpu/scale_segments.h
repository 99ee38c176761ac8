// dst = scale · src over a list of float32 segments, in one parallel region: the prior's gradient
// λ_g θ written into every parameter's .grad (GaussianPrior::seed_grad) with one loop instead of an
// ATen op, and its parallel region, per tensor. The product is the float multiply at::mul_out does
// with a float32 scalar tensor, so the bits are the same.
#pragma once

#include <cstdint>
#include <vector>

namespace sgmcmc::kernels {

struct ScaleSegment {
  float* dst;
  const float* src;
  int64_t n;
  float scale;
};

void scale_segments(const std::vector<ScaleSegment>& segments);

}  // namespace sgmcmc::kernels
