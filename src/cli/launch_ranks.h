// `sgmcmc train ... --nproc N`: starts N local ranks of the same command with the launch contract
// of torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT=a free port; see
// src/distributed/process_group.h) and waits for them. The ranks rendezvous through c10d themselves;
// this is only a convenience for one machine. Unless OMP_NUM_THREADS is set, each rank gets
// OMP_NUM_THREADS = (CPUs in the affinity mask) / N, at least 1 (torchrun sets 1).
#pragma once

#include <string>
#include <vector>

namespace sgmcmc {

// `args`: the train command's arguments without --nproc (args[0] = "train"). Returns 0 when every
// rank exits 0, else the first failing rank's exit status (128 + signal when killed). Once a rank
// fails the others are sent SIGTERM; SIGINT / SIGTERM to the launcher are passed on to the ranks.
int launch_local_ranks(int nproc, const std::vector<std::string>& args);

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0).
int free_local_port();

}  // namespace sgmcmc
