#include "data/dataset.h"

namespace sgmcmc {

static Batch batch_to(const Batch& b, const torch::Device& device) {
  Batch out;
  if (b.inputs.defined()) out.inputs = b.inputs.to(device);
  if (b.targets.defined()) out.targets = b.targets.to(device);
  return out;
}

Dataset Dataset::to(const torch::Device& device) const {
  Dataset d = *this;
  d.train = batch_to(train, device);
  d.val = batch_to(val, device);
  d.test = batch_to(test, device);
  d.ood = batch_to(ood, device);
  return d;
}

}  // namespace sgmcmc
