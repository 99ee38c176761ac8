// Deep Poisson factor analysis (models/dpfa.h) and the corpus options it streams with (data/bow.h):
// - the collapsed count likelihood (θ and p integrated out) against numerical integration of the
//   Poisson–Gamma–Beta model it comes from;
// - every Gibbs conditional of the local step (tokens' topics, the topic units, the SBN's hidden units)
//   against enumeration of a tiny network's joint, written here independently of the model;
// - the local chain's marginals against the enumerated posterior;
// - recovery of known topics from a corpus drawn from DPFA's own generative model, through the trainer;
// - data.max_words and data.chunk_tokens on a small corpus.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>

#include "config/experiment_config.h"
#include "core/remove_tree.h"
#include "data/bow.h"
#include "models/dpfa.h"
#include "tiny_idx.h"
#include "topic_match.h"
#include "train/model_io.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace sgmcmc;
using namespace sgmcmc::test_util;

namespace {

double log_sigmoid_term(double h, double psi) {  // log Bernoulli(h; σ(ψ))
  return h * psi - (psi > 0 ? psi + std::log1p(std::exp(-psi)) : std::log1p(std::exp(psi)));
}

// A tiny DPFA: 3 words, layers 2-2-1, globals chosen by hand (unequal, so that no conditional is flat).
DpfaGlobals tiny_globals() {
  DpfaGlobals g;
  g.words = 3;
  g.layers = {2, 2, 1};
  const double phi[2][3] = {{0.6, 0.3, 0.1}, {0.1, 0.2, 0.7}};
  g.phi_wk.resize(6);
  for (int w = 0; w < 3; ++w)
    for (int k = 0; k < 2; ++k) g.phi_wk[w * 2 + k] = phi[k][w];
  g.r = {0.7, 1.6};
  g.w = {{1.2, -0.8, -1.5, 0.9}, {2.0, -1.0}};  // W_1 [2, 2], W_2 [2, 1]
  g.c = {{-0.3, 0.4}, {0.2, -0.5}, {0.1}};
  g.p_a = 1.5, g.p_b = 2.0;
  return g;
}

// log p(z, w, h | globals) up to a constant, from the header's collapsed joint.
double log_joint(const DpfaGlobals& g, const std::vector<int64_t>& tokens, const std::vector<int64_t>& z,
                 const std::vector<std::vector<double>>& h) {
  const int64_t K = g.layers[0];
  std::vector<double> x(K, 0.0);
  double lp = 0;
  for (size_t i = 0; i < tokens.size(); ++i) x[z[i]] += 1, lp += std::log(g.phi_wk[tokens[i] * K + z[i]]);
  double R = 0;
  for (int64_t k = 0; k < K; ++k) {
    if (h[0][k] == 0) {
      if (x[k] > 0) return -INFINITY;
      continue;
    }
    lp += std::lgamma(x[k] + g.r[k]) - std::lgamma(g.r[k]);
    R += g.r[k];
  }
  const double X = static_cast<double>(tokens.size());
  lp += std::lgamma(g.p_b + R) - std::lgamma(g.p_a + X + g.p_b + R);
  for (size_t l = 0; l < g.layers.size(); ++l)
    for (int64_t k = 0; k < g.layers[l]; ++k) {
      double psi = g.c[l][k];
      if (l + 1 < g.layers.size())
        for (int64_t j = 0; j < g.layers[l + 1]; ++j) psi += g.w[l][k * g.layers[l + 1] + j] * h[l + 1][j];
      lp += log_sigmoid_term(h[l][k], psi);
    }
  return lp;
}

struct State {
  std::vector<int64_t> z;
  std::vector<std::vector<double>> h;
};

// Every (z, h) of the tiny network for `tokens`.
std::vector<State> all_states(const DpfaGlobals& g, size_t n_tokens) {
  std::vector<State> out;
  int64_t units = 0;
  for (auto k : g.layers) units += k;
  const int64_t K = g.layers[0];
  int64_t nz = 1;
  for (size_t i = 0; i < n_tokens; ++i) nz *= K;
  for (int64_t zc = 0; zc < nz; ++zc)
    for (int64_t hc = 0; hc < (int64_t{1} << units); ++hc) {
      State s;
      for (int64_t i = 0, v = zc; i < static_cast<int64_t>(n_tokens); ++i, v /= K) s.z.push_back(v % K);
      int64_t bit = 0;
      for (auto k : g.layers) {
        s.h.emplace_back();
        for (int64_t j = 0; j < k; ++j, ++bit) s.h.back().push_back(static_cast<double>((hc >> bit) & 1));
      }
      out.push_back(s);
    }
  return out;
}

}  // namespace

