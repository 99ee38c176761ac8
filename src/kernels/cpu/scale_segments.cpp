#include "kernels/cpu/scale_segments.h"

#include <ATen/record_function.h>

#include <ATen/Parallel.h>

#include <algorithm>

namespace sgmcmc::kernels {

namespace {

void scale(float* __restrict dst, const float* __restrict src, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * s;
}

}  // namespace

void scale_segments(const std::vector<ScaleSegment>& segments) {
  RECORD_FUNCTION("sgmcmc::prior_seed", std::vector<c10::IValue>());
  std::vector<int64_t> start(segments.size() + 1, 0);  // the segments laid end to end
  for (size_t k = 0; k < segments.size(); ++k) start[k + 1] = start[k] + segments[k].n;
  // [b, e) of the concatenation: the parts of the segments it overlaps
  const auto run = [&](int64_t b, int64_t e) {
    size_t k = std::upper_bound(start.begin(), start.end(), b) - start.begin() - 1;
    for (; k < segments.size() && start[k] < e; ++k) {
      const int64_t lo = std::max(b, start[k]) - start[k], hi = std::min(e, start[k + 1]) - start[k];
      const auto& s = segments[k];
      if (hi > lo) scale(s.dst + lo, s.src + lo, hi - lo, s.scale);
    }
  };
  // elements per task; a small model's one task runs on the calling thread (no parallel region)
  constexpr int64_t kGrain = 32768;
  at::parallel_for(0, start.back(), kGrain, run);
}

}  // namespace sgmcmc::kernels
