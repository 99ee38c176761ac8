// Semi-collapsed latent Dirichlet allocation (002 §5.1, Table 1; S. Patterson and Y. W. Teh,
// "Stochastic gradient Riemannian Langevin dynamics on the probability simplex", NIPS 2013, §4).
//
// K topics π_k on the simplex over W words; a document's topic proportions η_d ~ Dirichlet(α) are
// integrated out, its tokens' topics z_di are kept. The topics are parametrized without constraint
// by θ ∈ R^{K×W} (model.parametrization):
//   natural (expanded-natural, for every sampler):  π_kw = exp θ_kw / Σ_w' exp θ_kw',
//       prior θ_kw ~ N(μ₀, σ₀²) (002 following Ding et al. 2014: N(0.1, 1); model.prior_mean, prior_sd)
//   mean (expanded-mean, for SGRLD's simplex metric):  π_kw = θ_kw / Σ_w' θ_kw', θ ≥ 0,
//       prior θ_kw ~ Gamma(β, 1) (so π_k ~ Dirichlet(β)); model.beta
// The gradient of log p(w | θ) is the expectation over z | w, θ of ∇ log p(w, z | θ) (Fisher's
// identity), estimated per minibatch B of documents by Gibbs sweeps of each document's z (the local
// step: p(z_di = k | rest) ∝ (α + n_dk^{¬i}) π_{k,w_di}, model.gibbs_sweeps sweeps, the first half
// burn-in, the conditional probabilities of the second half averaged: Rao-Blackwellized counts n̂):
//   natural:  −∇_θkw log p(w_B, z_B | θ) = −(n̂_kw − π_kw n̂_k·)
//   mean:     −∇_θkw log p(w_B, z_B | θ) = −n̂_kw/θ_kw + n̂_k·/Σ_w' θ_kw'
// The model owns its prior (Model::own_prior: the trainer's Gaussian prior block does not apply);
// ∇Ũ = (N/n)·(the batch's term) + ∇(−log p(θ)). Under SGRLD's expanded-mean metric G = diag(θ) this
// is Patterson & Teh's θ ← |θ + h(β − θ + (N/n) Σ_d (n̂_dkw − π_kw n̂_dk·)) + √(2hθ) ξ|.
// nll() returns the same gradient through autograd (a surrogate −Σ n̂ log π with the counts fixed);
// its value, like nll_backward's, is the batch's −log p(w_B, z_B | θ) at the sampled counts.
//
// Prediction (document completion, data/bow.h): for a held-out document's observed tokens, Gibbs
// sweeps with π fixed (model.eval_sweeps, the first half burn-in) estimate its proportions
// η̂_dk = mean over sweeps of (n_dk + α)/(L + Kα); the predictive of a word is p(w | d) = Σ_k η̂_dk π_kw.
// Averaged over posterior samples, −mean log p̄(w | d) over the held-out tokens is the test NLL and
// exp of it the perplexity.
//
// model.inference: collapsed_gibbs (with SGLD at temperature 0, which then moves nothing) is the
// baseline of Table 1 (Griffiths and Steyvers 2004): θ is integrated out too, every training token's
// topic is resampled from p(z_di = k | rest) ∝ (n_dk^{¬di} + α)(n_kw^{¬di} + β)/(n_k^{¬di} + Wβ) once per train Gibbs step
// (gibbs_step_likelihood; the assignments are a buffer, so they checkpoint), and the topics are set to
// the posterior mean π_kw = (n_kw + β)/(n_k + Wβ) after each sweep (θ = log π). The gradient is zero.
//
// Randomness: the local sweeps draw from a counter-based stream (the model's seed, a draw counter
// kept as a buffer, the document), so a resumed run repeats them bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/option_map.h"
#include "core/option_table.h"
#include "models/model.h"

namespace sgmcmc {

struct LdaOptions {
  int64_t topics = 30;
  double alpha = 0.1;                          // Dirichlet of the documents' topic proportions
  std::string parametrization = "natural";     // natural | mean
  double prior_mean = 0.1, prior_sd = 1.0;     // natural: N(μ₀, σ₀²) on θ
  double beta = 0.1;                           // mean: Gamma(β, 1) on θ; collapsed_gibbs: Dirichlet(β)
  int64_t gibbs_sweeps = 10;                   // local sweeps per document and step (half burn-in)
  int64_t eval_sweeps = 40;                    // sweeps per held-out document and prediction
  std::string inference = "sgmcmc";            // sgmcmc | collapsed_gibbs
  // From the data set (factory):
  int64_t words = 0, documents = 0;
  void validate(const std::string& where) const;
};

// The `model: {name: lda}` keys (types, defaults: LdaOptions', meanings).
std::vector<OptionDoc> lda_option_docs();
LdaOptions parse_lda_options(const OptionMap& o);

// The local step for one document: Gibbs sweeps of its tokens' topics given the topic-word matrix
// `pi` [K, W] (float64, CPU, contiguous), α and a seed. Calls `count(sweep_weight, token, p)` after
// each token's draw in a post-burn-in sweep with p its normalized conditional [K]; returns the
// document's topic counts averaged over the post-burn-in sweeps (unnormalized n_dk) [K].
// Exposed for the tests.
std::vector<double> lda_document_sweeps(const std::vector<int64_t>& tokens, const double* pi, int64_t K, int64_t W,
                                        double alpha, int64_t sweeps, uint64_t seed, double* expected_kw);

class Lda : public Model {
 public:
  Lda(const LdaOptions& options, uint64_t seed);

  Task task() const override { return Task::kClassification; }
  torch::Tensor nll(const Batch& batch) override;
  torch::Tensor nll_backward(const Batch& batch, double scale) override { return backward(batch, scale, false); }
  torch::Tensor nll_backward_overwrite(const Batch& batch, double scale) override { return backward(batch, scale, true); }
  bool overwrites_grad() const override { return true; }
  bool own_prior() const override { return true; }
  torch::Tensor predict(const torch::Tensor& inputs) override;
  void gibbs_step_likelihood(const Batch& train, at::Generator& generator) override;

  // π [K, W] (float64, CPU) at the current θ.
  torch::Tensor topics() const;
  const LdaOptions& options() const { return options_; }

 private:
  // n̂_kw [K, W] (float64, CPU) of the batch by the local step, the batch's −log p(w, z | θ) at them.
  std::pair<torch::Tensor, double> expected_counts(const Batch& batch, const torch::Tensor& pi);
  torch::Tensor backward(const Batch& batch, double scale, bool overwrite);
  uint64_t next_seed();
  void collapsed_sweep(const Batch& train);

  LdaOptions options_;
  uint64_t seed_;
  torch::Tensor theta_;
  torch::Tensor draws_;   // int64 scalar buffer: local-step draws so far (the stream's counter)
  torch::Tensor z_;       // collapsed_gibbs: [D, L] int64 topic of every training token (−1: none yet)
};

}  // namespace sgmcmc
