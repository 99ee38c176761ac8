// The posterior-predictive accumulator: running sums over the thinned samples, per split, so that
// no sample need be kept. For S samples with per-chain predictions p_{s,c}:
//   mean(split) = (1/S) Σ_s (1/C) Σ_c p_{s,c}                 (class probabilities or means)
//   log_density_sum(split) = log Σ_s (1/C) Σ_c N(y; f_{s,c}, 1/τ_s)   (only with mixture densities:
//                                                              every regression but clipped ratings;
//                                                              its NLL is the posterior predictive's,
//                                                              not the plug-in N(y; mean, 1/τ)'s)
//   classification: Σ_s (1/C) Σ_c H(p_{s,c}) per point (expected entropy: the epistemic part)
//   regression: Σ_s (1/C) Σ_c f_{s,c}² per point and Σ_s 1/τ_s (the predictive variance)
// `train` adds one sample per thinned step; `sgmcmc predict` adds one per saved sample file: the
// same sums, so the two cannot disagree. Calibration and out-of-distribution scores of the
// averaged predictive, and the all-reduce of the sums across processes, belong here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "distributed/communicator.h"
#include "metrics/predictive_metrics.h"

namespace sgmcmc {

class PosteriorPredictive {
 public:
  explicit PosteriorPredictive(bool mixture_density = false) : mixture_density_(mixture_density) {}

  // Adds one sample's per-chain predictions [C, n, ...] on `split` (τ: the sample's noise precision).
  // Returns their chain mean [n, ...] (float64).
  torch::Tensor add(const std::string& split, const torch::Tensor& per_chain, const torch::Tensor& targets,
                    double tau);
  // Ends the current sample (after every split was added).
  void end_sample() { ++count_; }

  int64_t count() const { return count_; }
  bool has(const std::string& split) const { return sums_.count(split) > 0; }
  torch::Tensor mean(const std::string& split) const;             // undefined before the first sample
  torch::Tensor log_density_sum(const std::string& split) const;  // undefined without mixture densities
  // The mean with its expected entropy (classification) or predictive variance (regression).
  PredictiveSummary summary(const std::string& split) const;
  // The same with the sample count a 0-dim float64 tensor on the sums' device: the divisions read it
  // there, so a captured evaluation replays them right as the count grows (the host's count would
  // be a constant of the graph). Classification only (a regression's variance has a host term).
  PredictiveSummary summary(const std::string& split, const torch::Tensor& count) const;
  // The predictive over the chains of every rank (distributed.mode: chains; a collective: every
  // rank calls it with the same splits and count): sums averaged over ranks, lse by log-mean-exp.
  PosteriorPredictive all_ranks(Communicator& comm) const;

  // Every running sum's tensor, split by split (the inputs of a captured sample or evaluation:
  // train/phase_graph.h keys a graph by their addresses).
  std::vector<torch::Tensor> buffers() const;

  // Checkpoint entries "avg_", "lse_", "ent_", "sq_", "noise_<split>" (the count is the caller's: the
  // run's counters). A checkpoint of an earlier version without the last three resumes without
  // the metrics that need them.
  void save(torch::serialize::OutputArchive& ar) const;
  void load(torch::serialize::InputArchive& ar, const torch::Device& device, int64_t count,
            const std::vector<std::string>& splits);

 private:
  struct Sums {
    torch::Tensor sum;  // Σ_s of the chain-mean predictions (float64)
    torch::Tensor lse;  // log Σ_s of the mixture density per point
    torch::Tensor ent;  // classification: Σ_s of the chain-mean entropy per point
    torch::Tensor sq;   // regression: Σ_s of the chain-mean f² per point
    double noise = 0;   // regression: Σ_s 1/τ_s
    bool complete = true;  // ent / sq / noise cover every sample (false after an old checkpoint)
  };
  static void add_spread(Sums& s, const torch::Tensor& per_chain, double tau);

  bool mixture_density_;
  int64_t count_ = 0;
  std::map<std::string, Sums> sums_;
};

}  // namespace sgmcmc
