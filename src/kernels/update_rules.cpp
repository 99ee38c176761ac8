#include "kernels/update_rules.h"

#include <cmath>

namespace sgmcmc::rules {

void sgld_update(torch::Tensor& theta, const torch::Tensor& grad, const torch::Tensor& noise,
                 double lr, double temperature) {
  theta.add_(grad, -lr);
  if (temperature > 0) theta.add_(noise, std::sqrt(2.0 * lr * temperature));
}

}  // namespace sgmcmc::rules
