// One training step's work: the minibatch, the gradient ∇Ũ = (N/n)·∇nll(batch) + λθ into .grad
// (or, with the prior folded into the update, (N/n)·∇nll into .grad and λθ added by the sampler's
// kernel), the sampler's update, and the running training loss. Eagerly, or (train.graph) as a whole-step
// graph captured once and replayed (StepGraph), with the batch's indices and the sampler's
// scalars in static buffers.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "data/byte_rows.h"
#include "models/model.h"
#include "priors/gaussian_prior.h"
#include "samplers/sampler.h"
#include "train/step_graph.h"

namespace sgmcmc {

// Σ of the per-example minibatch nll over the steps since the last evaluation, on the device
// (reading it is a host sync, done only at evaluations).
class LossMeter {
 public:
  explicit LossMeter(torch::Device device)
      : sum_(torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device))) {}
  // Σ += weight · nll: on the host for a CPU sum and a CPU float nll (no ATen op: an add_ with its
  // widening copy is ~4 µs, 0.4 % of the App. H.1 step), else one add_ (the float nll widened inside;
  // no host sync on a GPU).
  void add(const torch::Tensor& nll, double weight);
  void count_step() { ++count_; }
  // The sum since the last call as a device scalar (to be read back with an evaluation's other
  // values), `steps` the steps it covers; then a reset, in place: a captured step graph adds to this
  // very buffer.
  torch::Tensor take_sum(int64_t& steps) {
    steps = take_steps();
    return drain_sum();
  }
  // take_sum's two halves: the sum as a copy, the buffer reset in place (device ops only: what a
  // captured evaluation replays), and the steps it covers (the host's counter, reset).
  torch::Tensor drain_sum();
  int64_t take_steps() { return std::exchange(count_, 0); }
  // The same as a mean, read at once (NaN when no step was taken).
  double take_mean() {
    int64_t steps = 0;
    const double sum = take_sum(steps).item<double>();
    return steps > 0 ? sum / static_cast<double>(steps) : NAN;
  }
  // False when a step was counted and the sum is not finite (one host read).
  bool finite() const { return count_ == 0 || std::isfinite(sum_.item<double>()); }

  int64_t count() const { return count_; }
  // The sum itself (float64, 0-dim, on the device), for a model that adds into it (Model::set_loss_sink);
  // take_sum and load keep this very tensor.
  const torch::Tensor& sum_buffer() const { return sum_; }
  void save(torch::serialize::OutputArchive& ar) const { ar.write("loss_sum", sum_, true); }
  void load(torch::serialize::InputArchive& ar, int64_t count);

 private:
  torch::Tensor sum_;
  int64_t count_ = 0;
};

class StepRunner {
 public:
  // `batch_size` is per chain; `graph`: capture the step (train.graph) with `gen` registered;
  // `graph_steps` > 1 (with `graph`): blocks of that many steps captured as one graph as well
  // (train.graph_steps; step_block), the sampler's step buffers sized for them.
  StepRunner(Model& model, Sampler& sampler, const GaussianPrior& prior, const Batch& train, double grad_scale,
             int64_t batch_size, LossMeter& loss, bool graph, torch::Device device, at::Generator gen,
             int64_t graph_steps = 1);
  ~StepRunner();  // takes its loss sink back from the model
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  // One step on the training examples `idx`.
  void step(const torch::Tensor& idx);
  // The steps step_block takes at once: train.graph_steps where the step is captured, else 1.
  int64_t block_steps() const { return block_graph_ ? block_steps_ : 1; }
  // block_steps() steps in one graph launch, bit for bit the same as that many step() calls:
  // `idx` holds their minibatches' indices one after the other ([block_steps() · batch]), and
  // `before_step(j)` runs before step j's host part (the sampler's lr and temperature for it);
  // `after_step(j)`, if set, after step j's work where the steps run on the host (the CPU: nothing is
  // captured there, and a per-step check sees each step's batch_nll()); never on a GPU. The
  // indices go to the device in one copy, the sampler's scalars in one copy per group; the graph
  // gathers every step's rows into one block of rows first (where that block fits kBlockRowsBytes;
  // otherwise each step gathers its own), then runs each step on its slice of that block.
  void step_block(const torch::Tensor& idx, const std::function<void(int64_t)>& before_step,
                  const std::function<void(int64_t)>& after_step = {});
  // The block's rows are gathered at once up to this many bytes (kBlockRowsBytes unless set; before
  // the first block); beyond, each step of the block gathers its own (the tests set 0 for that path).
  void limit_block_rows(int64_t bytes);
  // Where the block's rows are gathered at once, gathers them a few steps at a time instead: the most steps
  // (a divisor of the block) whose rows fit this many bytes, so that a step's first product can read rows
  // still in the L2 cache; before the first block. Why: App. H.1's first product takes 9.8 µs on an H100
  // when its rows come from an epoch's 157 MB gathered at once and 7.2 µs right after its own step's
  // gather (bench_step --kernel-trace). Not yet the default: bench_step --block-gather-bytes times it.
  void limit_block_gather(int64_t bytes);
  // Steps whose rows one gather brings (block_steps() where the block gathers at once; 0 without blocks
  // or where each step gathers its own).
  int64_t block_gather_steps() const { return block_rows_fit_ ? block_gather_steps_ : 0; }
  // Called after the backward pass, before the prior's gradient, with the minibatch nll (detached):
  // distributed.mode: data sums .grad and the nll over the ranks here (the hook of DistributedRun).
  // The model's backward pass then adds no loss of its own (use_loss_sink(false)): the reduced nll is
  // the one that counts.
  void set_gradient_reduction(std::function<void(torch::Tensor& batch_nll)> reduce);
  // Whether the model's backward pass adds the batch loss into the LossMeter's sum itself
  // (Model::set_loss_sink; the fused CUDA MLP pass in its last kernel) instead of one add op after it.
  // On by default off the CPU (there the meter adds on the host, no op at all), where the model
  // accepts, the sampler calls its closure once a step and no gradient reduction is set.
  void use_loss_sink(bool on);
  // false: always autograd on Model::nll (train.backward: autograd); true (default): the model's own
  // backward pass (Model::nll_backward) where it has one.
  void use_model_backward(bool on) { model_backward_ = on; }
  // The prior's gradient folded into the sampler's update (default on; kernels.prior_fold: false
  // turns it off): the model's backward pass overwrites .grad with (N/n)·∇nll, and the fused kernel
  // reads .grad + λθ (kernels::PriorFold), instead of seeding .grad with λθ before an accumulating
  // backward pass. Applies where the seed would and, besides, the model has an overwriting backward
  // pass (Model::overwrites_grad), the sampler a fused step over flat CPU groups, and the step is
  // eager (no graph, no distributed gradient reduction). The same ∇Ũ up to the order of the float
  // additions (tests/test_step_runner.cpp).
  void use_prior_fold(bool on) { fold_on_ = on; }
  // True if the next step folds the prior (the conditions above).
  bool prior_folded() const;
  // The last minibatch's nll Σ (a device scalar).
  const torch::Tensor& batch_nll() const { return batch_nll_; }
  // graph_warmup_steps, graph_captures, graph_replays (empty without a graph).
  std::map<std::string, double> graph_counts() const;

