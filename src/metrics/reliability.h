// The reliability diagram of a classifier's predictive as a self-contained SVG (no plotting library
// needed): per equal-width confidence bin, the accuracy (bars) against the diagonal of perfect
// calibration, the gap to it, and below, the share of examples in each bin (the confidence histogram).
// scripts/plot.py draws the same from predictive.pt with matplotlib; this one is what every run
// writes (RUN/reliability.svg), so the main job can point at it.
#pragma once

#include <torch/torch.h>

#include <string>

#include "metrics/predictive_metrics.h"

namespace sgmcmc {

// SVG text for `bins` (from calibration_bins); `title` is printed above, with the ECE.
std::string reliability_svg(const CalibrationBins& bins, const std::string& title);

// calibration_bins(probs [n, K], targets [n]) drawn to `path`. Throws std::runtime_error naming the
// path when it cannot be written.
void write_reliability_svg(const std::string& path, const torch::Tensor& probs, const torch::Tensor& targets,
                           const std::string& title);

}  // namespace sgmcmc
