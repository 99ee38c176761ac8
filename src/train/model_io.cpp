#include "train/model_io.h"

#include <stdexcept>

namespace sgmcmc {

void save_model(torch::serialize::OutputArchive& ar, Model& model, const std::string& prefix) {
  for (const auto& item : model.named_parameters()) ar.write(prefix + item.key(), item.value().detach());
  for (const auto& item : model.named_buffers()) ar.write(prefix + item.key(), item.value(), /*is_buffer=*/true);
}

void load_model(torch::serialize::InputArchive& ar, Model& model, const std::string& prefix, const std::string& file) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    torch::Tensor t;
    if (!ar.try_read(prefix + item.key(), t)) throw std::invalid_argument(file + ": missing parameter " + item.key());
    if (t.sizes() != item.value().sizes())
      throw std::invalid_argument(file + ": parameter " + item.key() + " has the wrong shape");
    item.value().copy_(t);
  }
  for (auto& item : model.named_buffers()) {
    torch::Tensor t;
    if (ar.try_read(prefix + item.key(), t, /*is_buffer=*/true)) item.value().copy_(t);
  }
}

}  // namespace sgmcmc
