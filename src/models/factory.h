// Models by name (model.name in the config): mlp | cnn | bpmf (added by the BPMF work).
//   mlp:  hidden (list, default [100]), activation (sigmoid | relu | tanh, default sigmoid),
//         likelihood (categorical | gaussian; default categorical for classification data sets,
//         gaussian for regression), noise_precision (1), noise_prior (fixed | gamma), noise_alpha,
//         noise_beta (1, 1)
//   cnn:  conv1 (20), conv2 (50), fc (500)
//   bpmf: dim (20), init_std (0.1), tau (2), sample_tau (false), tau_alpha (1), tau_beta (1)
//         (models/bpmf.h; users/items from dims, μ = training mean)
//   logistic: no keys (binary for two classes, multinomial beyond; models/logistic.h)
//   torchscript: path (required), likelihood, noise_precision, noise_prior, noise_alpha, noise_beta
//         as for mlp (models/torchscript_model.h: a user's TorchScript module; its forward is
//         checked on two training examples when the model is built)
// Input/output sizes come from the data set (dims "features"/"channels"/"height"/"width", num_classes).
//
// The keys of each model are declared once, in model_registry() (models/factory.cpp), next to
// parse_model_options, which reads exactly those keys; the config checks a `model:` block's keys
// against them before reading any value.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/option_map.h"
#include "core/option_table.h"
#include "data/dataset.h"
#include "models/bpmf.h"
#include "models/cnn.h"
#include "models/dpfa.h"
#include "models/lda.h"
#include "models/logistic.h"
#include "models/mlp.h"
#include "models/torchscript_model.h"
#include "models/model.h"

namespace sgmcmc {

using ModelPtr = std::shared_ptr<Model>;

// The typed `model:` block. The sizes that come from the data set (mlp inputs/outputs, cnn
// channels/height/width/classes, bpmf users/items/mean) are filled in by make_model.
struct ModelOptions {
  std::string name = "mlp";
  MlpOptions mlp;
  CnnOptions cnn;
  BpmfOptions bpmf;
  TorchScriptOptions torchscript;
  LdaOptions lda;
  DpfaOptions dpfa;
  // Throws std::invalid_argument "<where>.<key>: ..." for a value out of range (the chosen model's
  // keys only).
  void validate(const std::string& where = "model") const;
};

// A model name, its `sgmcmc list` line and the keys of its `model:` block (`name` included), each
// documented (type, default, meaning) beside the parser that reads it; `keys` is the docs' keys.
struct ModelEntry {
  ModelEntry(std::string name, std::string summary, std::vector<OptionDoc> options);
  std::string name;
  std::string summary;
  std::vector<std::string> keys;
  std::vector<OptionDoc> options;  // without `name`
};
const std::vector<ModelEntry>& model_registry();

// The entry for `model.name` (read with default mlp); std::invalid_argument naming
// <context>.name with a suggestion if unknown.
const ModelEntry& find_model(const OptionMap& options);

// Reads model.name and that model's keys (no other), then validates. `task` is the data set's
// task, which gives the likelihood's default (categorical for classification, gaussian for
// regression); the config knows it from data.format.
ModelOptions parse_model_options(const OptionMap& options, Task task);

// The likelihood against the data set's task: "<where>.likelihood: categorical needs a
// classification data set" and the like.
void check_model_task(const ModelOptions& options, Task task, const std::string& where = "model");

// Builds the model on CPU, initialised from a generator seeded with `seed`.
// chains > 0: C parallel chains in one model: MlpChains (batched; chains = 1 is the batched
// implementation with one chain, equal to the plain model) or TorchScriptChains (the module run once
// per chain on stacked parameters); other models refuse.
ModelPtr make_model(const ModelOptions& options, const Dataset& data, uint64_t seed = 0, int64_t chains = 0,
                    const std::string& where = "model");
// The same from the `model:` block: rejects unknown keys, parse_model_options(options, data.task),
// then builds (marks every key of the model read, for the resolved config).
ModelPtr make_model(const OptionMap& options, const Dataset& data, uint64_t seed = 0, int64_t chains = 0);

// Names and one-line summaries, for `sgmcmc list`.
std::vector<std::pair<std::string, std::string>> model_names();

}  // namespace sgmcmc
