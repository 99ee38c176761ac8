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

namespace sgmcmc {
namespace {

SamplerPtr make_sgld(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  SgldOptions opt;
  opt.lr(o.get_double("lr", opt.lr())).temperature(o.get_double("temperature", opt.temperature()));
  return std::make_unique<Sgld>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_psgld(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  PsgldOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .temperature(o.get_double("temperature", opt.temperature()))
      .alpha(o.get_double("alpha", opt.alpha()))
      .eps(o.get_double("eps", opt.eps()));
  return std::make_unique<Psgld>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_sghmc(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  SghmcOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .alpha(o.get_double("alpha", opt.alpha()))
      .noise_estimate(o.get_choice("noise_estimate", opt.noise_estimate(), {"none", "constant", "fisher"}))
      .beta_hat(o.get_double("beta_hat", opt.beta_hat()))
      .fisher_decay(o.get_double("fisher_decay", opt.fisher_decay()))
      .integrator(o.get_choice("integrator", opt.integrator(), {"euler", "ssi"}))
      .temperature(o.get_double("temperature", opt.temperature()));
  return std::make_unique<Sghmc>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_sghmc_naive(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  SghmcNaiveOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .resample_every(o.get_int("resample_every", opt.resample_every()))
      .temperature(o.get_double("temperature", opt.temperature()));
  return std::make_unique<SghmcNaive>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_hmc(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  HmcOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .leapfrog_steps(o.get_int("leapfrog_steps", opt.leapfrog_steps()))
      .temperature(o.get_double("temperature", opt.temperature()));
  return std::make_unique<Hmc>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_sgnht(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  SgnhtOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .diffusion(o.get_double("diffusion", opt.diffusion()))
      .integrator(o.get_choice("integrator", opt.integrator(), {"euler", "ssi"}))
      .temperature(o.get_double("temperature", opt.temperature()));
  if (o.has("xi_init")) opt.xi_init(o.get_double("xi_init", 0.0));
  return std::make_unique<Sgnht>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_msgnht(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  MsgnhtOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .diffusion(o.get_double("diffusion", opt.diffusion()))
      .integrator(o.get_choice("integrator", opt.integrator(), {"euler", "ssi"}))
      .temperature(o.get_double("temperature", opt.temperature()));
  if (o.has("xi_init")) opt.xi_init(o.get_double("xi_init", 0.0));
  return std::make_unique<Msgnht>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_santa(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
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
      .temperature(o.get_double("temperature", opt.temperature()));
  return std::make_unique<Santa>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_sgd(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  SgdOptions opt;
  opt.lr(o.get_double("lr", opt.lr()));
  return std::make_unique<Sgd>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_sgd_momentum(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  SgdMomentumOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .momentum(o.get_double("momentum", opt.momentum()))
      .nesterov(o.get_bool("nesterov", opt.nesterov()));
  return std::make_unique<SgdMomentum>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_rmsprop(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  RmspropOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .alpha(o.get_double("alpha", opt.alpha()))
      .eps(o.get_double("eps", opt.eps()));
  return std::make_unique<Rmsprop>(std::move(g), std::move(gen), opt);
}

SamplerPtr make_adam(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  AdamOptions opt;
  opt.lr(o.get_double("lr", opt.lr()))
      .beta1(o.get_double("beta1", opt.beta1()))
      .beta2(o.get_double("beta2", opt.beta2()))
      .eps(o.get_double("eps", opt.eps()));
  return std::make_unique<Adam>(std::move(g), std::move(gen), opt);
}

}  // namespace

const std::vector<SamplerEntry>& sampler_registry() {
  static const std::vector<SamplerEntry> registry = {
      {"sgld", true, "stochastic gradient Langevin dynamics (Welling & Teh 2011)", make_sgld},
      {"psgld", true, "preconditioned SGLD, RMSprop preconditioner (Li et al. 2016)", make_psgld},
      {"sghmc", true, "stochastic gradient HMC with friction, euler|ssi (Chen, Fox & Guestrin 2014)", make_sghmc},
      {"sghmc-naive", true, "naive SGHMC without friction (negative control; Chen et al. 2014 §3.1)", make_sghmc_naive},
      {"hmc", true, "exact HMC, leapfrog + Metropolis-Hastings on full gradients (needs a closure)", make_hmc},
      {"sgnht", true, "SG Nose-Hoover thermostat, scalar thermostat (Ding et al. 2014)", make_sgnht},
      {"msgnht", true, "multivariate SGNHT, euler|ssi (Li, Chen, Fan & Carin 2016)", make_msgnht},
      {"santa", true, "Santa: annealed thermostats with adaptive momentum (Chen et al. 2016)", make_santa},
      {"sgd", false, "stochastic gradient descent", make_sgd},
      {"sgd-momentum", false, "SGD with (Nesterov) momentum", make_sgd_momentum},
      {"rmsprop", false, "RMSprop (Tieleman & Hinton 2012)", make_rmsprop},
      {"adam", false, "Adam (Kingma & Ba 2015)", make_adam},
  };
  return registry;
}

SamplerPtr make_sampler(const std::string& name, std::vector<ParamGroup> groups,
                        const OptionMap& options, at::Generator generator) {
  std::vector<std::string> names;
  for (const auto& e : sampler_registry()) {
    if (e.name == name) {
      auto s = e.make(std::move(groups), options, std::move(generator));
      options.check_all_used({"name"});
      return s;
    }
    names.push_back(e.name);
  }
  std::string near = nearest(name, names);
  std::string where = options.context().empty() ? "sampler" : options.context();
  throw std::invalid_argument(where + ".name: unknown sampler '" + name + "'" +
                              (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

}  // namespace sgmcmc
