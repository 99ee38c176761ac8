// Metrics of a predictive distribution on labelled points: the one place where a new metric goes
// (it then appears in metrics.csv, summary.json and `sgmcmc predict` alike).
//
//  classification, mean = class probabilities p̄ [n, K] (averaged over the predictive's members):
//    error = mean 1[argmax p̄ ≠ y],   nll = −mean log p̄(y),   brier = mean Σ_k (p̄_k − 1[y = k])²
//    ece / mce: top-label calibration over 15 equal-width confidence bins B_b (conf = max_k p̄_k):
//      ece = Σ_b |B_b|/n · |acc(B_b) − conf(B_b)|,  mce = max over non-empty bins of the same gap
//    entropy = mean H(p̄) (total uncertainty);  mi = mean [H(p̄) − E_m H(p_m)] over the members m
//      (the epistemic part, mutual information between the label and the parameters; only for
//      predictives of several members: samples and chains)
//  regression, mean = predictive means f [n] with Gaussian noise precision τ:
//    rmse = sqrt(mean (f − y)²),   nll = mean τ(f − y)²/2 − log(τ)/2 + log(2π)/2
//    cover50 / cover90: the share of targets inside the central 50 % / 90 % predictive interval,
//    width50 / width90 its mean width; the interval of N(f, v) with v the predictive variance
//    (members: E_m[1/τ_m] + Var_m f_m, the moment-matched Gaussian of the mixture; else 1/τ)
// Densities for the mixture predictive of regression samplers: log N(y; f, 1/τ) per point, and
// log (1/C) Σ_c N(y; f_c, 1/τ) for per-chain predictions [C, n].
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "metrics/host_reads.h"

namespace sgmcmc {

// A predictive distribution on n points.
struct PredictiveSummary {
  torch::Tensor mean;              // classification: probabilities [n, K]; regression: means [n]
  torch::Tensor expected_entropy;  // classification with several members: E_m H(p_m) per point [n]
  torch::Tensor variance;          // regression with several members: predictive variance per point [n]
};

// The metrics of several predictives (the definitions above) computed together: the points of
// every predictive are concatenated and the per-point terms computed once over all of them, then
// summed per predictive, and every value (with any scalars queued beside them) comes back in one
// host read. On a GPU a metrics row's cost is its kernel launches and its waits for the device;
// one batch of the three predictives of an evaluation (the current sample's, the averaged test and
// validation ones) launches about a third of what three single calls do and waits once.
class MetricsBatch {
 public:
  // Predictions clipped to [lo, hi] when `clip` (regression).
  explicit MetricsBatch(bool classification, double tau = 1.0, bool clip = false, double lo = 0, double hi = 0)
      : classification_(classification), tau_(tau), clip_(clip), lo_(lo), hi_(hi) {}

  // Queues a predictive on labelled points; returns its index for metrics(). `pointwise_nll` [n]
  // (optional) replaces the formula's nll per point (the mixture density of standardized
  // regression targets). An undefined or empty mean gets empty metrics.
  size_t add(const PredictiveSummary& predictive, const torch::Tensor& targets, const torch::Tensor& pointwise_nll = {});
  // Queues a device scalar to come back in the same read; returns its index for scalar().
  size_t add_scalar(const torch::Tensor& scalar) {
    scalars_.push_back(scalar);
    return scalars_.size() - 1;
  }

  // Computes everything queued (one host read); then metrics() and scalar() answer.
  void compute() { unpack(HostReads::to_host(pack())); }
  // compute() in its two halves. pack(): every per-point term, sum and queued scalar as one float64
  // vector on the device, with no host read (what a CUDA graph of an evaluation captures: its host
  // bookkeeping, here, is the same at every replay); unpack(): those values, read to the host, into
  // metrics() and scalar(). A batch may be unpacked again after its packed vector is refreshed.
  torch::Tensor pack();
  void unpack(const std::vector<double>& values);
  const std::map<std::string, double>& metrics(size_t i) const { return results_.at(i); }
  double scalar(size_t i) const { return scalar_values_.at(i); }
  bool has_pointwise_nll(size_t i) const { return requests_.at(i).pointwise_nll.defined(); }

