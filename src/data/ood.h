// Out-of-distribution sets for classification data (data.ood), scored against the test split by
// the predictive's entropy and mutual information (metrics/predictive_metrics.h, ood_metrics):
//   none     (default)
//   classes  data.ood_classes (e.g. [5, 6, 7, 8, 9]) are held out: their examples leave train,
//            validation and test; the OOD set is the test examples of those classes; the remaining
//            labels are renumbered 0..K'-1 in order
//   noise    the test inputs plus Gaussian noise of the training inputs' standard deviation (seeded)
//   invert   the test inputs mirrored in the training inputs' range: lo + hi − x
//   rotate   the test inputs rotated by 90° (inputs [n, ..., h, w] with h = w)
//   idx      the t10k images of another IDX directory, data.ood_dir (e.g. MNIST beside Fashion-MNIST)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace sgmcmc {

struct OodOptions {
  std::string kind = "none";      // none | classes | noise | invert | rotate | idx
  std::vector<int64_t> classes;   // classes
  std::string dir;                // idx
  bool normalize = true;          // idx: scale pixels to [0, 1] as the data set's own images
};

const std::vector<std::string>& ood_kinds();

// Builds ds.ood (and, for `classes`, removes and renumbers the held-out classes); std::invalid_argument
// naming <where>.ood... on a regression data set, an unknown class, shapes that do not match.
void apply_ood(Dataset& ds, const OodOptions& options, uint64_t seed, const std::string& where = "data");

}  // namespace sgmcmc