// NB(x; r, p) = ∫ Poisson(x; θ) Gamma(θ; r, p/(1−p)) dθ, and Beta(p; a, b) integrated over Π_k NB(x_k; r_k, p):
// the header's B(a + X, b + R)/B(a, b) · Π Γ(x_k + r_k)/(x_k! Γ(r_k)). Midpoint rules of 200,000 points
// (smooth integrands: their error is far below the 1e-6 relative tolerance).
TEST(Dpfa, CollapsedLikelihoodIsThePoissonGammaBetaIntegral) {
  const double r = 1.7, p = 0.35, scale = p / (1 - p);
  for (int x : {0, 1, 4}) {
    const int n = 200000;
    const double top = 60.0, d = top / n;
    double integral = 0;
    for (int i = 0; i < n; ++i) {
      const double t = (i + 0.5) * d;
      const double pois = std::exp(x * std::log(t) - t - std::lgamma(x + 1.0));
      const double gam = std::exp((r - 1) * std::log(t) - t / scale - std::lgamma(r) - r * std::log(scale));
      integral += pois * gam * d;
    }
    const double nb = std::exp(std::lgamma(x + r) - std::lgamma(x + 1.0) - std::lgamma(r) + x * std::log(p) +
                               r * std::log1p(-p));
    EXPECT_NEAR(integral / nb, 1.0, 1e-6) << "x " << x;
  }
  const std::vector<double> xs = {3, 0, 2}, rs = {0.7, 1.6, 2.5};
  const double a = 1.5, b = 2.0;
  const int n = 200000;
  double integral = 0;
  for (int i = 0; i < n; ++i) {
    const double q = (i + 0.5) / n;
    double lp = (a - 1) * std::log(q) + (b - 1) * std::log1p(-q) - (std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b));
    for (size_t k = 0; k < xs.size(); ++k)
      lp += std::lgamma(xs[k] + rs[k]) - std::lgamma(xs[k] + 1) - std::lgamma(rs[k]) + xs[k] * std::log(q) +
            rs[k] * std::log1p(-q);
    integral += std::exp(lp) / n;
  }
  double closed = std::lgamma(a + 5) + std::lgamma(b + 4.8) - std::lgamma(a + b + 9.8) -
                  (std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b));
  for (size_t k = 0; k < xs.size(); ++k) closed += std::lgamma(xs[k] + rs[k]) - std::lgamma(xs[k] + 1) - std::lgamma(rs[k]);
  EXPECT_NEAR(integral / std::exp(closed), 1.0, 1e-6);
}

