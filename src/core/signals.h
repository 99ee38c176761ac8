// Graceful interruption: SIGINT / SIGTERM set a flag that the training loop polls after each step;
// the loop then writes a checkpoint and throws RunInterrupted, and the CLI exits 128 + signal
// (130 for SIGINT, 143 for SIGTERM). A second signal while the first is being handled kills the
// process at once (the default action), so a stuck run can still be stopped with a second Ctrl-C.
#pragma once

#include <stdexcept>
#include <string>

namespace sgmcmc::signals {

// Installs the handlers for SIGINT and SIGTERM (idempotent). Library code never installs them;
// the CLI does, for the commands that train.
void install_handlers();

// The signal number received (SIGINT / SIGTERM), or 0 when none has been.
int pending();

// Clears the flag (tests; a process that handled the stop and goes on).
void reset();

// Name of a signal for messages ("SIGINT", "SIGTERM", else "signal N").
std::string signal_name(int sig);

}  // namespace sgmcmc::signals

namespace sgmcmc {

// Thrown by run_training after it has written the checkpoint in response to a signal.
struct RunInterrupted : std::runtime_error {
  RunInterrupted(const std::string& what, int sig) : std::runtime_error(what), signal(sig) {}
  int signal;
};

// Thrown by run_training when the loss or the parameters stop being finite; the last good
// checkpoint is left in place and summary.json says "diverged": true.
struct RunDiverged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Exit codes of the sgmcmc binary.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;    // run-time failure (I/O, torch error)
constexpr int kExitUsage = 2;      // bad input: config, data, command line
constexpr int kExitDiverged = 3;   // the run diverged (non-finite loss or parameters)
constexpr int kExitUnhealthy = 4;  // the run finished, but its predictive is worse than the trivial one

}  // namespace sgmcmc
