#include "metrics/predictive_metrics.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "metrics/host_reads.h"

namespace sgmcmc {

namespace {

constexpr double kZ50 = 0.6744897501960817;  // Φ⁻¹(0.75)
constexpr double kZ90 = 1.6448536269514722;  // Φ⁻¹(0.95)

constexpr int64_t kBins = kCalibrationBins;

// The equal-width bin of each top-label confidence in [0, 1] (1 itself in the last bin). A NaN
// confidence goes to bin 0 rather than to an int64 cast of NaN, an invalid index (a device-side
// assert on a GPU): the trainer's divergence check reads in the same batch as these metrics.
torch::Tensor confidence_bin(const torch::Tensor& conf, int64_t bins) {
  return (conf * bins).floor().nan_to_num(0).clamp(0, bins - 1).to(torch::kInt64);
}

// The segment id of every point of `sizes` concatenated (on `options`' device, without a host copy).
torch::Tensor segment_ids(const std::vector<int64_t>& sizes, const torch::TensorOptions& options) {
  std::vector<torch::Tensor> parts;
  for (size_t k = 0; k < sizes.size(); ++k) parts.push_back(torch::full({sizes[k]}, static_cast<int64_t>(k), options));
  return torch::cat(parts);
}

torch::Tensor cat_or_one(const std::vector<torch::Tensor>& parts) { return parts.size() == 1 ? parts[0] : torch::cat(parts); }

}  // namespace

size_t MetricsBatch::add(const PredictiveSummary& predictive, const torch::Tensor& targets,
                         const torch::Tensor& pointwise_nll) {
  Request r{predictive, targets, pointwise_nll, 0};
  if (predictive.mean.defined()) r.n = predictive.mean.size(0);
  requests_.push_back(std::move(r));
  return requests_.size() - 1;
}

torch::Tensor MetricsBatch::pack() {
  torch::NoGradGuard no_grad;
  HostReads reads;
  scalar_at_.clear();
  for (const auto& t : scalars_) scalar_at_.push_back(reads.add(t));
  finish_ = nullptr;
  bool any = false;
  for (const auto& r : requests_) any = any || r.n > 0;
  if (any) finish_ = classification_ ? queue_classification(reads) : queue_regression(reads);
  return reads.packed();
}

void MetricsBatch::unpack(const std::vector<double>& v) {
  results_.assign(requests_.size(), {});
  scalar_values_.clear();
  for (size_t at : scalar_at_) scalar_values_.push_back(v.at(at));
  if (finish_) finish_(*this, v);
}

// Per point: the error indicator, log p̄(y), the Brier term and H(p̄), summed per predictive; the
// calibration bins of every predictive in one index_add (bin b of predictive k at k·15 + b).
MetricsBatch::Finish MetricsBatch::queue_classification(HostReads& reads) {
  std::vector<size_t> active;
  std::vector<torch::Tensor> probs, targets;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i].n == 0) continue;
    active.push_back(i);
    probs.push_back(requests_[i].predictive.mean.to(torch::kFloat64));
    targets.push_back(requests_[i].targets.to(torch::kInt64));
    sizes.push_back(requests_[i].n);
  }
  const auto p = cat_or_one(probs);
  const auto y = cat_or_one(targets).unsqueeze(1);
  const auto [conf, pred] = p.max(1);
  const auto correct = pred.eq(y.squeeze(1)).to(torch::kFloat64);
  const auto log_py = p.gather(1, y).squeeze(1).clamp_min(1e-300).log();
  const auto brier = (p - torch::zeros_like(p).scatter_(1, y, 1.0)).square().sum(1);
  const auto point = torch::stack({1.0 - correct, log_py, brier, entropy_of(p)}, 1);  // [N, 4]
  auto bin = confidence_bin(conf, kBins);
  const int64_t segments = static_cast<int64_t>(active.size());
  if (segments > 1) bin = bin + segment_ids(sizes, bin.options()) * kBins;
  const auto bins = torch::zeros({segments * kBins, 3}, p.options())
                        .index_add_(0, bin, torch::stack({torch::ones_like(conf), correct, conf}, 1))
                        .view({segments, kBins, 3});
  const auto gap = (bins.select(2, 1) - bins.select(2, 2)).abs();  // |Σ acc − Σ conf| per bin
  // the largest per-bin gap over the non-empty bins: an empty bin's gap is |0 − 0| / 1 = 0 and no
  // gap is negative, so the maximum over every bin is the same (and needs no masked_select, whose
  // result size is a device sync of its own)
  const size_t gap_sum = reads.add_all(gap.sum(1)), mce = reads.add_all((gap / bins.select(2, 0).clamp_min(1)).amax(1));
  struct At {
    size_t sums, expected_entropy, nll;
    bool has_mi, has_nll;
  };
  std::vector<At> at;
  int64_t offset = 0;
  for (size_t k = 0; k < active.size(); ++k) {
    const Request& r = requests_[active[k]];
    At a{reads.add_all(point.narrow(0, offset, r.n).sum(0)), 0, 0, r.predictive.expected_entropy.defined(),
         r.pointwise_nll.defined()};
    if (a.has_mi) a.expected_entropy = reads.add(r.predictive.expected_entropy.to(torch::kFloat64).sum());
    if (a.has_nll) a.nll = reads.add(r.pointwise_nll.to(torch::kFloat64).sum());
    at.push_back(a);
    offset += r.n;
  }
  return [active, at, gap_sum, mce](MetricsBatch& b, const std::vector<double>& v) {
    for (size_t k = 0; k < active.size(); ++k) {
      const At& a = at[k];
      const double n = static_cast<double>(b.requests_[active[k]].n);
      auto& m = b.results_[active[k]];
      m["error"] = v[a.sums] / n;
      m["nll"] = a.has_nll ? v[a.nll] / n : -v[a.sums + 1] / n;
      m["brier"] = v[a.sums + 2] / n;
      m["ece"] = v[gap_sum + k] / n;
      m["mce"] = v[mce + k];
      m["entropy"] = v[a.sums + 3] / n;
      if (a.has_mi) m["mi"] = (v[a.sums + 3] - v[a.expected_entropy]) / n;
    }
  };
}

