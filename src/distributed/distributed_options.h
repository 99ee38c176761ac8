// The `distributed:` block of a config (keys mode, init, timeout_s, backend), typed and checked on
// construction. Whether a run is distributed at all is decided by the launcher's environment
// (process_group.h: WORLD_SIZE > 1 or Slurm's tasks), not by the config: the same config runs on
// one process or many.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/option_map.h"

namespace sgmcmc {

struct DistributedOptions {
  // chains: every rank runs its own `chains` (seeds from (seed, rank)); the posterior predictive,
  //         R̂ and ESS are taken over the chains of all ranks.
  // data:   one chain whose global minibatch (train.batch_size) is split over the ranks; the
  //         gradient is all-reduced, so every rank applies the same update.
  std::string mode = "chains";
  // env: TCPStore at MASTER_ADDR:MASTER_PORT; file:///path: FileStore at /path (a shared file system).
  std::string init = "env";
  double timeout_s = 300;  // a collective (or the rendezvous) waiting longer than this fails the run
  // Which c10d backend carries the collectives (c10d_communicator.h):
  // auto: NCCL for CUDA tensors when the build has it, Gloo for CPU tensors (and for CUDA tensors,
  //       through the host, in a build without NCCL);
  // gloo: Gloo for everything (CUDA tensors through the host);
  // nccl: NCCL for everything (needs device: cuda; CPU tensors through the GPU).
  std::string backend = "auto";

  bool data_parallel() const { return mode == "data"; }
  // The FileStore path of init file:///path ("" for env).
  std::string file_store_path() const;
};

// The block's keys (config phase 1).
const std::vector<std::string>& distributed_keys();
// Reads and checks the block; std::invalid_argument "<context>.<key>: ..." on a bad value.
DistributedOptions parse_distributed_options(const OptionMap& block);

}  // namespace sgmcmc
