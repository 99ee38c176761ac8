#include "samplers/registry.h"

#include <stdexcept>

#include "samplers/hmc.h"
#include "samplers/msgnht.h"
#include "samplers/optimizers.h"
#include "samplers/psgld.h"
#include "samplers/santa.h"
#include "samplers/sghmc.h"
#include "samplers/sghmc_naive.h"
#include "samplers/sgld.h"
#include "samplers/sgnht.h"
#include "samplers/sgnuts.h"
#include "samplers/sgrld.h"
#include "samplers/stochastic_hmc.h"

namespace sgmcmc {
namespace {

// The entry of sampler class S over its option table: `check` and `make` both parse through the
// table (the one reader of the options), then Options::validate() (the table's per-key checks and
// the sampler's cross-key rules).
template <class S, class Options>
SamplerEntry entry(const OptionTable<Options>& table, std::string summary, SamplerTraits traits = {}) {
  SamplerEntry e;
  static_cast<SamplerTraits&>(e) = std::move(traits);
  e.name = table.who();
  e.summary = std::move(summary);
  e.keys = table.keys();
  e.options = table.docs();
  auto parse = [&table](const OptionMap& o) {
    Options opt = table.parse(o);
    opt.validate();
    return opt;
  };
  e.check = [parse](const OptionMap& o) { parse(o); };
  e.make = [parse](std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) -> SamplerPtr {
    return std::make_unique<S>(std::move(g), std::move(gen), parse(o));
  };
  return e;
}

using T = SamplerTraits;

}  // namespace

const std::vector<SamplerEntry>& sampler_registry() {
  // One line per sampler: class, option table (its header), `sgmcmc list` summary, traits.
  static const std::vector<SamplerEntry> registry = {
      entry<Sgld>(sgld_option_table(), "stochastic gradient Langevin dynamics (Welling & Teh 2011)", T().per_datum()),
      entry<Sgrld>(sgrld_option_table(),
                   "SG Riemannian Langevin, diagonal metric with its Gamma term; expanded mean on the simplex (Patterson & Teh 2013)"),
      entry<Psgld>(psgld_option_table(), "preconditioned SGLD, RMSprop preconditioner (Li et al. 2016)"),
      entry<Sghmc>(sghmc_option_table(), "stochastic gradient HMC with friction, euler|ssi (Chen, Fox & Guestrin 2014)",
                   T().per_datum().hint("step size too large for the friction alpha={alpha} \u2014 lower sampler.lr or "
                                        "raise sampler.alpha")),
      entry<SghmcNaive>(sghmc_naive_option_table(),
                        "naive SGHMC without friction (negative control; Chen et al. 2014 §3.1)",
                        T().hint("naive SGHMC has no friction to absorb the gradient noise \u2014 lower sampler.lr")),
      entry<Hmc>(hmc_option_table(), "exact HMC, leapfrog + Metropolis-Hastings on full gradients (needs a closure)",
                 T().no_chains("one accept step").positive_temperature().closure()),
      entry<StochasticHmc>(stochastic_hmc_option_table(),
                           "stochastic HMC: N_l minibatch leapfrog steps, partial momentum refresh (Franzese et al. 2022)",
                           T().closure()),
      entry<Sgnuts>(sgnuts_option_table(),
                    "SG no-U-turn: stochastic HMC, trajectory lengths learned from the U-turn criterion (eHMC-style)",
                    T().no_chains("one U-turn criterion over all parameters")),
      entry<Sgnht>(sgnht_option_table(), "SG Nose-Hoover thermostat, scalar thermostat (Ding et al. 2014)",
                   T().no_chains("one thermostat")
                       .hint("step size too large for the thermostat (diffusion={diffusion}) \u2014 lower sampler.lr or "
                             "raise sampler.diffusion")),
      entry<Msgnht>(msgnht_option_table(), "multivariate SGNHT, euler|ssi (Li, Chen, Fan & Carin 2016)",
                    T().hint("step size too large for the thermostat (diffusion={diffusion}) \u2014 lower sampler.lr "
                             "or raise sampler.diffusion")),
      entry<Santa>(santa_option_table(), "Santa: annealed thermostats with adaptive momentum (Chen et al. 2016)",
                   T().positive_temperature().hint(
                       "step size too large for the thermostat (friction={friction}) \u2014 lower sampler.lr")),
      entry<Sgd>(sgd_option_table(), "stochastic gradient descent", T().optimizer().per_datum()),
      entry<SgdMomentum>(sgd_momentum_option_table(), "SGD with (Nesterov) momentum", T().optimizer().per_datum()),
      entry<Rmsprop>(rmsprop_option_table(), "RMSprop (Tieleman & Hinton 2012)", T().optimizer()),
      entry<Adam>(adam_option_table(), "Adam (Kingma & Ba 2015)", T().optimizer()),
  };
  return registry;
}

std::string divergence_hint(const SamplerEntry& entry, const OptionMap& options) {
  const auto resolved = options.resolved();
  std::string out;
  const std::string& t = entry.divergence_hint;
  for (size_t i = 0; i < t.size(); ++i) {
    const size_t close = t[i] == '{' ? t.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out += t[i];
      continue;
    }
    auto it = resolved.find(t.substr(i + 1, close - i - 1));
    out += it == resolved.end() ? "?" : it->second;
    i = close;
  }
  return out;
}

std::string chains_refusal(const std::string& name) {
  std::string why;
  for (const auto& e : sampler_registry())
    if (e.name == name) why = e.coupled_by;
  return "sampler " + name + " couples all parameters (" + why + "); use an elementwise sampler (" +
         sampler_names([](const SamplerEntry& e) { return e.is_sampler && e.chains; }) + ") with parallel chains";
}

std::string sampler_names(const std::function<bool(const SamplerEntry&)>& has) {
  std::string names;
  for (const auto& e : sampler_registry())
    if (has(e)) names += (names.empty() ? "" : ", ") + e.name;
  return names;
}

const SamplerEntry& find_sampler(const std::string& name, const OptionMap& options) {
  std::vector<std::string> names;
  for (const auto& e : sampler_registry()) {
    if (e.name == name) return e;
    names.push_back(e.name);
  }
  std::string near = nearest(name, names);
  std::string where = options.context().empty() ? "sampler" : options.context();
  throw std::invalid_argument(where + ".name: unknown sampler '" + name + "'" +
                              (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

std::vector<std::string> sampler_keys(const SamplerEntry& entry) {
  std::vector<std::string> keys = {"name", "lr_scaling"};
  keys.insert(keys.end(), entry.keys.begin(), entry.keys.end());
  return keys;
}

SamplerPtr make_sampler(const std::string& name, std::vector<ParamGroup> groups,
                        const OptionMap& options, at::Generator generator) {
  const SamplerEntry& e = find_sampler(name, options);
  options.check_known(sampler_keys(e));
  return e.make(std::move(groups), options, std::move(generator));
}

}  // namespace sgmcmc
