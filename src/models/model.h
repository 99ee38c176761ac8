// The model interface the trainer talks to.
//
// A model is a torch::nn::Module whose parameters are split into prior groups (each group shares
// one Gaussian prior precision λ_g). The trainer forms
//     Ũ(θ) = (N/n) · nll(batch) + prior.neg_log_prob(θ)
// and hands ∇Ũ to the sampler.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "core/batch.h"

namespace sgmcmc {

// Parameters sharing one prior precision.
// With parallel chains (parameters stacked along dim 0), a group may cover one chain's slice only.
struct PriorGroup {
  std::string name;                   // e.g. "fc1.weight"
  std::vector<torch::Tensor> params;
  int64_t chain = -1;                 // -1: whole tensors; c >= 0: only slice c along dim 0 of each
  torch::Tensor view(const torch::Tensor& p) const { return chain < 0 ? p : p.select(0, chain); }
  int64_t numel() const {
    int64_t n = 0;
    for (const auto& p : params) n += view(p).numel();
    return n;
  }
};

// A parameter and its Gaussian prior's precision λ as a 0-dim tensor of its dtype on its device (read
// at each use, so a captured CUDA graph sees later Gibbs steps' λ).
struct PriorSeed {
  torch::Tensor param, lambda;
};

class Model : public torch::nn::Module {
 public:
  virtual Task task() const = 0;
  // Σ over the batch of −log p(y_i | x_i, θ) (a scalar tensor; differentiable).
  virtual torch::Tensor nll(const Batch& batch) = 0;
  // A hand-derived backward pass, for models that have one: returns Σ nll over the batch (detached)
  // after adding ∇θ(scale · nll) into every parameter's .grad, without autograd. An undefined tensor
  // when the model has none or cannot use it here (a .grad not defined): the trainer then runs
  // autograd on nll(). train.backward: autograd skips it.
  virtual torch::Tensor nll_backward(const Batch& batch, double scale) { return {}; }
  // The same pass, but every parameter's .grad is overwritten with ∇θ(scale · nll) rather than added
  // to: for a step whose prior gradient the sampler folds into its update (Sampler::
  // fold_prior_into_next_step), so that nothing has to zero or seed .grad first. An
  // undefined tensor (nothing written) when the model has no such pass; overwrites_grad() says
  // whether it has one.
  virtual torch::Tensor nll_backward_overwrite(const Batch& batch, double scale) { return {}; }
  virtual bool overwrites_grad() const { return false; }
  // The same pass with the prior's gradient folded in: every parameter's .grad := λθ + ∇θ(scale · nll),
  // with `seeds` naming every parameter's λ. An undefined tensor (nothing written) when the model has no
  // such pass here; the caller then seeds .grad with λθ and runs nll_backward.
  virtual torch::Tensor nll_backward_seeded(const Batch& batch, double scale, const std::vector<PriorSeed>& seeds) {
    return {};
  }
  // Where the trainer keeps its running loss (a 0-dim float64 tensor on the model's device) and the
  // weight of a batch's nll in it. A model that returns true adds weight · nll into `sum` itself whenever
  // nll_backward, nll_backward_overwrite or nll_backward_seeded returns a defined nll (the fused CUDA MLP
  // pass in its last kernel: one kernel a step less); nll() never does. An undefined `sum` stops it.
  // The default, false: the caller adds.
  virtual bool set_loss_sink(const torch::Tensor& sum, double weight) { return false; }
  // Class probabilities [n, classes] (classification) or predicted means [n] (regression).
  // Posterior averaging averages these over samples.
  virtual torch::Tensor predict(const torch::Tensor& inputs) = 0;
  // Which parameters share a prior precision. By default each parameter tensor is its own group.
  virtual std::vector<PriorGroup> prior_groups() {
    std::vector<PriorGroup> groups;
    for (const auto& item : named_parameters()) groups.push_back({item.key(), {item.value()}});
    return groups;
  }
  // A model whose prior is part of its definition (not a Gaussian over groups: lda's Gamma or shifted
  // Gaussian) adds its gradient itself in nll / nll_backward*; the trainer's prior then has no groups.
  virtual bool own_prior() const { return false; }
  // Likelihood hyperparameters with conjugate Gibbs steps (e.g. a Gaussian noise precision τ with
  // a Gamma hyperprior), resampled given the whole training set. Default: none.
  virtual void gibbs_step_likelihood(const Batch& train, at::Generator& generator) {}
  // Their current values, for logging (e.g. {"tau": 2.1}).
  virtual std::map<std::string, double> likelihood_hyperparameters() const { return {}; }

  // Parallel chains held in one model (parameters stacked along dim 0, independent minibatches:
  // nll() then takes chains()·n examples, chain-major). Default: one chain.
  virtual int64_t chains() const { return 1; }
  // train.chain_minibatch: shared: every chain's likelihood on the same n examples (nll() then takes
  // n; minibatch_shared() tells a model's nll). False where the model cannot (can_share_minibatch); with
  // one chain there is nothing to share.
  bool share_minibatch(bool on) {
    if (on && chains() > 1 && !can_share_minibatch()) return false;
    minibatch_shared_ = on && chains() > 1;
    return true;
  }
  bool minibatch_shared() const { return minibatch_shared_; }
  // Minibatches in a training batch: chains(), or 1 where the chains share one.
  int64_t minibatch_chains() const { return minibatch_shared_ ? 1 : chains(); }
  // Per-chain predictions [C, n, classes] / [C, n]; predict() is their mean over the chains.
  virtual torch::Tensor predict_chains(const torch::Tensor& inputs) { return predict(inputs).unsqueeze(0); }
  // k scalar parameters per chain [C, k] (the first k entries of the first parameter), traced for
  // the convergence diagnostics.
  virtual torch::Tensor trace_values(int64_t k) {
    auto p = parameters().at(0).detach();
    auto flat = p.reshape({chains(), -1});
    return flat.narrow(1, 0, std::min<int64_t>(k, flat.size(1))).clone();
  }

 protected:
  // Chain models whose nll() takes a shared minibatch when minibatch_shared().
  virtual bool can_share_minibatch() const { return false; }

 private:
  bool minibatch_shared_ = false;
};

}  // namespace sgmcmc
