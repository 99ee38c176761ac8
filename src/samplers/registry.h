// Samplers and optimizers by name. One line per sampler in registry.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/option_map.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SamplerEntry {
  std::string name;
  bool is_sampler;       // false for the optimizer baselines
  std::string summary;   // one line for `sgmcmc list`
  // The option keys it accepts besides `name`: exactly the keys its options parser reads (the
  // config checks keys against this list before reading any value).
  std::vector<std::string> keys;
  // Whether `lr_scaling: per_datum` applies: the update moves θ by lr·∇Ũ (times constants), so
  // lr/N is the step on the mean per-datum loss (sgld, sghmc, sgd, sgd-momentum). Not for the
  // preconditioned ones (their preconditioner already divides out the scale of ∇Ũ) nor those whose
  // drift is h²·∇Ũ (sgnht, msgnht, hmc, santa).
  bool lr_per_datum = false;
  // Parses and validates the options without building anything (std::invalid_argument naming the
  // key, e.g. "sgld.lr: must be a finite number > 0, got -1"); the config's value phase.
  std::function<void(const OptionMap&)> check;
  // Builds the sampler from options (keys as in the YAML `sampler:` block, minus `name`), parsed by
  // the same parser as `check`.
  std::function<SamplerPtr(std::vector<ParamGroup>, const OptionMap&, at::Generator)> make;
};

const std::vector<SamplerEntry>& sampler_registry();

// The entry named `name`; std::invalid_argument "<context>.name: unknown sampler 'x' (did you mean
// 'y'?)" otherwise.
const SamplerEntry& find_sampler(const std::string& name, const OptionMap& options);
// "name", "lr_scaling" (total | per_datum: read by the trainer, see ExperimentConfig::lr_scaling)
// and the entry's keys: every key a `sampler:` block for it may hold.
std::vector<std::string> sampler_keys(const SamplerEntry& entry);

// Looks `name` up (std::invalid_argument with the nearest name suggested if unknown), rejects any
// option key the sampler does not declare, then builds it.
SamplerPtr make_sampler(const std::string& name, std::vector<ParamGroup> groups,
                        const OptionMap& options, at::Generator generator);

}  // namespace sgmcmc
