// What a training run does differently on several processes, in one place: which files a rank
// writes, the data-parallel gradient, the parameter check, the agreed stop. The trainer calls it at
// fixed points; with one process every call is a no-op.
//
// distributed.mode: data (one chain, W ranks, global minibatch B of n = train.batch_size examples,
// drawn from the same generator on every rank, rank r taking B_r = B[r·n/W, (r+1)·n/W)):
//
//   ∇Ũ(θ) = Σ_{r<W} (N/n) ∇ Σ_{i∈B_r} nll_i(θ)  +  ∇(−log p(θ))
//
// the first term all-reduced (one buffer per dtype), the prior's gradient added after the sum on
// every rank: the single-process ∇Ũ up to the order of the floating-point sum. The minibatch nll is
// summed in the same all-reduce (the loss, the divergence check and HMC's energy see the global
// one). Every rank then applies the same update with the same noise: the samplers' noise keys come
// from the run's generator (same seed on every rank, same number of draws), so the parameters stay
// identical without a broadcast; evaluate() compares a checksum of them across ranks.
//
// distributed.mode: chains: rank r runs its chains from rank_seed(seed, r); the predictive sums and
// the R̂/ESS traces are combined over ranks at each evaluation (PosteriorPredictive::all_ranks,
// ConvergenceTrace::all_ranks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_config.h"
#include "distributed/communicator.h"
#include "distributed/distributed_options.h"

namespace sgmcmc {

class DistributedRun {
 public:
  DistributedRun() : comm_(std::make_shared<LocalCommunicator>()) {}
  DistributedRun(CommunicatorPtr comm, DistributedOptions options);

  bool active() const { return comm_->distributed(); }
  int rank() const { return comm_->rank(); }
  int world_size() const { return comm_->world_size(); }
  bool data_parallel() const { return active() && options_.data_parallel(); }
  bool chains_across_ranks() const { return active() && !options_.data_parallel(); }
  Communicator& comm() { return *comm_; }
  const DistributedOptions& options() const { return options_; }

  // Rank 0 writes config.yaml, metrics.csv, summary.json and prints; in data mode it alone writes
  // samples and final.pt (the parameters are the same on every rank).
  bool writes_run_files() const { return rank() == 0; }
  bool writes_parameters() const { return !data_parallel() || rank() == 0; }

  // The device this rank runs on: `device` "cuda" becomes "cuda:LOCAL_RANK" with several ranks
  // (one GPU per rank of a machine); any other device, or one process, as it is.
  std::string device_for(const std::string& device) const;
  // Data mode: this rank's share of the global minibatch indices [n]; otherwise `idx`.
  torch::Tensor shard(const torch::Tensor& idx) const;
  // Data mode: Σ over ranks of every defined .grad of `params` and of `batch_nll`, in place.
  void reduce_gradient(const std::vector<torch::Tensor>& params, torch::Tensor& batch_nll);
  // Data mode: throws std::runtime_error naming the ranks whose parameters differ from rank 0's.
  void check_in_sync(const std::vector<torch::Tensor>& params, int64_t step);
  // The first non-zero pending signal of any rank, agreed every kSignalEvery steps (a collective of
  // ~0.1 ms on loopback; 0 between), so every rank stops after the same step.
  static constexpr int64_t kSignalEvery = 10;
  int agree_on_signal(int signal, int64_t step);
  // Whether any rank's `flag` is true (a collective with several ranks), e.g. a checkpoint due by one
  // rank's clock, so that every rank writes the same step.
  bool agree_any(bool flag);
  // The checkpoint to resume from: `latest`, or with several ranks the latest of `latest` and
  // `previous` whose step every rank has (a rank lost between the ranks' writes of one checkpoint
  // leaves the others one checkpoint ahead). std::invalid_argument when there is none.
  std::string agreed_checkpoint(const std::string& latest, const std::string& previous);
  // Throws std::invalid_argument when the ranks' checkpoints are at different steps.
  void check_same_step(int64_t step, const std::string& file);
  void barrier() { comm_->barrier(); }

 private:
  CommunicatorPtr comm_;
  DistributedOptions options_;
};

// The process group of the launch environment (process_group.h), checked against `config`; a
// single process when the environment describes none. `resume_dir` (non-empty when resuming): its
// checkpoints must have been written by as many processes.
DistributedRun join_distributed(const ExperimentConfig& config, const std::string& resume_dir);

// The seed of rank `rank`'s chains in chains mode: `seed` itself on rank 0 (so rank 0 reproduces a
// single-process run), a SplitMix64 mix of (seed, rank) on the others.
uint64_t rank_seed(uint64_t seed, int rank);

// Checks `config` against a launch of `world_size` processes (data mode: one chain, a batch that
// splits evenly, no whole-step graph); std::invalid_argument "<config>: <key>: ..." otherwise.
// Every rank's config against rank 0's (all ranks gather every config): a difference is
// std::invalid_argument naming the rank and the first differing key, on every rank.
void check_same_config(DistributedRun& run, const ExperimentConfig& config);
void check_distributed_config(const ExperimentConfig& config, int world_size);

// Before resuming a run with `world_size` processes: refuses checkpoints written by another number
// of processes, naming both (checkpoint.pt: 1; checkpoint.rank-R.pt: as many as there are files).
void check_resume_world_size(const std::string& run_dir, int world_size);

}  // namespace sgmcmc
