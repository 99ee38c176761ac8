// Joining a process group from the launcher's environment: the contract torchrun and most cluster
// launchers follow, read here and nowhere else.
//
//   RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT   (torchrun, `sgmcmc train --nproc N`,
//                                                            hand-set variables, Docker, ...)
//   SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID + MASTER_ADDR   (srun; used when WORLD_SIZE is unset;
//                                                            MASTER_PORT defaults to 29500)
//   TORCHELASTIC_USE_AGENT_STORE=True   the launcher's agent already hosts the TCPStore at
//                                       MASTER_ADDR:MASTER_PORT: every rank connects as a client
//                                       (otherwise rank 0 hosts it)
//   GLOO_SOCKET_IFNAME=eth0             the network interface Gloo's device binds to (first of a
//                                       comma list); otherwise 127.0.0.1 when MASTER_ADDR is the
//                                       loopback, else the address the hostname resolves to
//   distributed.init: file:///path      FileStore rendezvous instead of TCPStore (ranks still from
//                                       the variables above; MASTER_* unused)
//
// World size 1 (WORLD_SIZE unset or 1, no Slurm tasks): LocalCommunicator, nothing changes. The
// c10d engine (ProcessGroupGloo for CPU tensors; ProcessGroupNCCL for CUDA tensors in CUDA builds)
// is compiled in when CMake found it (SGMCMC_HAVE_C10D); otherwise a distributed environment is a
// one-line error.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "distributed/communicator.h"
#include "distributed/distributed_options.h"

namespace sgmcmc {

struct LaunchEnv {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr;
  int master_port = 29500;
  bool agent_store = false;   // TORCHELASTIC_USE_AGENT_STORE=True
  std::string socket_ifname;  // GLOO_SOCKET_IFNAME
  std::string source;         // which variables gave the ranks (for messages)

  bool distributed() const { return world_size > 1; }
};

// name -> value (nullopt when unset): the process environment, or a map in tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();

// The launch contract above; std::invalid_argument naming the variable when one is malformed or a
// needed one is missing (MASTER_ADDR / MASTER_PORT only matter for init: env, `needs_master`).
LaunchEnv read_launch_env(const EnvLookup& env, bool needs_master = true);

// True when this build has the c10d engine (Gloo, NCCL or both: c10d_communicator.h).
bool c10d_available();

// Joins the group `env` describes (LocalCommunicator for world size 1) with the backends the run's
// `device` and options.backend call for (c10d_communicator.h). Rendezvous and every collective fail
// after options.timeout_s with std::runtime_error "distributed: ...".
CommunicatorPtr join_process_group(const LaunchEnv& env, const DistributedOptions& options,
                                   const std::string& device = "cpu");

}  // namespace sgmcmc
