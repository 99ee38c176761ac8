// A model's parameters and buffers in a torch archive (checkpoints, samples/, final.pt).
#pragma once

#include <string>

#include <torch/torch.h>

#include "models/model.h"

namespace sgmcmc {

void save_model(torch::serialize::OutputArchive& ar, Model& model, const std::string& prefix);
// Copies every parameter (required, same shape; std::invalid_argument naming `file` otherwise) and
// every buffer present into `model`.
void load_model(torch::serialize::InputArchive& ar, Model& model, const std::string& prefix, const std::string& file);

}  // namespace sgmcmc
