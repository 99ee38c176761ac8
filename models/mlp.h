// Multilayer perceptron (Bayesian neural net of 000 App. H.1, the FNNs of 001 and 002 §5.2).
//   h_0 = flatten(x),  h_l = act(W_l h_{l-1} + b_l),  f = W_L h_{L-1} + b_L
//   categorical: p(y | x) = softmax(f)_y            nll = −Σ log softmax(f)_y
//   gaussian:    p(y | x) = N(y; f, 1/τ)           nll = Σ τ(y − f)²/2 − n/2 log τ + n/2 log 2π
//                τ fixed (model.noise_precision) or Gamma(noise_alpha, noise_beta) with the Gibbs step
//                τ | θ, D ~ Gamma(α + N/2, β + Σ(y − f)²/2)
// Parameters fc1.weight, fc1.bias, ..., fcL.bias; initialised U(−1/√fan_in, 1/√fan_in) from the
// given generator.
#pragma once

#include <string>
#include <vector>

#include "models/model.h"

namespace sgmcmc {

struct MlpOptions {
  int64_t inputs = 784;
  std::vector<int64_t> hidden = {100};
  int64_t outputs = 10;
  std::string activation = "sigmoid";    // sigmoid | relu | tanh
  std::string likelihood = "categorical";  // categorical | gaussian
  double noise_precision = 1.0;          // gaussian: τ (initial value when sampled)
  bool sample_noise = false;             // gaussian: Gibbs-sample τ
  double noise_alpha = 1.0, noise_beta = 1.0;
};

class Mlp : public Model {
 public:
  Mlp(const MlpOptions& options, at::Generator& init_generator);
  Task task() const override;
  torch::Tensor nll(const Batch& batch) override;
  torch::Tensor predict(const torch::Tensor& inputs) override;
  void gibbs_step_likelihood(const Batch& train, at::Generator& generator) override;
  std::map<std::string, double> likelihood_hyperparameters() const override;
  torch::Tensor forward(const torch::Tensor& inputs);  // logits / means

 private:
  MlpOptions options_;
  std::vector<torch::nn::Linear> layers_;
  torch::Tensor tau_;  // buffer "tau" (gaussian likelihood)
};

// U(−1/√fan_in, 1/√fan_in) for every parameter of `module` (weight fan_in = size(1)·kernel), from `gen`.
void init_fan_in_uniform(torch::nn::Module& module, at::Generator& gen);

}  // namespace sgmcmc
