// The output likelihoods shared by the models that map inputs to logits or means (mlp, torchscript).
//   categorical: p(y | x) = softmax(f)_y            nll = −Σ log softmax(f)_y
//   gaussian:    p(y | x) = N(y; f, 1/τ)           nll = Σ τ(y − f)²/2 − n/2 log τ + n/2 log 2π
//                τ Gamma(noise_alpha, noise_beta) with the Gibbs step (noise_prior: gamma, the default)
//                or fixed at noise_precision (noise_prior: fixed)
//                τ | θ, D ~ Gamma(α + N/2, β + Σ(y − f)²/2)
// f: logits [n, K] (categorical) or means [n, 1] (gaussian).
#pragma once

#include <functional>
#include <string>

#include "core/option_map.h"
#include "core/option_table.h"
#include "models/model.h"

namespace sgmcmc {

struct LikelihoodOptions {
  std::string likelihood = "categorical";  // categorical | gaussian
  double noise_precision = 1.0;            // gaussian: τ (initial value when sampled)
  bool sample_noise = false;               // gaussian: Gibbs-sample τ (a config's noise_prior defaults to gamma)
  double noise_alpha = 1.0, noise_beta = 1.0;
  bool classification() const { return likelihood == "categorical"; }
};

// The likelihood keys of a model block (likelihood, noise_precision, noise_prior, noise_alpha,
// noise_beta); the default likelihood follows the data set's task.
void parse_likelihood_options(const OptionMap& o, Task task, LikelihoodOptions& out);
void validate_likelihood_options(const LikelihoodOptions& l, const std::string& where);
extern const std::vector<std::string> kLikelihoodKeys;
// Those keys' types, defaults and meanings (--help-keys), declared beside the parser.
std::vector<OptionDoc> likelihood_option_docs();

// Σ −log p(y_i | f_i) (differentiable in f; τ a 0-dim tensor on f's device).
torch::Tensor likelihood_nll(const LikelihoodOptions& l, const torch::Tensor& f, const Batch& batch,
                             const torch::Tensor& tau);
// Class probabilities [n, K] or means [n].
torch::Tensor likelihood_predict(const LikelihoodOptions& l, const torch::Tensor& f);
// τ's Gibbs step given the whole training set (no-op unless gaussian with sample_noise); `predict`
// maps inputs to means [n].
void gibbs_step_noise(const LikelihoodOptions& l, const std::function<torch::Tensor(const torch::Tensor&)>& predict,
                      const Batch& train, torch::Tensor& tau, at::Generator& gen);

}  // namespace sgmcmc
