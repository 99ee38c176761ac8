#include "samplers/registry.h"

#include <stdexcept>

#include "samplers/sgld.h"

namespace sgmcmc {
namespace {

SamplerPtr make_sgld(std::vector<ParamGroup> g, const OptionMap& o, at::Generator gen) {
  SgldOptions opt;
  opt.lr(o.get_double("lr", opt.lr())).temperature(o.get_double("temperature", opt.temperature()));
  return std::make_unique<Sgld>(std::move(g), std::move(gen), opt);
}

}  // namespace

const std::vector<SamplerEntry>& sampler_registry() {
  static const std::vector<SamplerEntry> registry = {
      {"sgld", true, "stochastic gradient Langevin dynamics (Welling & Teh 2011)", make_sgld},
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
