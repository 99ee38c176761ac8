// Gaussian priors over groups of parameters, with an optional Gamma hyperprior on each group's
// precision, resampled by a Gibbs step.
//
//   θ_g ~ N(0, λ_g^{-1} I),   λ_g ~ Gamma(α, β)   (shape α, rate β)
//   −log p(θ) = Σ_g λ_g ‖θ_g‖² / 2 + const,   ∇_θg = λ_g θ_g
//   Gibbs:  λ_g | θ_g ~ Gamma(α + n_g/2, β + ‖θ_g‖²/2)      (n_g = number of entries of group g)
// Chen, Fox & Guestrin 2014 (000), App. H.1 (α = β = 1; H.1 writes exp(−λ‖A‖²), i.e. its λ is
// half of the precision used here). For the optimizer baselines the same prior with a fixed λ is
// the weight decay (∇ = λθ).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/gamma.h"
#include "models/model.h"

namespace sgmcmc {

class GaussianPrior {
 public:
  // `precision`: the initial λ for every group. `learn`: whether gibbs_step() resamples λ.
  GaussianPrior(std::vector<PriorGroup> groups, double precision, bool learn, double alpha, double beta);

  // Σ_g λ_g ‖θ_g‖²/2 (differentiable scalar).
  torch::Tensor neg_log_prob() const;
  // Adds λ_g θ_g to every parameter's .grad (allocating zero gradients where undefined). No host sync.
  // λ_g is read from a scalar tensor on the parameters' device, so a captured CUDA graph of the step
  // sees the λ of later Gibbs steps.
  void add_grad() const;
  // Sets every parameter's .grad to λ_g θ_g (allocating where undefined): the prior's gradient as
  // the starting value into which backward() then accumulates the likelihood's, in place of zeroing
  // the gradients and adding λθ after the backward pass (one op per tensor instead of two, and one
  // pass over .grad fewer). Same reads of λ as add_grad(), so graph capture still works.
  void seed_grad() const;
  // True if the groups cover every element of `params` exactly once (whole tensors or chain slices),
  // so that seed_grad() sets every gradient the sampler reads.
  bool covers(const std::vector<torch::Tensor>& params) const;
  // Resamples every λ_g from its conditional (no-op if not learned). On the host (the default): the
  // norms come to the host and the draw goes back, one host sync. With draw_on_device(true) the norms,
  // the Gamma draw (on `gen`, a generator of the parameters' device) and the λ buffers stay on the
  // device, with no sync: the host's copy of λ (precisions(), log_values(), neg_log_prob()) is then
  // read from the device when next asked for, typically after the evaluation's own read, when the
  // device has nothing queued. The same arithmetic on the same generator as the host path.
  void gibbs_step(at::Generator& gen);
  // gibbs_step's device path in two halves, for a captured Gibbs step (train.graph_epoch): the device
  // work, the draw into the λ buffers (returns the draw; undefined when nothing is learned), and the
  // host's note of a draw it has not read (the captured draw, refreshed by each replay).
  torch::Tensor gibbs_draw_on_device(at::Generator& gen);
  void draw_pending(const torch::Tensor& draw) { pending_ = draw; }
  // The device draw the host has not read (float64 [groups]; undefined when none), for a caller that
  // copies it to the host with other values (a deferred evaluation's read); set_host_draw then hands
  // the values back, as refresh_host() would have read them.
  const torch::Tensor& pending_draw() const { return pending_; }
  void set_host_draw(const std::vector<double>& lambda);
  void set_draw_on_device(bool on) { draw_on_device_ = on; }
  bool draw_on_device() const { return draw_on_device_; }
  // The initial λ's (prior.init): "precision" keeps the constructor's value; "prior_draw" draws each
  // λ_g from the hyperprior Gamma(α, β) (from `gen`); "init_scale" sets λ_g = n_g / ‖θ_g‖² at the
  // current θ (a group of zeros keeps its λ). Call before the first step.
  void initialize(const std::string& how, at::Generator& gen);

