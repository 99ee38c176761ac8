// C parallel chains of the MLP in one module.
//
// Layer l holds weight [C, out, in] and bias [C, out]; chain c's network is exactly `Mlp` with
// W_l = weight[c], b_l = bias[c]. Training minibatches are chain-major: nll() takes C·n examples, the
// first n for chain 0, the next n for chain 1, ... (each chain draws its own minibatch), and computes
//   h_l = act(bmm(h_{l−1}, W_lᵀ) + b_l)     for h of shape [C, n, ·],
// so Σ_c nll_c is one batched pass and ∂/∂θ_c involves chain c's minibatch only. With elementwise
// samplers (SGLD, pSGLD, SGHMC, mSGNHT, Santa) and per-chain prior precisions (make_prior_groups splits
// every group by chain), the C chains are independent samplers of the same posterior.
// With share_minibatch(true) (train.chain_minibatch: shared) nll() takes n examples that every chain's
// term uses: Σ_c nll_c(x_1..n), the first layer as one [n, in] x [in, C·out] product.
// Evaluation inputs are shared by all chains: predict_chains() gives [C, n, K] (or [C, n]) and predict()
// their mean, so the trainer's running average is over chains and samples.
// Initialisation consumes the generator as C stacked copies of `Mlp`'s (layer by layer, weight then
// bias, U(−1/√fan_in, 1/√fan_in)), so C = 1 starts from Mlp's exact parameters.
// Regression uses a fixed noise precision (a Gibbs-sampled τ would couple the chains).
#pragma once

#include <vector>

#include "kernels/cuda_mlp/mlp_fused.h"
#include "models/mlp.h"
#include "models/model.h"

namespace sgmcmc {

class MlpChains : public Model {
 public:
  MlpChains(const MlpOptions& options, int64_t chains, at::Generator& init_generator);
  Task task() const override;
  torch::Tensor nll(const Batch& batch) override;
  torch::Tensor predict(const torch::Tensor& inputs) override;
  torch::Tensor predict_chains(const torch::Tensor& inputs) override;
  int64_t chains() const override { return chains_; }
  // On CUDA with kernels.cuda_mlp: fused (classification): every chain's forward and backward in the
  // fused pass's 2 + depth launches (kernels/cuda_mlp/mlp_fused.h), ∇θ(scale · nll) added into .grad; with a shared
  // minibatch for one hidden layer on the pass's cuBLAS route (its two large products one GEMM each).
  // Undefined (nothing written) elsewhere: the trainer then runs autograd on nll().
  torch::Tensor nll_backward(const Batch& batch, double scale) override;
  bool set_loss_sink(const torch::Tensor& sum, double weight) override;
  std::map<std::string, double> likelihood_hyperparameters() const override;

  // Outputs [C, n, out] for per-chain inputs [C, n, ...].
  torch::Tensor forward(const torch::Tensor& inputs);

 protected:
  // Shared: nll() takes n examples, every chain's term on all n (the first layer one product over
  // the chains, as predict_chains'; the fused CUDA pass likewise where it takes them).
  bool can_share_minibatch() const override { return true; }

 private:
  // shared: inputs [n, ...] seen by every chain.
  torch::Tensor forward_impl(const torch::Tensor& inputs, bool shared);
  MlpOptions options_;
  int64_t chains_;
  std::vector<torch::Tensor> weights_, biases_;
  double tau_;
  kernels::MlpFusedScratch fused_;  // the fused CUDA pass's buffers, kept from step to step
};

}  // namespace sgmcmc
