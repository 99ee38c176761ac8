// Samplers and optimizers by name. One line per sampler in registry.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/option_map.h"
#include "samplers/sampler.h"

namespace sgmcmc {

struct SamplerEntry {
  std::string name;
  bool is_sampler;       // false for the optimizer baselines
  std::string summary;   // one line for `sgmcmc list`
  // Builds the sampler from options (keys as in the YAML `sampler:` block, minus `name`).
  std::function<SamplerPtr(std::vector<ParamGroup>, const OptionMap&, at::Generator)> make;
};

const std::vector<SamplerEntry>& sampler_registry();

// Looks `name` up (std::invalid_argument with the nearest name suggested if unknown), builds it and
// rejects any option key the sampler did not read.
SamplerPtr make_sampler(const std::string& name, std::vector<ParamGroup> groups,
                        const OptionMap& options, at::Generator generator);

}  // namespace sgmcmc
