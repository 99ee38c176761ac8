#include "train/step_runner.h"

#include "core/kernel_settings.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "kernels/cuda/copy_async.h"
#include "kernels/cpu/gather_rows.h"

namespace sgmcmc {

torch::Tensor LossMeter::drain_sum() {
  auto sum = sum_.clone();
  sum_.zero_();
  return sum;
}

void LossMeter::add(const torch::Tensor& nll, double weight) {
  if (sum_.device().is_cpu() && nll.device().is_cpu() && nll.numel() == 1 &&
      (nll.scalar_type() == torch::kFloat32 || nll.scalar_type() == torch::kFloat64)) {
    const double x = nll.scalar_type() == torch::kFloat32 ? static_cast<double>(*nll.data_ptr<float>())
                                                          : *nll.data_ptr<double>();
    *sum_.data_ptr<double>() += weight * x;
    return;
  }
  sum_.add_(nll, weight);
}

void LossMeter::load(torch::serialize::InputArchive& ar, int64_t count) {
  torch::Tensor s;
  ar.read("loss_sum", s, true);
  sum_.copy_(s);  // in place: a model's loss sink and a captured step graph hold this tensor
  count_ = count;
}

StepRunner::StepRunner(Model& model, Sampler& sampler, const GaussianPrior& prior, const Batch& train,
                       double grad_scale, int64_t batch_size, LossMeter& loss, bool graph, torch::Device device,
                       at::Generator gen, int64_t graph_steps)
    : model_(model),
      sampler_(sampler),
      prior_(prior),
      train_(train),
      scale_(grad_scale),
      loss_denominator_(static_cast<double>(batch_size * model.chains())),
      loss_(loss) {
  seed_with_prior_ = prior.covers(sampler.parameters());
  if (seed_with_prior_) seeds_ = prior.seeds();
  if (byte_rows_enabled()) train_bytes_ = ByteRows::of(train.inputs);
  closure_ = [this] { return gradient(); };
  fold_on_ = kernel_settings().prior_fold;
  use_loss_sink(!device.is_cpu());
  if (!graph) {
    plan_prior_fold();
    return;
  }
  // The captured body reads static buffers only: the batch's indices (copied in before each step),
  // the sampler's per-step scalars (its kPrepare step), λ and τ (tensors updated in place by Gibbs).
  graph_ = std::make_unique<StepGraph>(device, gen);
  idx_static_ = torch::zeros({batch_size * model.minibatch_chains()}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  graph_body_ = [this] {
    select_batch(idx_static_);
    gradient_and_update(0);
    add_batch_loss();
  };
  if (graph_steps < 1) throw std::invalid_argument("train.graph_steps must be >= 1");
  if (graph_steps == 1) return;
  // Before anything is captured: the step buffers' rows are the captured kernels' addresses.
  sampler_.set_step_mode(Sampler::StepMode::kPrepare, graph_steps);
  block_steps_ = graph_steps;
  const int64_t rows = batch_size * model.minibatch_chains();
  idx_block_static_ = torch::zeros({graph_steps * rows}, idx_static_.options());
  auto row_bytes = [](const torch::Tensor& t) { return t.numel() == 0 ? 0 : static_cast<int64_t>(t.nbytes()) / t.size(0); };
  block_rows_bytes_ = graph_steps * rows * (row_bytes(train.inputs) + row_bytes(train.targets));
  block_rows_fit_ = block_rows_bytes_ <= kBlockRowsBytes;
  block_gather_steps_ = graph_steps;  // at once, unless limit_block_gather says otherwise
  block_graph_ = std::make_unique<StepGraph>(device, gen, /*warmup=*/1);
  block_body_ = [this] { block_body(); };
}

void StepRunner::limit_block_rows(int64_t bytes) {
  if (block_graph_ && block_graph_->warmups() + block_graph_->replays() > 0)
    throw std::logic_error("StepRunner::limit_block_rows: after the first block");
  block_rows_fit_ = block_rows_bytes_ <= bytes;
}

void StepRunner::limit_block_gather(int64_t bytes) {
  if (block_graph_ && block_graph_->warmups() + block_graph_->replays() > 0)
    throw std::logic_error("StepRunner::limit_block_gather: after the first block");
  const int64_t per_step = block_steps_ > 0 ? block_rows_bytes_ / block_steps_ : 0;
  block_gather_steps_ = 1;  // the most steps, a divisor of the block, whose rows fit
  for (int64_t d = 1; d <= block_steps_; ++d)
    if (block_steps_ % d == 0 && d * per_step <= bytes) block_gather_steps_ = d;
}

void StepRunner::block_body() {
  const int64_t rows = idx_static_.numel();
  const int64_t chunk = block_gather_steps_;  // divides block_steps_
  const Batch own = batch_;
  for (int64_t j = 0; j < block_steps_; ++j) {
    if (block_rows_fit_) {
      // the next `chunk` steps' rows into the same buffer, behind the steps that read the last ones
      if (j % chunk == 0) select_rows(block_rows_, idx_block_static_.narrow(0, j * rows, chunk * rows));
      batch_.inputs = block_rows_.inputs.narrow(0, (j % chunk) * rows, rows);
      batch_.targets = block_rows_.targets.narrow(0, (j % chunk) * rows, rows);
    } else {
      select_batch(idx_block_static_.narrow(0, j * rows, rows));
    }
    gradient_and_update(j);
    add_batch_loss();
    if (after_block_step_ && *after_block_step_ && idx_block_static_.device().is_cpu()) (*after_block_step_)(j);
  }
  if (block_rows_fit_) batch_ = own;  // the one-step graph's buffers, for steps outside blocks
}

void StepRunner::step_block(const torch::Tensor& idx, const std::function<void(int64_t)>& before_step,
                            const std::function<void(int64_t)>& after_step) {
  if (!block_graph_) throw std::logic_error("StepRunner::step_block: no block graph (train.graph_steps)");
  if (idx.numel() != idx_block_static_.numel())
    throw std::invalid_argument("StepRunner::step_block: " + std::to_string(idx.numel()) + " indices for a block of " +
                                std::to_string(idx_block_static_.numel()));
  kernels::copy_async(idx_block_static_, idx);
  sampler_.begin_prepared_block();
  try {
    for (int64_t j = 0; j < block_steps_; ++j) {
      before_step(j);
      sampler_.step(closure_);  // kPrepare: row j's scalars and noise
    }
  } catch (...) {
    (void)sampler_.end_prepared_block();
    throw;
  }
  (void)sampler_.end_prepared_block();
  after_block_step_ = &after_step;
  try {
    block_graph_->run(block_body_, sampler_.prepared_rules());
  } catch (...) {
    after_block_step_ = nullptr;
    throw;
  }
  after_block_step_ = nullptr;
  for (int64_t j = 0; j < block_steps_; ++j) loss_.count_step();
}

void StepRunner::gradient_and_update(int64_t row) {
  closure_();
  sampler_.launch_prepared(row);
}

StepRunner::~StepRunner() { use_loss_sink(false); }

void StepRunner::set_gradient_reduction(std::function<void(torch::Tensor& batch_nll)> reduce) {
  reduce_ = std::move(reduce);
  if (reduce_) use_loss_sink(false);
}

void StepRunner::use_loss_sink(bool on) {
  const bool want = on && !reduce_ && sampler_.calls_closure_once();
  if (want == sink_) return;
  const double weight = 1.0 / loss_denominator_;
  if (want) {
    sink_ = model_.set_loss_sink(loss_.sum_buffer(), weight);
  } else {
    model_.set_loss_sink({}, weight);
    sink_ = false;
  }
}

torch::Tensor StepRunner::from_model(torch::Tensor nll) {
  if (nll.defined()) loss_in_model_ = sink_;
  return nll;
}

torch::Tensor StepRunner::closure_value() {
  return sampler_.reads_closure_value() ? batch_nll_ * scale_like(batch_nll_) : torch::Tensor();
}

const torch::Tensor& StepRunner::scale_like(const torch::Tensor& t) {
  if (!scale_t_.defined() || scale_t_.scalar_type() != t.scalar_type() || scale_t_.device() != t.device())
    scale_t_ = torch::full({}, scale_, t.options().requires_grad(false));
  return scale_t_;
}

torch::Tensor StepRunner::likelihood_backward() {
  if (model_backward_) {
    auto nll = from_model(model_.nll_backward(batch_, scale_));
    if (nll.defined()) return nll;
  }
  auto nll = model_.nll(batch_);
  nll.backward(scale_like(nll));
  return nll.detach();
}

void StepRunner::plan_prior_fold() {
  fold_entries_.clear();
  if (!seed_with_prior_ || !model_.overwrites_grad() || !sampler_.has_fused_step() || !sampler_.flat()) return;
  std::vector<FoldEntry> entries;
  const auto& groups = prior_.groups();
  for (size_t k = 0; k < groups.size(); ++k)
    for (const auto& p : groups[k].params) {
      const auto pos = sampler_.flat_position(p);
      if (!pos || !p.device().is_cpu() || !p.is_contiguous()) return;
      int64_t begin = pos->second, n = p.numel();
      if (groups[k].chain >= 0) {  // one chain's slice along dim 0
        if (p.dim() == 0 || groups[k].chain >= p.size(0)) return;
        begin += groups[k].chain * p.stride(0);
        n /= p.size(0);
      }
      entries.push_back({pos->first, begin, n, k});
    }
  std::sort(entries.begin(), entries.end(), [](const FoldEntry& a, const FoldEntry& b) {
    return a.flat_group != b.flat_group ? a.flat_group < b.flat_group : a.begin < b.begin;
  });
  fold_entries_ = std::move(entries);
  fold_.assign(sampler_.param_groups().size(), {});
}

bool StepRunner::prior_folded() const {
  return fold_on_ && !fold_entries_.empty() && model_backward_ && !reduce_ && sampler_.fused() &&
         sampler_.step_mode() == Sampler::StepMode::kEager;
}

const std::vector<kernels::PriorFold>& StepRunner::prior_fold() {
  for (auto& f : fold_) f.clear();
  const auto& lambda = prior_.precisions();
  for (const auto& e : fold_entries_) fold_[e.flat_group].push_back({e.begin, e.n, lambda[e.prior_group]});
  return fold_;
}

torch::Tensor StepRunner::gradient() {
  loss_in_model_ = false;
  if (prior_folded()) {  // .grad := (N/n)·∇nll; the sampler's kernel adds λθ as it reads it
    batch_nll_ = from_model(model_.nll_backward_overwrite(batch_, scale_));
    if (!batch_nll_.defined()) {
      sampler_.zero_grad();
      batch_nll_ = likelihood_backward();
    }
    sampler_.fold_prior_into_next_step(prior_fold());
    return closure_value();
  }
  if (reduce_) {  // data mode: the ranks' likelihood gradients are summed first, then λθ added once
    sampler_.zero_grad();
    batch_nll_ = likelihood_backward();
    reduce_(batch_nll_);
    prior_.add_grad();
    return closure_value();
  }
  // .grad := λθ, then the backward pass accumulates (N/n)·∇nll into it: the N/n scaling is the
  // incoming gradient of the backward pass rather than a multiply in the graph.
  if (seed_with_prior_ && model_backward_ && !seeds_.empty()) {  // λθ + (N/n)·∇nll in the model's own pass
    batch_nll_ = from_model(model_.nll_backward_seeded(batch_, scale_, seeds_));
    if (batch_nll_.defined()) return closure_value();
  }
  if (seed_with_prior_) prior_.seed_grad(); else sampler_.zero_grad();
  batch_nll_ = likelihood_backward();
  if (!seed_with_prior_) prior_.add_grad();
  return closure_value();
}

void StepRunner::select_rows(Batch& out, const torch::Tensor& idx) {
  // into the same buffers every step on the CPU (kernels/cpu/gather_rows.h), images from their bytes
  // (data/byte_rows.h); index_select elsewhere
  if (train_bytes_ && idx.device().is_cpu()) train_bytes_->gather_out(out.inputs, idx);
#if defined(SGMCMC_WITH_CUDA)
  else if (idx.is_cuda() && kernel_settings().cuda_gather_fused &&
           kernels::gather_rows_pair_cuda(out.inputs, train_.inputs, out.targets, train_.targets, idx))
    return;  // both in one kernel (kernels.cuda_gather: fused)
#endif
  else kernels::gather_rows_out(out.inputs, train_.inputs, idx);
  kernels::gather_rows_out(out.targets, train_.targets, idx);
}

void StepRunner::add_batch_loss() {
  if (!loss_in_model_) loss_.add(batch_nll_, 1.0 / loss_denominator_);
}

void StepRunner::step(const torch::Tensor& idx) {
  if (graph_) {
    kernels::copy_async(idx_static_, idx);
    sampler_.step(closure_);  // kPrepare: the host's part of the step only
    graph_->run(graph_body_, sampler_.prepared_rules());
  } else {
    select_batch(idx);
    sampler_.step(closure_);
    add_batch_loss();
  }
  loss_.count_step();
}

std::map<std::string, double> StepRunner::graph_counts() const {
  if (!graph_) return {};
  std::map<std::string, double> out{{"graph_warmup_steps", static_cast<double>(graph_->warmups())},
                                    {"graph_captures", static_cast<double>(graph_->captures())},
                                    {"graph_replays", static_cast<double>(graph_->replays())}};
  if (block_graph_) {  // in blocks of graph_steps steps each
    out["graph_block_warmups"] = static_cast<double>(block_graph_->warmups());
    out["graph_block_captures"] = static_cast<double>(block_graph_->captures());
    out["graph_block_replays"] = static_cast<double>(block_graph_->replays());
  }
  return out;
}

}  // namespace sgmcmc
