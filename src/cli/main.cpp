// Placeholder dispatcher (replaced by the full CLI).
#include <cstring>
#include <iostream>
#include "cli/commands.h"
int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "simulate") == 0) return sgmcmc::cli::cmd_simulate(argc - 1, argv + 1);
  std::cerr << "usage: sgmcmc simulate ...\n";
  return 2;
}
