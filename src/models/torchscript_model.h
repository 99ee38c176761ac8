// A user's TorchScript module as the network of a Bayesian neural net (model.name: torchscript).
//
// The module (torch.jit.script(m).save(path) or torch.jit.trace, Python) is loaded with
// torch::jit::load. Its forward(x) maps a batch of inputs, as the data set gives them (idx images
// [n, 1, h, w]; tensors files: x as saved), to
//   logits [n, classes]     (likelihood: categorical)
//   means  [n] or [n, 1]    (likelihood: gaussian, with a fixed or Gibbs-sampled noise precision τ)
// and the likelihood on top is models/likelihood.h's, as for `mlp`.
//
// θ is every parameter of the module with requires_grad, under its own dotted name (conv1.weight,
// layer1.0.bn.bias, ...): the same tensors are registered in this torch::nn::Module, so the samplers,
// their fused kernels and flat buffers, device moves, checkpoints and the prior groups see the
// module's own parameters (one TensorImpl each; `set_data` keeps the identity the module holds).
// Parameters without requires_grad and the module's buffers (batch-norm statistics) are buffers
// here: moved and saved, never sampled. Batch norm's running statistics are therefore a running
// average over the chain's trajectory, not a function of the current sample; each saved sample
// carries the statistics of its moment, and predictions run the module in eval mode.
//
// θ starts at the module's saved values (the seed does not re-initialise it).
//
// Parallel chains (`chains: C`, TorchScriptChains below): every parameter and buffer is held once,
// stacked along a new dim 0 of size C (the layout of MlpChains, so that prior groups, traces,
// samples and checkpoints treat both alike). The module is loaded once and run once per chain, its
// parameter and buffer slots pointed at slice c (views of the stacked leaves: autograd accumulates
// chain c's gradient into slice c, batch norm updates chain c's statistics in place). The chains
// are stepped in turn (C forwards and one backward a step), their update is one fused step over all.
// Chain 0 starts at the saved values, chain c ≥ 1 at them plus N(0, (kTorchScriptChainJitter·rms)²)
// per tensor (rms over the tensor), drawn from the seed and c: distinct starting points for R̂.
#pragma once

#include <torch/script.h>

#include <string>

#include "models/likelihood.h"
#include "models/model.h"

namespace sgmcmc {

struct TorchScriptOptions : LikelihoodOptions {
  std::string path;      // the TorchScript archive
  int64_t outputs = 0;   // categorical: the data set's classes (set by make_model)
};

class TorchScriptModel : public Model {
 public:
  // Throws std::invalid_argument "<where>.path: ..." for a missing file or one that is not a
  // TorchScript archive, and "<where>: ..." for a parameter name that clashes with "tau".
  TorchScriptModel(const TorchScriptOptions& options, const std::string& where = "model");

  Task task() const override;
  torch::Tensor nll(const Batch& batch) override;
  torch::Tensor predict(const torch::Tensor& inputs) override;
  void gibbs_step_likelihood(const Batch& train, at::Generator& generator) override;
  std::map<std::string, double> likelihood_hyperparameters() const override;
  void train(bool on = true) override;

  // The module's forward(x): logits / means.
  torch::Tensor forward(const torch::Tensor& inputs);
  // Runs forward on the first two examples of `sample` (eval mode, no gradient) and checks that it
  // returns one floating tensor of the likelihood's shape; std::invalid_argument "<where>: ..." if not.
  void check_outputs(const Batch& sample);

 private:
  torch::nn::Module& owner_of(const std::string& dotted, std::string& leaf);

  TorchScriptOptions options_;
  std::string where_;
  torch::jit::Module module_;
  torch::Tensor tau_;
};

constexpr double kTorchScriptChainJitter = 0.1;

class TorchScriptChains : public Model {
 public:
  // std::invalid_argument as TorchScriptModel's, and for chains < 1.
  TorchScriptChains(const TorchScriptOptions& options, int64_t chains, uint64_t seed, const std::string& where = "model");

  Task task() const override;
  // `batch` holds chains()·n examples, chain-major: chain c's are rows [c·n, (c+1)·n); with
  // share_minibatch(true) (train.chain_minibatch: shared) n examples that every chain's term uses.
  torch::Tensor nll(const Batch& batch) override;
  torch::Tensor predict(const torch::Tensor& inputs) override;
  torch::Tensor predict_chains(const torch::Tensor& inputs) override;
  int64_t chains() const override { return chains_; }
  std::map<std::string, double> likelihood_hyperparameters() const override;
  void train(bool on = true) override;

  // Chain c's forward(x) (its logits / means).
  torch::Tensor forward(int64_t c, const torch::Tensor& inputs);
  // TorchScriptModel::check_outputs, on chain 0.
  void check_outputs(const Batch& sample);

 protected:
  // Shared (train.chain_minibatch): every chain's forward on the one batch.
  bool can_share_minibatch() const override { return true; }

 private:
  struct Slot {
    torch::jit::Module owner;  // the submodule holding the attribute
    std::string leaf;
    torch::Tensor stacked;     // [C, ...], registered in this module
  };
  void point_at(int64_t c);

  TorchScriptOptions options_;
  std::string where_;
  int64_t chains_;
  torch::jit::Module module_;
  std::vector<Slot> slots_;
  torch::Tensor tau_;
};

}  // namespace sgmcmc
