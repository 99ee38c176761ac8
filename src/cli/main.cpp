// sgmcmc: stochastic-gradient MCMC for Bayesian deep learning.
//   sgmcmc list | train | predict | simulate | sweep   (each with --help)
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "util/signals.h"

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

// OpenMP spinning. LibTorch's intra-op pool (GNU OpenMP) spins for ~300,000 iterations after every
// parallel region by default, and with as many threads as cores the spinning workers take the cores
// from OpenBLAS's own pool (and vice versa). Measured on 2 cores (train.threads 2, steps/s):
//                                 MNIST BNN (App. H.1)   BPMF movielens-small
//   default                               94                    489
//   OMP_WAIT_POLICY=PASSIVE              247                    338   (futex wake-up per region)
//   GOMP_SPINCOUNT=3000                  212                    504
// so the binary runs with GOMP_SPINCOUNT=3000. OpenBLAS's idle threads then still spin on
// sched_yield for 2^28 cycles (a fifth of the MNIST run's samples under perf); with
// OPENBLAS_THREAD_TIMEOUT=8 (2^8 cycles) the same run went from 184-192 to 229-268 steps/s, with BPMF
// unchanged (458-498 vs 482-503; 2026-11-21, 2 runs each; 4, 12, 16 and 20 were within the noise of 8).
// Both libraries read their variable once, when they are loaded, so the binary sets what the user did
// not and re-executes itself (same pid, same arguments). GOMP_SPINCOUNT is left alone if the user set
// OMP_WAIT_POLICY or GOMP_SPINCOUNT, OPENBLAS_THREAD_TIMEOUT if the user set it; nothing is done with
// SGMCMC_NO_REEXEC; if exec fails the run goes on unchanged.
void ensure_short_openmp_spin(char** argv) {
  if (std::getenv("SGMCMC_NO_REEXEC")) return;
  std::vector<const char*> set;
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT") && setenv("GOMP_SPINCOUNT", "3000", 1) == 0)
    set.push_back("GOMP_SPINCOUNT");
  if (!std::getenv("OPENBLAS_THREAD_TIMEOUT") && setenv("OPENBLAS_THREAD_TIMEOUT", "8", 1) == 0)
    set.push_back("OPENBLAS_THREAD_TIMEOUT");
  if (set.empty()) return;
  execv("/proc/self/exe", argv);
  for (const char* name : set) unsetenv(name);  // exec failed: carry on unchanged
}

}  // namespace

int main(int argc, char** argv) {
  ensure_short_openmp_spin(argv);
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
  // diverged, 130 / 143 interrupted by SIGINT / SIGTERM after writing a checkpoint.
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
  std::cerr << "sgmcmc: unknown command '" << cmd << "' (commands: list, train, predict, simulate, sweep)\n";
  return 2;
}