// Per point: (f − y)², whether y lies in the central 50 % and 90 % intervals, and the predictive sd
// (the intervals' mean width is 2z · mean sd), summed per predictive.
MetricsBatch::Finish MetricsBatch::queue_regression(HostReads& reads) {
  std::vector<size_t> active;
  std::vector<torch::Tensor> means, targets, sds;
  for (size_t i = 0; i < requests_.size(); ++i) {
    const Request& r = requests_[i];
    if (r.n == 0) continue;
    active.push_back(i);
    auto f = r.predictive.mean.to(torch::kFloat64);
    means.push_back(clip_ ? f.clamp(lo_, hi_) : f);
    targets.push_back(r.targets.to(torch::kFloat64));
    sds.push_back(r.predictive.variance.defined() ? r.predictive.variance.to(torch::kFloat64).clamp_min(0).sqrt()
                                                  : torch::full_like(f, 1.0 / std::sqrt(tau_)));
  }
  const auto sd = cat_or_one(sds);
  const auto res = (cat_or_one(means) - cat_or_one(targets)).abs();
  const auto point =
      torch::stack({res.square(), res.le(kZ50 * sd).to(torch::kFloat64), res.le(kZ90 * sd).to(torch::kFloat64), sd}, 1);
  std::vector<size_t> sums, nll;
  int64_t offset = 0;
  for (size_t i : active) {
    const Request& r = requests_[i];
    sums.push_back(reads.add_all(point.narrow(0, offset, r.n).sum(0)));
    nll.push_back(r.pointwise_nll.defined() ? reads.add(r.pointwise_nll.to(torch::kFloat64).sum()) : SIZE_MAX);
    offset += r.n;
  }
  return [active, sums, nll](MetricsBatch& b, const std::vector<double>& v) {
    const double tau = b.tau_;
    for (size_t k = 0; k < active.size(); ++k) {
      const double n = static_cast<double>(b.requests_[active[k]].n);
      const size_t s = sums[k];
      auto& m = b.results_[active[k]];
      const double mean_r2 = v[s] / n;
      m["rmse"] = std::sqrt(mean_r2);
      m["nll"] = nll[k] != SIZE_MAX ? v[nll[k]] / n
                                    : 0.5 * tau * mean_r2 - 0.5 * std::log(tau) + 0.5 * std::log(2 * M_PI);
      m["cover50"] = v[s + 1] / n;
      m["cover90"] = v[s + 2] / n;
      m["width50"] = 2 * kZ50 * v[s + 3] / n;
      m["width90"] = 2 * kZ90 * v[s + 3] / n;
    }
  };
}


CalibrationBins calibration_bins(const torch::Tensor& probs, const torch::Tensor& targets, int64_t bins) {
  auto p = probs.to(torch::kFloat64);
  auto conf = p.amax(1);
  auto correct = p.argmax(1).eq(targets).to(torch::kFloat64);
  auto bin = confidence_bin(conf, bins);
  auto zeros = torch::zeros({bins}, p.options());
  return {zeros.index_add(0, bin, torch::ones_like(conf)), zeros.index_add(0, bin, correct),
          zeros.index_add(0, bin, conf)};
}

