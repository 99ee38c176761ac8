// The Communicator over LibTorch's c10d process groups (process_group.h picks it for world size > 1).
//
// Backends, by where a tensor lives:
//   CPU tensors    ProcessGroupGloo (SGMCMC_HAVE_GLOO; Debian's libtorch-dev + libgloo, or a LibTorch
//                  with Gloo inside). In a build without Gloo they travel through NCCL on this rank's GPU.
//   CUDA tensors   ProcessGroupNCCL (SGMCMC_HAVE_NCCL: a CUDA build whose LibTorch has c10d's NCCL),
//                  in place on the device, no host copy; with distributed.backend: gloo, or in a build
//                  without NCCL, through Gloo with a host copy each way.
// Both groups share the rendezvous store (under their own key prefixes). The small control
// collectives (the agreed stop signal, checkpoint steps, the parameter checksum) are CPU tensors and
// so go through Gloo when it is there.
//
// Every collective waits for its result; one that fails or exceeds distributed.timeout_s throws
// std::runtime_error "distributed: rank R: ..." naming the lost rank when it can. NCCL honours that
// timeout through its blocking-wait mode (TORCH_NCCL_BLOCKING_WAIT / NCCL_BLOCKING_WAIT, set here
// unless the user set them), so a hung collective throws instead of aborting the process.
#pragma once

#include <string>

#include "distributed/communicator.h"
#include "distributed/distributed_options.h"
#include "distributed/process_group.h"

namespace sgmcmc {

// What this build's c10d offers.
bool c10d_has_gloo();
bool c10d_has_nccl();

// Joins the group of `env` (world size > 1) with the backends `options.backend` and the run's
// `device` ("cpu", "cuda", "cuda:N") call for: nccl for CUDA tensors when `device` is CUDA and the
// build has it (auto) or always (nccl: std::invalid_argument when it cannot); gloo otherwise.
CommunicatorPtr make_c10d_communicator(const LaunchEnv& env, const DistributedOptions& options,
                                       const std::string& device);

}  // namespace sgmcmc
