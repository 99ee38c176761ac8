// What the topic models' local Gibbs steps draw from (models/lda.h, models/dpfa.h): a counter-based
// uniform stream seeded from a hash of the state the draws start at, so that a resumed run and
// `sgmcmc predict` repeat a step's draws bit for bit without a generator in the checkpoint.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace sgmcmc {
namespace local_draws {

inline uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A counter-based uniform stream (splitmix64).
class Stream {
 public:
  explicit Stream(uint64_t seed) : state_(seed) {}
  double uniform() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return static_cast<double>(mix(state_) >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

// FNV-1a over a tensor's bytes (CPU, contiguous): the draws are a function of the state they start from.
inline uint64_t hash_of(const torch::Tensor& t, uint64_t h = 1469598103934665603ULL) {
  const auto c = t.to(torch::kCPU).contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  const size_t n = c.numel() * c.element_size();
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

// Draws k from unnormalized weights p[0..K) (their sum `total`).
inline int64_t draw(const double* p, int64_t K, double total, Stream& s) {
  double u = s.uniform() * total;
  for (int64_t k = 0; k < K - 1; ++k) {
    u -= p[k];
    if (u < 0) return k;
  }
  return K - 1;
}

// A row of a bag-of-words split (data/bow.h): its word ids from column `first` (a training row's 1, a
// held-out point's observed half from 2), padded with −1.
inline std::vector<int64_t> row_tokens(const torch::Tensor& row, int64_t first = 1) {
  const auto r = row.to(torch::kCPU).contiguous();
  const int64_t* p = r.data_ptr<int64_t>();
  std::vector<int64_t> out;
  for (int64_t j = first; j < r.numel() && p[j] >= 0; ++j) out.push_back(p[j]);
  return out;
}

// The first row of each run of rows with one document index (column 0) in a held-out split [T, width]
// (a document's points are consecutive), then T.
inline std::vector<int64_t> document_starts(const torch::Tensor& in) {
  std::vector<int64_t> starts;
  const int64_t T = in.size(0), width = in.size(1);
  const int64_t* rows = in.data_ptr<int64_t>();
  for (int64_t i = 0; i < T; ++i)
    if (i == 0 || rows[i * width] != rows[(i - 1) * width]) starts.push_back(i);
  starts.push_back(T);
  return starts;
}

// A held-out split's predictive [T, 2] (data/bow.h): [p(word of row t | its document), 1 − p], from the
// document's mixture weights over topics `eta` [K] and the topics `topics` [K, W] (float64, CPU).
inline void write_word_probabilities(const torch::Tensor& in, int64_t first, int64_t end, const std::vector<double>& eta,
                                     const torch::Tensor& topics, torch::Tensor& out) {
  const int64_t K = topics.size(0), W = topics.size(1);
  const double* pi = topics.data_ptr<double>();
  const int64_t* rows = in.data_ptr<int64_t>();
  auto o = out.accessor<float, 2>();
  for (int64_t t = first; t < end; ++t) {
    const int64_t w = rows[t * in.size(1) + 1];
    double p = 0;
    for (int64_t k = 0; k < K; ++k) p += eta[k] * pi[k * W + w];
    o[t][0] = static_cast<float>(p);
    o[t][1] = static_cast<float>(1 - p);
  }
}

}  // namespace local_draws
}  // namespace sgmcmc
