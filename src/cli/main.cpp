// sgmcmc: stochastic-gradient MCMC for Bayesian deep learning.
//   sgmcmc list | train | predict | simulate | sweep   (each with --help)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/option_map.h"
#include "core/signals.h"
#include "runtime/cpu.h"

namespace {

void usage(std::ostream& out) {
  out << "usage: sgmcmc <command> [options]\n\n"
         "commands:\n"
         "  list      samplers, models and experiments available\n"
         "  train     train a model from a YAML config (sgmcmc train configs/mnist_bnn_sghmc.yaml)\n"
         "  predict   re-average a run's saved samples, possibly on other data\n"
         "  simulate  synthetic sampler experiments (gaussian2d, fig1, double-well, ...)\n"
         "  sweep     grids of runs from a sweep file (configs/sweeps/*.yaml), resumable, with summaries\n\n"
         "'sgmcmc <command> --help' describes each command.\n";
}

int run_command(int argc, char** argv) {
  sgmcmc::ensure_short_openmp_spin(argv);
  sgmcmc::quiet_library_logs();  // LibTorch's and Gloo's glog lines are not part of an error's one line
  if (argc < 2) {
    usage(std::cerr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(std::cout);
    return 0;
  }
  // Subcommands see argv starting at their own name.
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  if (cmd == "list") return sgmcmc::cmd_list(sub_argc, sub_argv);
  // Exit codes: 0 ok, 1 run-time failure, 2 bad input (config, data, command line), 3 the run
  // diverged, 4 the run finished worse than the trivial predictor, 130 / 143 interrupted by SIGINT / SIGTERM after writing a checkpoint.
  if (cmd == "train") {
    sgmcmc::signals::install_handlers();
    return sgmcmc::cmd_train(sub_argc, sub_argv);
  }
  if (cmd == "predict") return sgmcmc::cmd_predict(sub_argc, sub_argv);
  if (cmd == "simulate") return sgmcmc::cmd_simulate(sub_argc, sub_argv);
  if (cmd == "sweep") {
    sgmcmc::signals::install_handlers();
    int rc = sgmcmc::cmd_sweep(sub_argc, sub_argv);
    // A run of the sweep stopped on a signal (its checkpoint is written): report it as such.
    if (int sig = sgmcmc::signals::pending()) return 128 + sig;
    return rc;
  }
  const std::string near = sgmcmc::nearest(cmd, {"list", "train", "predict", "simulate", "sweep"});
  std::cerr << "sgmcmc: unknown command '" << cmd << "'"
            << (near.empty() ? std::string() : " (did you mean '" + near + "'?)")
            << " (commands: list, train, predict, simulate, sweep)\n";
  return 2;
}

// Whether the process may end without running the static destructors: not under a sanitizer (its
// leak check runs at exit) nor under a CUDA profiler (Nsight's injection library flushes at exit).
bool fast_exit_allowed() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;
#else
  return std::getenv("CUDA_INJECTION64_PATH") == nullptr;
#endif
}

}  // namespace

// A command's files are written and closed, and its objects destroyed, when run_command returns.
// What the static destructors would do then is LibTorch deregistering its operators' kernels one by
// one and CUDA tearing its context down, which nothing needs: the kernel reclaims the memory, the
// driver the context. So the streams are flushed and the process ends there (on the 2-vCPU host
// ~0.1 s less per command; docs/performance.md).
int main(int argc, char** argv) {
  const int rc = run_command(argc, argv);
  if (!fast_exit_allowed()) return rc;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}