// Every unit's log-odds and every token's topic probabilities, in every state of a 2-2-1 network over a
// 3-token document, equal the ratios of the enumerated joint (to rounding).
TEST(Dpfa, GibbsConditionalsMatchEnumeration) {
  const auto g = tiny_globals();
  const std::vector<int64_t> tokens = {0, 2, 2};
  DpfaDocument doc(g, tokens, 7);
  int64_t checked = 0;
  for (const auto& s : all_states(g, tokens.size())) {
    if (!std::isfinite(log_joint(g, tokens, s.z, s.h))) continue;
    doc.set_state(s.z, s.h);
    for (size_t l = 0; l < g.layers.size(); ++l)
      for (int64_t k = 0; k < g.layers[l]; ++k) {
        auto on = s.h, off = s.h;
        on[l][k] = 1, off[l][k] = 0;
        const double want = log_joint(g, tokens, s.z, on) - log_joint(g, tokens, s.z, off);
        const double got = doc.unit_log_odds(static_cast<int64_t>(l), k);
        if (std::isinf(want)) EXPECT_TRUE(std::isinf(got) && got > 0) << "layer " << l << " unit " << k;
        else EXPECT_NEAR(got, want, 1e-10) << "layer " << l << " unit " << k;
        ++checked;
      }
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::vector<double> p(2), want(2);
      const double total = doc.token_weights(static_cast<int64_t>(i), p.data());
      for (int64_t k = 0; k < 2; ++k) {
        auto z = s.z;
        z[i] = k;
        want[k] = std::exp(log_joint(g, tokens, z, s.h));
      }
      const double want_total = want[0] + want[1];
      for (int64_t k = 0; k < 2; ++k) EXPECT_NEAR(p[k] / total, want[k] / want_total, 1e-12) << "token " << i;
    }
  }
  EXPECT_GT(checked, 300);
}

// 200,000 sweeps of the local chain: each unit's and each token's marginals within 0.015 of the enumerated
// posterior's. A frequency's sd is at most 0.5/√n_eff; the chain's integrated autocorrelation here is
// below 10 sweeps (n_eff ≥ 20,000, sd ≤ 0.0035), so 0.015 is over 4 sd, while a wrong conditional (say
// the Beta factor dropped) moves the topic units' marginals by 0.1 or more.
TEST(Dpfa, LocalChainSamplesTheEnumeratedPosterior) {
  const auto g = tiny_globals();
  const std::vector<int64_t> tokens = {0, 2, 2};
  std::vector<double> exact_units(5, 0.0), exact_z(3, 0.0);
  double norm = 0;
  for (const auto& s : all_states(g, tokens.size())) {
    const double p = std::exp(log_joint(g, tokens, s.z, s.h));
    norm += p;
    int u = 0;
    for (const auto& layer : s.h)
      for (double v : layer) exact_units[u++] += p * v;
    for (size_t i = 0; i < 3; ++i) exact_z[i] += p * static_cast<double>(s.z[i] == 1);
  }
  DpfaDocument doc(g, tokens, 11);
  const int n = 200000;
  std::vector<double> units(5, 0.0), zs(3, 0.0);
  for (int it = 0; it < n + 1000; ++it) {
    doc.sweep();
    if (it < 1000) continue;
    int u = 0;
    for (const auto& layer : doc.h())
      for (double v : layer) units[u++] += v / n;
    for (size_t i = 0; i < 3; ++i) zs[i] += static_cast<double>(doc.z()[i] == 1) / n;
  }
  for (int u = 0; u < 5; ++u) EXPECT_NEAR(units[u], exact_units[u] / norm, 0.015) << "unit " << u;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(zs[i], exact_z[i] / norm, 0.015) << "token " << i;
}

