// Convergence traces over the thinned samples of all chains: per sample, each chain's mean test
// log-likelihood [C] and its first few weights [C, k]. Their split-R̂ and ESS (metrics/convergence.h)
// go into summary.json.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "distributed/communicator.h"

namespace sgmcmc {

class ConvergenceTrace {
 public:
  static constexpr int64_t kWeights = 3;  // weights traced per chain

  // One sample: chain log-likelihoods [C] and traced weights [C, k] (copied, float64, kept on their
  // device: a copy to the host per sample would wait for the device; they come to the host
  // together, stacked, for the diagnostics and the checkpoint).
  void record(const torch::Tensor& chain_loglik, const torch::Tensor& weights);
  size_t size() const { return loglik_.size(); }
  // The traces of every rank's chains side by side (a collective: [S, W·C]; chains mode).
  ConvergenceTrace all_ranks(Communicator& comm) const;

  // rhat_test_loglik, ess_test_loglik, rhat_weights_max, ess_weights_min; empty under 4 samples.
  std::map<std::string, double> diagnostics() const;

  // Checkpoint entries "trace_ll" [S, C] and "trace_w" [S, C, k] (on the CPU); load() puts them on `device`.
  void save(torch::serialize::OutputArchive& ar) const;
  void load(torch::serialize::InputArchive& ar, const torch::Device& device);

 private:
  std::vector<torch::Tensor> loglik_, weights_;
};

}  // namespace sgmcmc
