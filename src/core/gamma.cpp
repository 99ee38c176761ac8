#include "core/gamma.h"

#include <stdexcept>

namespace sgmcmc {

torch::Tensor sample_gamma(const torch::Tensor& shape, const torch::Tensor& rate, at::Generator& gen) {
  // checked where the inputs are (the Gibbs step's are on the host: no device sync), then moved
  if (!(shape > 0).all().item<bool>()) throw std::invalid_argument("sample_gamma: every shape must be > 0");
  if (!(rate > 0).all().item<bool>()) throw std::invalid_argument("sample_gamma: every rate must be > 0");
  auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(gen.device());
  auto a = shape.to(opts);
  auto r = rate.to(opts);
  return at::_standard_gamma(a, gen) / r;
}

}  // namespace sgmcmc
