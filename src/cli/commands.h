// Subcommands of the `sgmcmc` binary; each returns the process exit code.
#pragma once

namespace sgmcmc::cli {
int cmd_simulate(int argc, char** argv);
}  // namespace sgmcmc::cli