double auroc(const torch::Tensor& pos, const torch::Tensor& neg) {
  const int64_t np = pos.numel(), nn = neg.numel();
  if (np == 0 || nn == 0) return NAN;
  auto all = torch::cat({pos.flatten(), neg.flatten()}).to(torch::kFloat64).cpu();
  auto sorted = all.sort();
  auto values = std::get<0>(sorted);
  auto order = std::get<1>(sorted);
  auto [unique, inverse, counts] = torch::unique_consecutive(values, /*return_inverse=*/true, /*return_counts=*/true);
  // Average rank (1-based) of each group of tied values.
  auto ends = counts.cumsum(0).to(torch::kFloat64);
  auto avg_rank = ends - (counts.to(torch::kFloat64) - 1) / 2;
  auto ranks = torch::empty_like(values);
  ranks.index_put_({order}, avg_rank.index_select(0, inverse));
  const double rank_sum = ranks.narrow(0, 0, np).sum().item<double>();
  return (rank_sum - np * (np + 1) / 2.0) / (static_cast<double>(np) * nn);
}

double average_precision(const torch::Tensor& pos, const torch::Tensor& neg) {
  const int64_t np = pos.numel(), nn = neg.numel();
  if (np == 0 || nn == 0) return NAN;
  auto s = torch::cat({pos.flatten(), neg.flatten()}).to(torch::kFloat64).cpu().contiguous();
  auto order = std::get<1>(s.sort(/*dim=*/0, /*descending=*/true));
  const auto* v = s.data_ptr<double>();
  const auto* o = order.data_ptr<int64_t>();
  double ap = 0, tp = 0, seen = 0, prev_recall = 0;
  for (int64_t i = 0, n = np + nn; i < n;) {
    const double t = v[o[i]];
    for (; i < n && v[o[i]] == t; ++i) {  // every point scored t crosses the threshold together
      seen += 1;
      if (o[i] < np) tp += 1;
    }
    const double recall = tp / np;
    ap += (recall - prev_recall) * (tp / seen);
    prev_recall = recall;
  }
  return ap;
}

std::map<std::string, double> ood_metrics(const PredictiveSummary& in, const PredictiveSummary& ood) {
  if (!in.mean.defined() || !ood.mean.defined()) return {};
  const auto h_in = entropy_of(in.mean), h_ood = entropy_of(ood.mean);
  std::map<std::string, double> m = {{"ood_auroc_entropy", auroc(h_ood, h_in)},
                                     {"ood_aupr_entropy", average_precision(h_ood, h_in)},
                                     {"ood_auroc_mi", NAN}, {"ood_aupr_mi", NAN}};
  if (in.expected_entropy.defined() && ood.expected_entropy.defined()) {
    const auto mi_in = h_in - in.expected_entropy.to(torch::kFloat64);
    const auto mi_ood = h_ood - ood.expected_entropy.to(torch::kFloat64);
    m["ood_auroc_mi"] = auroc(mi_ood, mi_in);
    m["ood_aupr_mi"] = average_precision(mi_ood, mi_in);
  }
  return m;
}

torch::Tensor entropy_of(const torch::Tensor& probs) {
  auto p = probs.to(torch::kFloat64);
  return -torch::special_xlogy(p, p).sum(-1);
}

std::map<std::string, double> predictive_metrics(const PredictiveSummary& predictive, const torch::Tensor& targets,
                                                 bool classification, double tau, bool clip, double lo, double hi) {
  MetricsBatch batch(classification, tau, clip, lo, hi);
  batch.add(predictive, targets);
  batch.compute();
  return batch.metrics(0);
}

std::map<std::string, double> predictive_metrics(const torch::Tensor& prediction, const torch::Tensor& targets,
                                                 bool classification, double tau, bool clip, double lo, double hi) {
  return predictive_metrics(PredictiveSummary{prediction, {}, {}}, targets, classification, tau, clip, lo, hi);
}

torch::Tensor gaussian_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau) {
  auto r2 = (f.to(torch::kFloat64) - y.to(torch::kFloat64)).pow(2);
  return -0.5 * tau * r2 + 0.5 * std::log(tau) - 0.5 * std::log(2 * M_PI);
}

torch::Tensor mixture_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau) {
  if (f.dim() == 1) return gaussian_log_density(f, y, tau);
  auto ld = gaussian_log_density(f, y.unsqueeze(0), tau);
  return torch::logsumexp(ld, 0) - std::log(static_cast<double>(f.size(0)));
}

torch::Tensor chain_log_likelihood(const torch::Tensor& per_chain, const torch::Tensor& targets, bool classification,
                                   double tau) {
  auto p = per_chain.to(torch::kFloat64);
  if (classification) {
    auto idx = targets.to(torch::kInt64).view({1, -1, 1}).expand({p.size(0), -1, 1});
    return p.gather(2, idx).squeeze(2).clamp_min(1e-300).log().mean(1);
  }
  auto r = p - targets.to(torch::kFloat64).unsqueeze(0);
  return (0.5 * std::log(tau / (2 * M_PI)) - 0.5 * tau * r.square()).mean(1);
}

}  // namespace sgmcmc