  const std::vector<PriorGroup>& groups() const { return groups_; }
  const std::vector<double>& precisions() const {
    refresh_host();
    return lambda_;
  }
  // {θ, λ_g as a 0-dim tensor on θ's device (filled in place by every update of λ)} for every parameter
  // of a whole-tensor group; empty when a group holds chain slices (Model::nll_backward_seeded).
  std::vector<PriorSeed> seeds() const;
  void set_precisions(const std::vector<double>& lambda);
  bool learned() const { return learn_; }
  // True when chain groups' gradients are one op per parameter (see chain_params_).
  bool chains_vectorized() const { return chains_vectorized_; }
  double alpha() const { return alpha_; }
  double beta() const { return beta_; }
  // {"lambda.<group>": λ}, for logging (parallel chains: the mean of the chains' λ).
  std::map<std::string, double> log_values() const;
  // Parallel chains: {"lambda.<group>.chain<c>": chain c's λ} (empty without chains), for the sample files.
  std::map<std::string, double> chain_values() const;

 private:
  // op(.grad view, θ view, λ_g) for every parameter of every group, without autograd; an undefined
  // .grad is allocated (zeros) first.
  using GradOp = std::function<void(torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;
  void for_each_grad(const GradOp& op) const;
  // seed_grad on CPU float32 parameters: every group's λθ in one parallel loop (kernels/scale_segments.h)
  // rather than an ATen op per tensor; false (nothing written) where that does not apply.
  bool seed_grad_cpu() const;
  void sync_device_lambda();  // lambda_dev_ := lambda_
  // ‖θ_g‖² per group as float64 [groups] on the parameters' device (the first group's), no host read
  std::vector<double> conditional_shapes() const;  // α + n_g/2 per group: the Gamma conditionals' shapes
  torch::Tensor squared_norms_on_device() const;
  torch::Tensor squared_norms() const;  // the same on the CPU (one host transfer)
  void refresh_host() const;  // lambda_ := the device draw not yet read (pending_), if any
  // λ_g := a draw from Gamma(shape_g, rate_g), drawn on `gen`'s device.
  void set_from_draw(const std::vector<double>& shape, const torch::Tensor& rate, at::Generator& gen);

  std::vector<PriorGroup> groups_;
  mutable std::vector<double> lambda_;  // the host's λ: behind the device's while pending_ is defined
  mutable torch::Tensor pending_;       // a device draw of every λ_g (float64 [groups]) not yet read
  torch::Tensor shape_dev_;             // α + n_g/2 per group, float64 on the draw's device
  bool draw_on_device_ = false;
  std::vector<torch::Tensor> lambda_dev_;  // λ_g as 0-dim tensors in the group's dtype and device
  struct LambdaBuffer {
    torch::Tensor values;       // [groups] on one dtype and device: lambda_dev_ are views of it
    std::vector<size_t> groups;  // the group of each element
    torch::Tensor draw_index;    // `groups` on the device of a device draw (draw_on_device)
  };
  std::vector<LambdaBuffer> lambda_buffers_;
  // Parallel chains: per parameter, the λ of each chain's slice as a [C, 1, ...] view of its buffer,
  // so that the prior's gradient is one op per parameter (100 chains of H.1: 4 instead of 400).
  // Empty, and every group on its own, unless each parameter's chain groups sit in a row of one buffer.
  struct ChainParam {
    torch::Tensor param, lambda;
  };
  std::vector<ChainParam> chain_params_;
  bool chains_vectorized_ = false;
  void plan_chain_params(const std::vector<std::pair<size_t, int64_t>>& slot);
  bool learn_;
  double alpha_, beta_;
};

// Prior groups for `model` by `mode`: per_tensor (each parameter tensor), single (all together),
// model (the model's own prior_groups()), patterns (`patterns`: (group, fnmatch pattern) in order;
// each parameter joins the first group whose pattern matches its name). std::invalid_argument
// "prior.groups: ..." for a pattern that matches no parameter or a parameter no pattern matches.
std::vector<PriorGroup> make_prior_groups(Model& model, const std::string& mode,
                                          const std::vector<std::pair<std::string, std::string>>& patterns = {});

}  // namespace sgmcmc