 private:
  torch::Tensor gradient();  // the closure: ∇Ũ into .grad, returns closure_value()
  // (N/n)·nll(batch) where the sampler reads it (Sampler::reads_closure_value), else undefined
  torch::Tensor closure_value();
  torch::Tensor likelihood_backward();  // (N/n)·∇nll(batch) added into .grad; returns nll (detached)
  // A model backward pass's nll, noting that the model added it to the loss sum (where the sink is on)
  torch::Tensor from_model(torch::Tensor nll);
  void select_batch(const torch::Tensor& idx) { select_rows(batch_, idx); }
  void select_rows(Batch& out, const torch::Tensor& idx);
  void block_body();  // the captured body of step_block
  // A captured step's closure and update (row `row` of the prepared step): the sampler's launch.
  void gradient_and_update(int64_t row);
  void plan_prior_fold();                      // fold_entries_, where the fold can apply
  const std::vector<kernels::PriorFold>& prior_fold();  // this step's segments, with the current λ
  void add_batch_loss();

  Model& model_;
  Sampler& sampler_;
  const GaussianPrior& prior_;
  const Batch& train_;
  std::optional<ByteRows> train_bytes_;  // train_.inputs as bytes, when they are (CPU; data/byte_rows.h)
  double scale_;
  double loss_denominator_;  // n · chains: the loss is per example
  LossMeter& loss_;
  Batch batch_;
  torch::Tensor batch_nll_;
  bool model_backward_ = true;
  bool seed_with_prior_ = false;  // the prior's groups cover every sampler parameter (GaussianPrior::seed_grad)
  std::vector<PriorSeed> seeds_;  // with seed_with_prior_: each parameter's λ (Model::nll_backward_seeded)
  // The fold: each prior group's run of elements in the sampler's flat buffers (empty where the fold
  // cannot apply), and the per-group segments handed to the sampler each step.
  struct FoldEntry {
    size_t flat_group;
    int64_t begin, n;
    size_t prior_group;
  };
  std::vector<FoldEntry> fold_entries_;
  std::vector<kernels::PriorFold> fold_;
  bool fold_on_ = true;
  // N/n as a 0-d tensor of the nll's dtype and device: the autograd backward's incoming gradient,
  // and the factor of the returned (N/n)·nll (the same float as a double scalar would be rounded to,
  // without the scalar's wrapping and conversion ops).
  torch::Tensor scale_t_;
  const torch::Tensor& scale_like(const torch::Tensor& t);
  Closure closure_;
  std::unique_ptr<StepGraph> graph_;
  torch::Tensor idx_static_;
  std::function<void()> graph_body_;
  // train.graph_steps: the block's graph, its indices [K · batch], its gathered rows (empty when they
  // would exceed kBlockRowsBytes, or before the first block).
  static constexpr int64_t kBlockRowsBytes = int64_t{1} << 30;
  int64_t block_steps_ = 1;
  std::unique_ptr<StepGraph> block_graph_;
  torch::Tensor idx_block_static_;
  Batch block_rows_;
  bool block_rows_fit_ = false;
  int64_t block_rows_bytes_ = 0;  // what the block's rows take (0 without blocks)
  int64_t block_gather_steps_ = 1;  // steps a gather brings within the block (a divisor of block_steps_)
  std::function<void()> block_body_;
  const std::function<void(int64_t)>* after_block_step_ = nullptr;  // step_block's, while it runs
  std::function<void(torch::Tensor&)> reduce_;
  bool sink_ = false;           // the model adds the loss (use_loss_sink)
  bool loss_in_model_ = false;  // and did so for this step's batch_nll_
};

}  // namespace sgmcmc
