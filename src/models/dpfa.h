// Deep Poisson factor analysis with a deep sigmoid belief network above the topics (DPFA-SBN;
// Z. Gan, C. Chen, R. Henao, D. Carlson and L. Carin, "Scalable deep Poisson factor analysis for topic
// modeling", ICML 2015; the SBN of Z. Gan, R. Henao, D. Carlson and L. Carin, "Learning deep sigmoid
// belief networks with data augmentation", AISTATS 2015), as 002 §5.2 (Fig. 5) samples it: the globals
// by mSGNHT-S/E (or any registry sampler), the topics on the simplex by the expanded-natural
// parametrization (Patterson & Teh 2013), the locals by Gibbs.
//
// Generative model, document n with X_n tokens, layers of K_1 (the topics), K_2, …, K_L binary units:
//   h^L_n ~ Bernoulli(σ(c_L)),  h^l_n | h^{l+1}_n ~ Bernoulli(σ(W_l h^{l+1}_n + c_l))   (the SBN)
//   θ_kn ~ Gamma(r_k, p_n/(1 − p_n)),  p_n ~ Beta(a₀, b₀),  r_k ~ Gamma(γ₀, rate c₀)
//   x_vkn ~ Poisson(φ_vk θ_kn h^1_kn),  the words x_vn = Σ_k x_vkn;  φ_k = softmax(ψ_k) on the simplex,
//   ψ_kv ~ N(μ₀, σ₀²) (model.prior_mean, prior_sd: LDA's expanded-natural prior), W_l, c_l ~ N(0, σ_w²).
// Locals, θ and p integrated out: x_kn | h, r, p ~ NB(r_k h^1_kn, p_n) (Poisson–Gamma), then p_n by its
// Beta prior, so with z_i the topic of token i and x_k = #{i: z_i = k},
//   p(z, w | h, r, φ) = (1/X!) Π_k Γ(x_k + r_k h_k)/Γ(r_k h_k) · Π_i φ_{w_i z_i} · B(a₀ + X, b₀ + R)/B(a₀, b₀),
//   R = Σ_k r_k h^1_k  (Γ(x + 0)/Γ(0) read as [x = 0]: an inactive topic holds no token).
// The local Gibbs sweep (model.gibbs_sweeps per minibatch document, the first half burn-in):
//   tokens  p(z_i = k | rest) ∝ h^1_k (x_k^{¬i} + r_k) φ_{w_i k}   (LDA's step with α_k = r_k h^1_k)
//   h^1_k   = 1 if x_k > 0, else log-odds  ψ^1_k + log B(a₀+X, b₀+R_{¬k}+r_k) − log B(a₀+X, b₀+R_{¬k})
//   h^l_k   (l ≥ 2) log-odds  ψ^l_k + Σ_j [ℓ(h^{l−1}_j, ψ^{l−1}_j |h^l_k=1) − ℓ(h^{l−1}_j, ψ^{l−1}_j |h^l_k=0)]
//   with ψ^l = W_l h^{l+1} + c_l (ψ^L = c_L) and ℓ(h, ψ) = hψ − log(1 + e^ψ) = log Bernoulli(h; σ(ψ)).
// Each unit's conditional is exact (two states): it is Gan et al. 2015b's Pólya–Gamma-augmented
// conditional with the augmentation ω integrated out again. The augmentation is what makes W's
// conditional Gaussian for a Gibbs sampler of the weights; a gradient sampler needs only
// ∇_W log p(h) = (h^l − σ(ψ^l)) h^{l+1}ᵀ, which is the augmented gradient's expectation over ω (Fisher's
// identity), so no ω is drawn. The gradient of log p(w | globals) is, by Fisher's identity, the
// expectation over the locals of ∇ log p(w, z, h | globals): estimated by the post-burn-in sweeps
// (the topics' counts Rao–Blackwellized as LDA's, models/lda.h), through autograd of the surrogate
//   −Σ n̂_kv log φ_kv − mean over sweeps of [Σ_l Σ ℓ(h^l, ψ^l) + Σ_k h^1_k (log Γ(x_k + r_k) − log Γ(r_k))
//      + log B(a₀ + X, b₀ + R) − log(X!)] − log B(a₀, b₀)-free constants,
// in which r_k = exp(ρ_k) (parameter log_r, prior Gamma(γ₀, c₀) on r with its Jacobian). The model owns
// its prior (Model::own_prior).
//
// Prediction (document completion, data/bow.h): the observed tokens' locals by model.eval_sweeps sweeps
// with the globals fixed; a held-out word's probability p(v | d) = Σ_k φ_vk E[(x_k + r_k h^1_k)/(X + R)]
// (a new token's topic given the locals: the B factor is the same for every k), the expectation the
// mean over the post-burn-in sweeps. Over posterior samples its −mean log is log perplexity.
// Draws: a counter stream seeded from the parameters' bytes and the document (models/local_draws.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/option_map.h"
#include "core/option_table.h"
#include "models/local_draws.h"
#include "models/model.h"

