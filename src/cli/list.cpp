#include <cxxopts.hpp>

#include <iomanip>
#include <iostream>

#include "cli/commands.h"
#include "models/factory.h"
#include "samplers/registry.h"

namespace sgmcmc {

// Synthetic experiments of `sgmcmc simulate` (kept in step with src/cli/simulate.cpp by the lead).
static const std::vector<std::pair<std::string, std::string>> kExperiments = {
    {"gaussian2d", "correlated 2-D Gaussian, SGHMC vs SGLD (000 Fig. 3)"},
    {"fig1", "U(θ) = −2θ² + θ⁴ with noisy gradients (000 Fig. 1)"},
    {"double-well", "double-well potential, mSGNHT Euler vs splitting (002 Fig. 1-2)"},
    {"santa-double-well", "double-well, Santa vs RMSprop (001)"},
};

int cmd_list(int argc, char** argv) {
  cxxopts::Options options("sgmcmc list", "Lists samplers, optimizers, models and experiments.");
  options.add_options()("h,help", "show this help");
  try {
    auto r = options.parse(argc, argv);
    if (r.count("help")) {
      std::cout << options.help() << std::endl;
      return 0;
    }
    if (!r.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + r.unmatched()[0] + "'");
  } catch (const std::exception& e) {
    std::cerr << "sgmcmc list: error: " << e.what() << "\n";
    return 2;
  }
  auto row = [](const std::string& a, const std::string& b) {
    std::cout << "  " << std::left << std::setw(18) << a << " " << b << "\n";
  };
  std::cout << "samplers:\n";
  for (const auto& s : sampler_registry())
    if (s.is_sampler) row(s.name, s.summary);
  std::cout << "optimizers:\n";
  for (const auto& s : sampler_registry())
    if (!s.is_sampler) row(s.name, s.summary);
  std::cout << "models:\n";
  for (const auto& [n, d] : model_names()) row(n, d);
  std::cout << "experiments (sgmcmc simulate):\n";
  for (const auto& [n, d] : kExperiments) row(n, d);
  return 0;
}

}  // namespace sgmcmc