// A corpus from DPFA's generative process: 4 topics over 24 words (each 0.9 of its mass on its own 6
// words), one hidden layer of 2 units switching topics {0, 1} or {2, 3} on (W_1 = ±4, c_1 = −2), θ_kn ~
// Gamma(20, 1) on the active topics (≈ 20 tokens each), 500 documents. The topics, as the samples' mean φ
// after burn-in matched to the truth by the best permutation, within total variation 0.06 each (the
// bound of LDA's recovery test, tests/test_lda.cpp: a topic holds ≈ 5,000 training tokens here too).
TEST(Dpfa, RecoversTheTopicsOfASyntheticCorpus) {
  const int64_t K = 4, W = 24, D = 500;
  std::vector<std::vector<double>> truth(K, std::vector<double>(W, 0.1 / W));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < 6; ++j) truth[k][k * 6 + j] += 0.9 / 6;
  std::mt19937_64 rng(42);
  std::bernoulli_distribution coin(0.5);
  std::gamma_distribution<double> theta(20.0, 1.0);
  const double w1[4][2] = {{4, -4}, {4, -4}, {-4, 4}, {-4, 4}};
  std::string docword;
  int64_t nnz = 0, d_out = 0;
  for (int64_t d = 0; d < D; ++d) {
    const double h2[2] = {static_cast<double>(coin(rng)), static_cast<double>(coin(rng))};
    std::map<int64_t, int64_t> c;
    for (int64_t k = 0; k < K; ++k) {
      const double psi = w1[k][0] * h2[0] + w1[k][1] * h2[1] - 2;
      if (!std::bernoulli_distribution(1 / (1 + std::exp(-psi)))(rng)) continue;
      std::poisson_distribution<int64_t> count(theta(rng));
      std::discrete_distribution<int64_t> word(truth[k].begin(), truth[k].end());
      for (int64_t n = count(rng); n > 0; --n) ++c[word(rng)];
    }
    if (c.size() < 2) continue;
    ++d_out;
    for (auto [w, n] : c) docword += std::to_string(d_out) + " " + std::to_string(w + 1) + " " + std::to_string(n) + "\n", ++nnz;
  }
  const std::string dir = temp_dir("dpfa_recovery");
  std::ofstream(dir + "/docword.txt") << d_out << "\n" << W << "\n" << nnz << "\n" << docword;
  std::ofstream(dir + "/run.yaml")
      << "name: dpfa_recovery\nseed: 3\n"
      << "data: {format: bow, layout: docword, path: " << dir << "/docword.txt, val_size: 0}\n"
      << "model: {name: dpfa, topics: 4, hidden: [2]}\n"
      << "sampler: {name: msgnht, integrator: ssi, diffusion: 0.75, lr: 0.01}\n"
      << "train: {steps: 3000, batch_size: 10, burn_in_steps: 1500, thin: 30, eval_every_steps: 1500, threads: 1}\n"
      << "output: {progress: false}\n";
  RunOptions ro;
  ro.quiet = true;
  ro.out_dir = dir + "/run";
  const RunSummary s = run_training(load_config(dir + "/run.yaml", {}), ro);
  EXPECT_TRUE(std::isfinite(s.values.at("test_perplexity")));
  DpfaOptions o;
  o.words = W, o.documents = 400, o.topics = K, o.hidden = {2};
  torch::Tensor phi_sum = torch::zeros({K, W}, torch::kFloat64);
  int64_t n = 0;
  for (const auto& e : fs::directory_iterator(ro.out_dir + "/samples")) {
    Dpfa m(o, 0);
    load_parameter_file(e.path().string(), m, torch::kCPU);
    phi_sum += m.topics();
    ++n;
  }
  ASSERT_GE(n, 40);
  const auto phi = phi_sum / static_cast<double>(n);
  const auto [tv_mean, tv_max] = matched_topic_tv(phi, truth);
  std::cout << "dpfa: matched TV mean " << tv_mean << ", max " << tv_max << "\n";
  EXPECT_LT(tv_max, 0.06);
  remove_tree(dir);
}

TEST(Bow, CapVocabularyAndChunkDocuments) {
  BowCorpus c;
  c.vocab = {"a", "b", "c", "d"};
  c.docs = {{0, 1, 1, 2, 1, 0, 3}, {3, 2}, {0, 0, 1}};
  cap_vocabulary(c, 2);  // counts a 4, b 4, c 2, d 2: a and b kept, ids in the old order
  EXPECT_EQ(c.vocab, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(c.docs.size(), 2u);
  EXPECT_EQ(c.docs[0], (std::vector<int64_t>{0, 1, 1, 1, 0}));
  EXPECT_EQ(c.dropped_docs, 1);  // {d, c} lost both tokens
  chunk_documents(c, 2);  // {a b}{b b}{a} and {a a}{b}: the single tokens dropped
  EXPECT_EQ(c.docs, (std::vector<std::vector<int64_t>>{{0, 1}, {1, 1}, {0, 0}}));
  EXPECT_EQ(c.dropped_docs, 3);
}
