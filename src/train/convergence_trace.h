// Convergence traces over the thinned samples of all chains: per sample, each chain's mean test
// log-likelihood [C], its first few weights [C, k] and its predictions at a few test points [C, m]
// (function space: a network's weights can move between equivalent modes while its predictions
// agree). Their split-R̂ and ESS (metrics/convergence.h) go into summary.json, and converged() judges
// them all together.
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "distributed/communicator.h"

namespace sgmcmc {

class ConvergenceTrace {
 public:
  static constexpr int64_t kWeights = 3;       // weights traced per chain
  static constexpr int64_t kPredictions = 16;  // test points whose predictions are traced per chain
  // The verdict's thresholds: split-R̂ below kMaxRhat (Vehtari et al. 2021) and an ESS of at least
  // kMinEssPerChain per chain, for every traced quantity.
  static constexpr double kMaxRhat = 1.01, kMinEssPerChain = 100;

  // The test points traced: kPredictions spread evenly over a test set of `n` (fewer when n is smaller).
  static torch::Tensor prediction_points(int64_t n);
  // Per chain, the traced predictions of a sample's per-chain test predictions: means [C, n] (regression)
  // or class probabilities [C, n, K], the true label's probability at each point → [C, m].
  static torch::Tensor traced_predictions(const torch::Tensor& per_chain, const torch::Tensor& targets);

  // One sample: chain log-likelihoods [C] and traced weights [C, k] (copied, float64, kept on their
  // device: a copy to the host per sample would wait for the device; they come to the host
  // together, stacked, for the diagnostics and the checkpoint).
  void record(const torch::Tensor& chain_loglik, const torch::Tensor& weights,
              const torch::Tensor& predictions = torch::Tensor());
  size_t size() const { return loglik_.size(); }
  // The traces of every rank's chains side by side (a collective: [S, W·C]; chains mode).
  ConvergenceTrace all_ranks(Communicator& comm) const;

  // rhat_test_loglik, ess_test_loglik, rhat_weights_max, ess_weights_min, rhat_predictions_max,
  // ess_predictions_min (with predictions recorded), and stalled (1 when no traced quantity moved between
  // samples beyond float rounding: a chain that does not move, whose R̂ would read 1); empty under 4
  // samples.
  std::map<std::string, double> diagnostics() const;

  // The verdict over diagnostics() of `chains` chains: "" when every R̂ and ESS passes and nothing
  // stalled, else one line saying what failed and what to do.
  static std::string verdict(const std::map<std::string, double>& diagnostics, double chains, double samples);
  // The same from a run's summary values (its rhat_*, ess_*, stalled, samples, chains / chains_all_ranks);
  // nullopt when they hold no diagnostics.
  static std::optional<std::string> verdict_of_summary(const std::map<std::string, double>& values);
  // The traced quantities as the verdict names them: (R-hat key, ESS key, words).
  static const std::vector<std::tuple<const char*, const char*, const char*>>& traced();

  // Checkpoint entries "trace_ll" [S, C] and "trace_w" [S, C, k] (on the CPU); load() puts them on `device`.
  void save(torch::serialize::OutputArchive& ar) const;
  void load(torch::serialize::InputArchive& ar, const torch::Device& device);

 private:
  std::vector<torch::Tensor> loglik_, weights_, predictions_;
};

}  // namespace sgmcmc
