// Models by name (model.name in the config): mlp | cnn | bpmf (added by the BPMF work).
//   mlp:  hidden (list, default [100]), activation (sigmoid | relu | tanh, default sigmoid),
//         likelihood (categorical | gaussian; default categorical for classification data sets,
//         gaussian for regression), noise_precision (1), noise_prior (fixed | gamma), noise_alpha,
//         noise_beta (1, 1)
//   cnn:  conv1 (20), conv2 (50), fc (500)
//   bpmf: dim (20), init_std (0.1), tau (2), sample_tau (false), tau_alpha (1), tau_beta (1)
//         (models/bpmf.h; users/items from dims, μ = training mean)
// Input/output sizes come from the data set (dims "features"/"channels"/"height"/"width", num_classes).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/option_map.h"
#include "data/dataset.h"
#include "models/model.h"

namespace sgmcmc {

using ModelPtr = std::shared_ptr<Model>;

// Builds the model on CPU, initialised from a generator seeded with `seed`; rejects unknown keys.
// chains > 0: C parallel chains in one batched model (MlpChains; mlp only; chains = 1 is the batched
// implementation with one chain, equal to the plain model).
ModelPtr make_model(const OptionMap& options, const Dataset& data, uint64_t seed = 0, int64_t chains = 0);

// Names and one-line summaries, for `sgmcmc list`.
std::vector<std::pair<std::string, std::string>> model_names();

}  // namespace sgmcmc
