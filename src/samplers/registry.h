// Samplers and optimizers by name. One line per sampler in registry.cpp: its class, its option
// table (declared beside its Options struct, in its own header and source) and its traits; what
// the config, the trainer, `--help-keys` and the Python binding know of a sampler comes from here,
// never from comparing its name.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/option_map.h"
#include "core/option_table.h"
#include "samplers/sampler.h"

namespace sgmcmc {

// What the rest of the program needs to know of a sampler besides its options. Each registry line
// states the ones that differ from these defaults (a stochastic-gradient sampler with an elementwise
// update, lr on ∇Ũ as given).
struct SamplerTraits {
  bool is_sampler = true;  // false for the optimizer baselines (point estimates, no noise)
  // Whether `lr_scaling: per_datum` applies: the update moves θ by lr·∇Ũ (times constants), so
  // lr/N is the step on the mean per-datum loss (sgld, sghmc, sgd, sgd-momentum). Not for the
  // preconditioned ones (their preconditioner already divides out the scale of ∇Ũ) nor those whose
  // drift is h²·∇Ũ (sgnht, msgnht, hmc, santa).
  bool lr_per_datum = false;
  // Whether parallel chains (config `chains` > 1) may run it: false where the update couples all
  // parameters (one scalar thermostat, one accept step), which would couple the chains;
  // `coupled_by` then says what couples them.
  bool chains = true;
  std::string coupled_by;
  // Whether the update is defined at T = 0 (a cyclical schedule's exploration stage); equals
  // Sampler::runs_at_zero_temperature() of the built sampler (tests/test_config.cpp checks it).
  bool zero_temperature = true;
  // Whether step() needs a closure (the gradient at each leapfrog step): hmc, stochastic-hmc.
  bool needs_closure = false;
  // The likely cause of a divergence; "{key}" stands for the option's resolved value.
  std::string divergence_hint = "step size too large \u2014 lower sampler.lr";

  SamplerTraits& optimizer() {
    is_sampler = false;
    zero_temperature = false;
    divergence_hint = "learning rate too large \u2014 lower sampler.lr";
    return *this;
  }
  SamplerTraits& per_datum() { return lr_per_datum = true, *this; }
  SamplerTraits& no_chains(std::string what_couples) {
    chains = false;
    coupled_by = std::move(what_couples);
    return *this;
  }
  SamplerTraits& positive_temperature() { return zero_temperature = false, *this; }
  SamplerTraits& closure() { return needs_closure = true, *this; }
  SamplerTraits& hint(std::string text) { return divergence_hint = std::move(text), *this; }
};

struct SamplerEntry : SamplerTraits {
  std::string name;
  std::string summary;   // one line for `sgmcmc list`
  // The option keys it accepts besides `name`: exactly the keys its options parser reads (the
  // config checks keys against this list before reading any value). From its option table.
  std::vector<std::string> keys;
  // Each key's type, default, range and meaning (--help-keys, the Python signatures).
  std::vector<OptionDoc> options;
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
// The entry's divergence hint with each "{key}" replaced by the key's value in `options` (resolved:
// given or default; "?" when absent).
std::string divergence_hint(const SamplerEntry& entry, const OptionMap& options);

// The names of the entries for which `has` holds, comma-separated (for messages that list the
// samplers a setting applies to).
std::string sampler_names(const std::function<bool(const SamplerEntry&)>& has);

// Why sampler `name` refuses parallel chains: "sampler sgnht couples all parameters (one
// thermostat); use an elementwise sampler (sgld, ...) with parallel chains".
std::string chains_refusal(const std::string& name);

// "name", "lr_scaling" (total | per_datum: read by the trainer, see ExperimentConfig::lr_scaling)
// and the entry's keys: every key a `sampler:` block for it may hold.
std::vector<std::string> sampler_keys(const SamplerEntry& entry);

// Looks `name` up (std::invalid_argument with the nearest name suggested if unknown), rejects any
// option key the sampler does not declare, then builds it.
SamplerPtr make_sampler(const std::string& name, std::vector<ParamGroup> groups,
                        const OptionMap& options, at::Generator generator);

}  // namespace sgmcmc
