#include "metrics/predictive_metrics.h"

#include <cmath>
#include <utility>

#include "metrics/host_reads.h"

namespace sgmcmc {

namespace {

constexpr double kZ50 = 0.6744897501960817;  // Φ⁻¹(0.75)
constexpr double kZ90 = 1.6448536269514722;  // Φ⁻¹(0.95)

// Every value below is a device scalar read back in one copy (metrics/host_reads.h).
void classification_metrics(const PredictiveSummary& pr, const torch::Tensor& targets, std::map<std::string, double>& m) {
  auto p = pr.mean.to(torch::kFloat64);
  auto pred = p.argmax(1);
  const double n = static_cast<double>(p.size(0));
  HostReads r;
  const size_t error = r.add(pred.ne(targets).to(torch::kFloat64).mean());
  auto py = p.gather(1, targets.unsqueeze(1)).squeeze(1).clamp_min(1e-300);
  const size_t mean_log_py = r.add(py.log().mean());
  auto onehot = torch::zeros_like(p).scatter_(1, targets.unsqueeze(1), 1.0);
  const size_t brier = r.add((p - onehot).square().sum(1).mean());
  const CalibrationBins b = calibration_bins(p, targets);
  auto gap = (b.correct - b.confidence).abs();  // |Σ acc − Σ conf| per bin
  const size_t gap_sum = r.add(gap.sum());
  // the largest per-bin gap over the non-empty bins: an empty bin's gap is |0 − 0| / 1 = 0 and no
  // gap is negative, so the maximum over every bin is the same (and needs no masked_select, whose
  // result size is a device sync of its own)
  const size_t mce = r.add((gap / b.count.clamp_min(1)).max());
  auto h = entropy_of(p);
  const size_t entropy = r.add(h.mean());
  const bool has_mi = pr.expected_entropy.defined();
  const size_t mi = has_mi ? r.add((h - pr.expected_entropy.to(torch::kFloat64)).mean()) : 0;
  const auto v = r.read();
  m["error"] = v[error];
  m["nll"] = -v[mean_log_py];
  m["brier"] = v[brier];
  m["ece"] = v[gap_sum] / n;
  m["mce"] = v[mce];
  m["entropy"] = v[entropy];
  if (has_mi) m["mi"] = v[mi];
}

void regression_metrics(const PredictiveSummary& pr, const torch::Tensor& targets, double tau, bool clip, double lo,
                        double hi, std::map<std::string, double>& m) {
  auto f = pr.mean.to(torch::kFloat64);
  if (clip) f = f.clamp(lo, hi);
  auto res = f - targets.to(torch::kFloat64);
  HostReads r;
  const size_t mean_r2 = r.add(res.square().mean());
  auto sd = pr.variance.defined() ? pr.variance.to(torch::kFloat64).clamp_min(0).sqrt()
                                  : torch::full_like(f, 1.0 / std::sqrt(tau));
  const std::pair<const char*, double> levels[] = {{"50", kZ50}, {"90", kZ90}};
  size_t cover[2], width[2];
  for (int k = 0; k < 2; ++k) {
    const double z = levels[k].second;
    cover[k] = r.add(res.abs().le(z * sd).to(torch::kFloat64).mean());
    width[k] = r.add((2 * z * sd).mean());
  }
  const auto v = r.read();
  m["rmse"] = std::sqrt(v[mean_r2]);
  m["nll"] = 0.5 * tau * v[mean_r2] - 0.5 * std::log(tau) + 0.5 * std::log(2 * M_PI);
  for (int k = 0; k < 2; ++k) {
    m[std::string("cover") + levels[k].first] = v[cover[k]];
    m[std::string("width") + levels[k].first] = v[width[k]];
  }
}

}  // namespace

CalibrationBins calibration_bins(const torch::Tensor& probs, const torch::Tensor& targets, int64_t bins) {
  auto p = probs.to(torch::kFloat64);
  auto conf = p.amax(1);
  auto correct = p.argmax(1).eq(targets).to(torch::kFloat64);
  auto bin = (conf * bins).floor().clamp(0, bins - 1).to(torch::kInt64);
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
  std::map<std::string, double> m;
  if (!predictive.mean.defined() || predictive.mean.size(0) == 0) return m;
  torch::NoGradGuard no_grad;
  if (classification) classification_metrics(predictive, targets, m);
  else regression_metrics(predictive, targets, tau, clip, lo, hi, m);
  return m;
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
