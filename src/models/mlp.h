// Multilayer perceptron (Bayesian neural net of 000 App. H.1, the FNNs of 001 and 002 §5.2).
//   h_0 = flatten(x),  h_l = act(W_l h_{l-1} + b_l),  f = W_L h_{L-1} + b_L
// with a categorical or Gaussian likelihood on f (models/likelihood.h).
// Parameters fc1.weight, fc1.bias, ..., fcL.bias; initialised U(−1/√fan_in, 1/√fan_in) from the
// given generator.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda_mlp/mlp_fused.h"
#include "models/likelihood.h"
#include "models/model.h"

namespace sgmcmc {

struct MlpOptions : LikelihoodOptions {
  int64_t inputs = 784;
  std::vector<int64_t> hidden = {100};
  int64_t outputs = 10;
  std::string activation = "sigmoid";    // sigmoid | relu | tanh
};

class Mlp : public Model {
 public:
  Mlp(const MlpOptions& options, at::Generator& init_generator);
  Task task() const override;
  torch::Tensor nll(const Batch& batch) override;
  // The layers' backward by hand (mlp_backward.cpp): forward keeping each layer's output, then
  //   g_L = scale·(softmax(f) − onehot(y))   or   scale·τ(f − y)   (categorical / gaussian)
  //   ∇W_l += g_lᵀ h_{l−1} (one GEMM accumulating into .grad),  ∇b_l += Σ_i g_l,
  //   g_{l−1} = (g_l W_l) ⊙ act'(h_{l−1})   (act' from the activation's output, as autograd does).
  // The same values as autograd to float rounding (tests/test_models.cpp), without autograd's
  // graph, its AccumulateGrad pass over every gradient and the temporaries between them.
  torch::Tensor nll_backward(const Batch& batch, double scale) override;
  // ∇W_l := g_lᵀ h_{l−1} (the GEMM without its sum epilogue), ∇b_l := Σ_i g_l (zeroed, then summed).
  torch::Tensor nll_backward_overwrite(const Batch& batch, double scale) override;
  bool overwrites_grad() const override { return true; }
  bool set_loss_sink(const torch::Tensor& sum, double weight) override;
  // Applied by the fused CUDA pass's last kernel where it can (kernels::MlpFusedScratch::update).
  // On CUDA with kernels.cuda_mlp_prior: fused, the fused pass writes λθ + ∇ in its weight-gradient
  // epilogue (kernels/cuda_mlp/mlp_fused.h); undefined elsewhere.
  torch::Tensor nll_backward_seeded(const Batch& batch, double scale, const std::vector<PriorSeed>& seeds) override;
  torch::Tensor predict(const torch::Tensor& inputs) override;
  void gibbs_step_likelihood(const Batch& train, at::Generator& generator) override;
  std::map<std::string, double> likelihood_hyperparameters() const override;
  torch::Tensor forward(const torch::Tensor& inputs);  // logits / means

 private:
  torch::Tensor backward_pass(const Batch& batch, double scale, bool overwrite);

  MlpOptions options_;
  // nll_backward's tensors, kept from one step to the next (one minibatch shape): the layers' outputs
  // h[l], the gradients g[l] flowing back, the inputs' 2-D view and transposed views of the weights
  // and of g (a view is an ATen op on every call otherwise). A view is made again when its tensor's
  // data, shape or strides changed (models/mlp_backward.cpp).
  struct BackwardBuffers {
    torch::Tensor x;  // the batch's inputs as [n, features]
    std::vector<torch::Tensor> h, g, wt, gt;
    kernels::MlpFusedScratch fused;  // the fused CUDA pass's (kernels.cuda_mlp)
  };
  BackwardBuffers bwd_;
  std::vector<torch::nn::Linear> layers_;
  torch::Tensor tau_;  // buffer "tau" (gaussian likelihood)
};

// U(−1/√fan_in, 1/√fan_in) for every parameter of `module` (weight fan_in = size(1)·kernel), from `gen`.
void init_fan_in_uniform(torch::nn::Module& module, at::Generator& gen);

}  // namespace sgmcmc
