// Placeholder until src/cli/simulate.cpp lands (the lead deletes this file then).
#include <iostream>

#include "cli/commands.h"

namespace sgmcmc {
int cmd_simulate(int, char**) {
  std::cerr << "sgmcmc simulate: not yet available in this build\n";
  return 2;
}
}  // namespace sgmcmc