 private:
  struct Request {
    PredictiveSummary predictive;
    torch::Tensor targets, pointwise_nll;
    int64_t n = 0;
  };
  // Queue the per-predictive sums into `reads`; finish(batch, v) then turns the values into the
  // batch's metrics (the batch as an argument: it may have moved since).
  using Finish = std::function<void(MetricsBatch&, const std::vector<double>&)>;
  Finish queue_classification(HostReads& reads);
  Finish queue_regression(HostReads& reads);

  bool classification_;
  double tau_;
  bool clip_;
  double lo_, hi_;
  std::vector<Request> requests_;
  std::vector<torch::Tensor> scalars_;
  std::vector<std::map<std::string, double>> results_;
  std::vector<double> scalar_values_;
  std::vector<size_t> scalar_at_;  // pack(): where each queued scalar lies in the values
  Finish finish_;
};

// The metrics above (predictions clipped to [lo, hi] when `clip`). Empty for an undefined or empty mean.
std::map<std::string, double> predictive_metrics(const PredictiveSummary& predictive, const torch::Tensor& targets,
                                                 bool classification, double tau = 1.0, bool clip = false,
                                                 double lo = 0, double hi = 0);
// A point prediction (one member).
std::map<std::string, double> predictive_metrics(const torch::Tensor& prediction, const torch::Tensor& targets,
                                                 bool classification, double tau = 1.0, bool clip = false,
                                                 double lo = 0, double hi = 0);

// Out-of-distribution detection, OOD points the positives: each score s (higher = more likely OOD)
// of the in-distribution predictive `in` against the OOD predictive `ood`:
//   auroc = P(s_ood > s_in) + ½ P(s_ood = s_in)   (Mann–Whitney, ties counted half)
//   aupr  = Σ_t (R_t − R_{t−1}) P_t over the distinct thresholds t, descending (average precision)
// Scores: the entropy H(p̄) (keys ood_auroc_entropy, ood_aupr_entropy) and, when both have several
// members (expected_entropy), the mutual information H(p̄) − E_m H(p_m) (ood_auroc_mi, ood_aupr_mi;
// NaN otherwise). Empty when either predictive is undefined.
// Top-label calibration bins (equal width on [0, 1], conf = max_k p_k): per bin the count, the sum
// of correct indicators and the sum of confidences (float64, [bins]). ECE = Σ|correct − confidence|/n.
struct CalibrationBins {
  torch::Tensor count, correct, confidence;
};
constexpr int64_t kCalibrationBins = 15;
CalibrationBins calibration_bins(const torch::Tensor& probs, const torch::Tensor& targets,
                                 int64_t bins = kCalibrationBins);

std::map<std::string, double> ood_metrics(const PredictiveSummary& in, const PredictiveSummary& ood);
double auroc(const torch::Tensor& positive_scores, const torch::Tensor& negative_scores);
double average_precision(const torch::Tensor& positive_scores, const torch::Tensor& negative_scores);

// Entropy of each row of probabilities [..., K] -> [...] (float64; 0 log 0 = 0).
torch::Tensor entropy_of(const torch::Tensor& probs);

// log N(y; f, 1/τ) per point (float64).
torch::Tensor gaussian_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau);

// log (1/C) Σ_c N(y; f_c, 1/τ) per point from predictions [C, n] (or log N(y; f, 1/τ) for [n]).
torch::Tensor mixture_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau);

// Mean log-likelihood of each chain's prediction [C] from per-chain predictions [C, n, ...]:
// classification log p_c(y); regression log N(y; f_c, 1/τ).
torch::Tensor chain_log_likelihood(const torch::Tensor& per_chain, const torch::Tensor& targets, bool classification,
                                   double tau);

}  // namespace sgmcmc