namespace sgmcmc {

struct DpfaOptions {
  int64_t topics = 128;                    // K_1
  std::vector<int64_t> hidden = {64, 32};  // K_2 … K_L (empty: h^1 ~ Bernoulli(σ(c_1)))
  double prior_mean = 0.1, prior_sd = 1.0; // ψ (the topics' natural parameters) ~ N(μ₀, σ₀²)
  double weight_sd = 1.0;                  // W_l, c_l ~ N(0, σ_w²)
  double r_shape = 1.0, r_rate = 1.0;      // r_k ~ Gamma(γ₀, c₀)
  double p_a = 1.0, p_b = 1.0;             // p_n ~ Beta(a₀, b₀)
  int64_t gibbs_sweeps = 10;
  int64_t eval_sweeps = 40;
  // From the data set (factory):
  int64_t words = 0, documents = 0;
  void validate(const std::string& where) const;
  std::vector<int64_t> layers() const;     // K_1, …, K_L
};

std::vector<OptionDoc> dpfa_option_docs();
DpfaOptions parse_dpfa_options(const OptionMap& o);

// The globals as the local step reads them (float64, CPU).
struct DpfaGlobals {
  int64_t words = 0;
  std::vector<int64_t> layers;            // K_1 … K_L
  std::vector<double> phi_wk;             // φ transposed: [W, K_1], row w the topics' probabilities of word w
  std::vector<double> r;                  // [K_1]
  std::vector<std::vector<double>> w;     // w[l]: W_{l+1} [K_{l+1}, K_{l+2}] row-major, l = 0 … L−2
  std::vector<std::vector<double>> c;     // c[l]: [K_{l+1}], l = 0 … L−1
  double p_a = 1, p_b = 1;
};

// One document's local state and its Gibbs sweep (exposed for the tests: the conditionals against
// enumeration). Layer indices are 0-based: layer 0 is h^1, the topics' units.
class DpfaDocument {
 public:
  DpfaDocument(const DpfaGlobals& g, std::vector<int64_t> tokens, uint64_t seed);
  // Sets z and every layer's units (x, ψ and R follow); for the tests.
  void set_state(const std::vector<int64_t>& z, const std::vector<std::vector<double>>& h);
  // One sweep: every token's topic, then the units of layer 0, 1, …, L−1. With `expected_kw`, adds
  // weight · p(z_i = k | rest) to expected_kw[k·W + w_i] for every token ([K_1, W] row-major).
  void sweep(double* expected_kw = nullptr, double weight = 0);
  // The conditional log-odds of unit k of `layer` being 1 given the rest (+inf where forced).
  double unit_log_odds(int64_t layer, int64_t k) const;
  // Unnormalized p(z_i = k | rest) into p[0..K_1), token i's own count removed; returns their sum.
  double token_weights(int64_t i, double* p) const;

  const std::vector<int64_t>& z() const { return z_; }
  const std::vector<std::vector<double>>& h() const { return h_; }
  const std::vector<double>& x() const { return x_; }
  double active_r() const { return R_; }
  int64_t length() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  void draw_unit(int64_t layer, int64_t k);
  void flip(int64_t layer, int64_t k, double value);
  void recompute();

  const DpfaGlobals& g_;
  std::vector<int64_t> tokens_;
  local_draws::Stream stream_;
  std::vector<int64_t> z_;
  std::vector<double> x_;                     // [K_1] tokens per topic
  std::vector<std::vector<double>> h_, psi_;  // per layer: units (0/1), ψ^l
  double R_ = 0;                              // Σ_k r_k h^1_k
  std::vector<double> scratch_;
};

class Dpfa : public Model {
 public:
  Dpfa(const DpfaOptions& options, uint64_t seed);

  Task task() const override { return Task::kClassification; }
  torch::Tensor nll(const Batch& batch) override;
  bool own_prior() const override { return true; }
  torch::Tensor predict(const torch::Tensor& inputs) override;

  // φ [K_1, W] (float64, CPU) at the current parameters.
  torch::Tensor topics() const;
  DpfaGlobals globals() const;
  const DpfaOptions& options() const { return options_; }

 private:
  torch::Tensor prior_neg_log() const;
  uint64_t state_hash() const;

  DpfaOptions options_;
  uint64_t seed_;
  torch::Tensor psi_, log_r_;
  std::vector<torch::Tensor> w_, c_;
};

}  // namespace sgmcmc
