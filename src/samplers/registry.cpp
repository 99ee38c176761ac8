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
#include "samplers/sgrld.h"
#include "samplers/stochastic_hmc.h"

namespace sgmcmc {
namespace {

SgldOptions parse_sgld_options(const OptionMap& o) {
  SgldOptions opt;
  opt.lr(o.get_double("lr", opt.lr())).temperature(o.get_double("temperature", opt.temperature()));
  opt.validate();
  return opt;
}

SgrldOptions parse_sgrld_options(const OptionMap& o) {
  SgrldOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .temperature(o.get_double("temperature", opt.temperature()))
      .metric(o.get_choice("metric", opt.metric(), {"expanded_mean", "quadratic", "identity"}))
      .metric_scale(o.get_double("metric_scale", opt.metric_scale()));
  opt.validate();
  return opt;
}

PsgldOptions parse_psgld_options(const OptionMap& o) {
  PsgldOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .temperature(o.get_double("temperature", opt.temperature()))
      .alpha(o.get_double("alpha", opt.alpha()))
      .eps(o.get_double("eps", opt.eps()));
  opt.validate();
  return opt;
}

SghmcOptions parse_sghmc_options(const OptionMap& o) {
  SghmcOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .alpha(o.get_double("alpha", opt.alpha()))
      .noise_estimate(o.get_choice("noise_estimate", opt.noise_estimate(), {"none", "constant", "fisher"}))
      .beta_hat(o.get_double("beta_hat", opt.beta_hat()))
      .fisher_decay(o.get_double("fisher_decay", opt.fisher_decay()))
      .integrator(o.get_choice("integrator", opt.integrator(), {"euler", "ssi"}))
      .temperature(o.get_double("temperature", opt.temperature()));
  opt.validate();
  return opt;
}

SghmcNaiveOptions parse_sghmc_naive_options(const OptionMap& o) {
  SghmcNaiveOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .resample_every(o.get_int("resample_every", opt.resample_every()))
      .temperature(o.get_double("temperature", opt.temperature()));
  opt.validate();
  return opt;
}

HmcOptions parse_hmc_options(const OptionMap& o) {
  HmcOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .leapfrog_steps(o.get_int("leapfrog_steps", opt.leapfrog_steps()))
      .temperature(o.get_double("temperature", opt.temperature()));
  opt.validate();
  return opt;
}

StochasticHmcOptions parse_stochastic_hmc_options(const OptionMap& o) {
  StochasticHmcOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .leapfrog_steps(o.get_int("leapfrog_steps", opt.leapfrog_steps()))
      .friction(o.get_double("friction", opt.friction()))
      .temperature(o.get_double("temperature", opt.temperature()));
  opt.validate();
  return opt;
}

SgnhtOptions parse_sgnht_options(const OptionMap& o) {
  SgnhtOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .diffusion(o.get_double("diffusion", opt.diffusion()))
      .integrator(o.get_choice("integrator", opt.integrator(), {"euler", "ssi"}))
      .temperature(o.get_double("temperature", opt.temperature()));
  if (auto xi = o.get_optional_double("xi_init")) opt.xi_init(*xi);
  opt.validate();
  return opt;
}

MsgnhtOptions parse_msgnht_options(const OptionMap& o) {
  MsgnhtOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .diffusion(o.get_double("diffusion", opt.diffusion()))
      .integrator(o.get_choice("integrator", opt.integrator(), {"euler", "ssi"}))
      .temperature(o.get_double("temperature", opt.temperature()));
  if (auto xi = o.get_optional_double("xi_init")) opt.xi_init(*xi);
  opt.validate();
  return opt;
}

SantaOptions parse_santa_options(const OptionMap& o) {
  SantaOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .sigma(o.get_double("sigma", opt.sigma()))
      .eps(o.get_double("eps", opt.eps()))
      .data_size(o.get_double("data_size", opt.data_size()))
      .friction(o.get_double("friction", opt.friction()))
      .burnin(o.get_int("burnin", opt.burnin()))
      .anneal_a(o.get_double("anneal_a", opt.anneal_a()))
      .anneal_gamma(o.get_double("anneal_gamma", opt.anneal_gamma()))
      .precond_term(o.get_bool("precond_term", opt.precond_term()))
      .integrator(o.get_choice("integrator", opt.integrator(), {"euler", "ssi"}))
      .temperature(o.get_double("temperature", opt.temperature()))
      .noise_g2(o.get_double("noise_g2", opt.noise_g2()))
      .thermostat_init(o.get_choice("thermostat_init", opt.thermostat_init(), {"friction", "fixed_point"}))
      .grad_decay(o.get_double("grad_decay", opt.grad_decay()))
      .explore_eps(o.get_double("explore_eps", opt.explore_eps()));
  opt.validate();
  return opt;
}

SgdOptions parse_sgd_options(const OptionMap& o) {
  SgdOptions opt;
  opt.lr(o.get_double("lr", opt.lr()));
  opt.validate();
  return opt;
}

SgdMomentumOptions parse_sgd_momentum_options(const OptionMap& o) {
  SgdMomentumOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .momentum(o.get_double("momentum", opt.momentum()))
      .nesterov(o.get_bool("nesterov", opt.nesterov()));
  opt.validate();
  return opt;
}

RmspropOptions parse_rmsprop_options(const OptionMap& o) {
  RmspropOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .alpha(o.get_double("alpha", opt.alpha()))
      .eps(o.get_double("eps", opt.eps()));
  opt.validate();
  return opt;
}

AdamOptions parse_adam_options(const OptionMap& o) {
  AdamOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .beta1(o.get_double("beta1", opt.beta1()))
      .beta2(o.get_double("beta2", opt.beta2()))
      .eps(o.get_double("eps", opt.eps()));
  opt.validate();
  return opt;
}

// An entry whose `check` and `make` both go through `parse` (the one reader of the options).
template <class S, class Options>
SamplerEntry entry(std::string name, bool is_sampler, std::string summary, std::vector<std::string> keys,
                   Options (*parse)(const OptionMap&)) {
  SamplerEntry e;
  e.name = std::move(name);
  e.is_sampler = is_sampler;
  e.summary = std::move(summary);
  e.keys = std::move(keys);
  e.check = [parse](const OptionMap& o) { parse(o); };
  e.make = [parse](std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) -> SamplerPtr {
    return std::make_unique<S>(std::move(g), std::move(gen), parse(o));
  };
  return e;
}

SamplerEntry per_datum(SamplerEntry e) {
  e.lr_per_datum = true;
  return e;
}

}  // namespace

const std::vector<SamplerEntry>& sampler_registry() {
  // The keys of each sampler's `sampler:` block besides `name`: exactly what its parse_*_options
  // reads (tests/test_config.cpp checks this against the parsers).
  static const std::vector<SamplerEntry> registry = {
      per_datum(entry<Sgld>("sgld", true, "stochastic gradient Langevin dynamics (Welling & Teh 2011)",
                  {"lr", "temperature"}, parse_sgld_options)),
      entry<Sgrld>("sgrld", true, "SG Riemannian Langevin, diagonal metric with its Gamma term; expanded mean on the simplex (Patterson & Teh 2013)",
                   {"lr", "temperature", "metric", "metric_scale"}, parse_sgrld_options),
      entry<Psgld>("psgld", true, "preconditioned SGLD, RMSprop preconditioner (Li et al. 2016)",
                   {"lr", "temperature", "alpha", "eps"}, parse_psgld_options),
      per_datum(entry<Sghmc>("sghmc", true, "stochastic gradient HMC with friction, euler|ssi (Chen, Fox & Guestrin 2014)",
                   {"lr", "alpha", "noise_estimate", "beta_hat", "fisher_decay", "integrator", "temperature"},
                   parse_sghmc_options)),
      entry<SghmcNaive>("sghmc-naive", true, "naive SGHMC without friction (negative control; Chen et al. 2014 §3.1)",
                        {"lr", "resample_every", "temperature"}, parse_sghmc_naive_options),
      entry<Hmc>("hmc", true, "exact HMC, leapfrog + Metropolis-Hastings on full gradients (needs a closure)",
                 {"lr", "leapfrog_steps", "temperature"}, parse_hmc_options),
      entry<StochasticHmc>("stochastic-hmc", true,
                           "stochastic HMC: N_l minibatch leapfrog steps, partial momentum refresh (Franzese et al. 2022)",
                           {"lr", "leapfrog_steps", "friction", "temperature"}, parse_stochastic_hmc_options),
      entry<Sgnht>("sgnht", true, "SG Nose-Hoover thermostat, scalar thermostat (Ding et al. 2014)",
                   {"lr", "diffusion", "integrator", "temperature", "xi_init"}, parse_sgnht_options),
      entry<Msgnht>("msgnht", true, "multivariate SGNHT, euler|ssi (Li, Chen, Fan & Carin 2016)",
                    {"lr", "diffusion", "integrator", "temperature", "xi_init"}, parse_msgnht_options),
      entry<Santa>("santa", true, "Santa: annealed thermostats with adaptive momentum (Chen et al. 2016)",
                   {"lr", "sigma", "eps", "data_size", "friction", "burnin", "anneal_a", "anneal_gamma",
                    "precond_term", "integrator", "temperature", "noise_g2", "thermostat_init", "grad_decay", "explore_eps"},
                   parse_santa_options),
      per_datum(entry<Sgd>("sgd", false, "stochastic gradient descent", {"lr"}, parse_sgd_options)),
      per_datum(entry<SgdMomentum>("sgd-momentum", false, "SGD with (Nesterov) momentum",
                                   {"lr", "momentum", "nesterov"}, parse_sgd_momentum_options)),
      entry<Rmsprop>("rmsprop", false, "RMSprop (Tieleman & Hinton 2012)", {"lr", "alpha", "eps"},
                     parse_rmsprop_options),
      entry<Adam>("adam", false, "Adam (Kingma & Ba 2015)", {"lr", "beta1", "beta2", "eps"}, parse_adam_options),
  };
  return registry;
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
