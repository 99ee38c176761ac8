#include "samplers/sampler.h"

#include <cmath>
#include <stdexcept>

#include "compat.h"

#include <ATen/CPUGeneratorImpl.h>

namespace sgmcmc {

Sampler::Sampler(std::vector<ParamGroup> groups, at::Generator generator, double lr,
                 double temperature)
    : groups_(std::move(groups)), generator_(std::move(generator)), lr_(0), temperature_(1) {
  set_lr(lr);
  set_temperature(temperature);
  for (const auto& g : groups_) {
    if (!(g.lr_scale > 0) || !std::isfinite(g.lr_scale))
      throw std::invalid_argument("param group lr_scale must be positive");
    for (const auto& p : g.params)
      if (!p.defined()) throw std::invalid_argument("undefined parameter tensor");
  }
  for (const auto& g : groups_)
    flat_.push_back(FlatGroup::eligible(g.params) ? std::make_unique<FlatGroup>(g.params) : nullptr);
}

bool Sampler::flat() const {
  for (const auto& f : flat_)
    if (!f) return false;
  return !flat_.empty();
}

Sampler::StateBuffer Sampler::make_state(double fill) const {
  StateBuffer b;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (flat_[g]) {
      auto buf = torch::full({flat_[g]->numel()}, fill, flat_[g]->data().options());
      b.group.push_back(buf);
      for (auto& t : flat_[g]->split(buf)) b.param.push_back(t);
    } else {
      b.group.emplace_back();
      for (const auto& p : groups_[g].params) b.param.push_back(torch::full_like(p, fill));
    }
  }
  return b;
}

torch::Tensor Sampler::group_state(const StateBuffer& state, size_t g) const {
  size_t first = 0;
  for (size_t k = 0; k < g; ++k) first += groups_[k].params.size();
  std::vector<torch::Tensor> parts;
  for (size_t i = 0; i < groups_[g].params.size(); ++i) parts.push_back(state.param[first + i].reshape(-1));
  return parts.empty() ? torch::Tensor() : torch::cat(parts);
}

double Sampler::gradient_noise_ratio(size_t group, const torch::Tensor& grad_variance) const {
  if (!checks_gradient_noise() || temperature_ <= 0 || !grad_variance.defined() || grad_variance.numel() == 0)
    return NAN;
  return noise_ratio(group, grad_variance);
}

namespace detail {
kernels::NoiseStream next_noise_stream(at::Generator& gen, const torch::Device& device) {
  kernels::NoiseStream s;
  if (device.is_cpu()) {
    auto* impl = at::check_generator<at::CPUGeneratorImpl>(gen);
    std::lock_guard<std::mutex> lock(gen.mutex());
    s.key = impl->random64();
  }
  return s;
}
}  // namespace detail

torch::Tensor Sampler::step(const Closure& closure) {
  if (mode_ == StepMode::kPrepare) {  // the host's part only; the closure runs in the captured body
    step();
    return {};
  }
  torch::Tensor loss;
  {
    torch::AutoGradMode enable(true);
    loss = closure();
  }
  // A sampler without a fused step may not reach step_params, where a fold is otherwise consumed.
  if (!fold_.empty() && !has_fused_step()) {
    for (size_t g = 0; g < fold_.size(); ++g) add_folded_prior(g);
    fold_.clear();
  }
  step();
  if (!fold_.empty()) {
    fold_.clear();
    throw std::logic_error("Sampler " + name() + ": the step did not consume the prior fold");
  }
  return loss;
}

void Sampler::fold_prior_into_next_step(const std::vector<kernels::PriorFold>& fold) {
  if (!flat() || fold.size() != groups_.size())
    throw std::invalid_argument("Sampler::fold_prior_into_next_step: needs flat groups and one fold per group");
  for (size_t g = 0; g < fold.size(); ++g)
    kernels::check_prior_fold(fold[g], flat_[g]->numel(), "Sampler::fold_prior_into_next_step");
  fold_ = fold;
}

std::optional<std::pair<size_t, int64_t>> Sampler::flat_position(const torch::Tensor& p) const {
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!flat_[g]) continue;
    for (const auto& q : groups_[g].params)
      if (q.unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) {
        const auto& d = flat_[g]->data();
        const auto off = (static_cast<const char*>(p.data_ptr()) - static_cast<const char*>(d.data_ptr())) /
                         static_cast<std::ptrdiff_t>(d.element_size());
        if (off < 0 || off + p.numel() > d.numel()) return std::nullopt;  // its storage was replaced
        return std::make_pair(g, static_cast<int64_t>(off));
      }
  }
  return std::nullopt;
}

void Sampler::add_folded_prior(size_t g) {
  if (g >= fold_.size() || fold_[g].empty()) return;
  torch::NoGradGuard no_grad;
  auto grad = flat_[g]->grad();
  const auto& theta = flat_[g]->data();
  // g + (λθ): two roundings, as in the fused kernel
  for (const auto& s : fold_[g]) grad.narrow(0, s.begin, s.n).add_(theta.narrow(0, s.begin, s.n).mul(s.lambda));
  fold_[g].clear();
}

void Sampler::set_step_mode(StepMode mode, int64_t block_rows) {
  if (block_rows < 1) throw std::invalid_argument("Sampler::set_step_mode: block_rows must be >= 1");
  if (mode == StepMode::kPrepare && !graph_capturable())
    throw std::invalid_argument("train.graph: sampler " + name() +
                                " cannot be captured; a captured step needs a fused update (sgld, psgld, sghmc "
                                "with noise_estimate none or constant, msgnht, santa without grad_decay), flat parameter groups and "
                                "train.fused: true");
  if (mode == StepMode::kPrepare && (step_buffers_.empty() || step_buffers_.front()->rows() != block_rows)) {
    step_buffers_.clear();
    for (const auto& f : flat_) step_buffers_.push_back(std::make_unique<StepParamsBuffer>(f->data().device(), block_rows));
  }
  prepared_.assign(static_cast<size_t>(mode == StepMode::kPrepare ? block_rows : 1),
                   std::vector<PreparedLaunch>(groups_.size()));
  block_ = false;
  block_row_ = 0;
  prepared_rows_ = 1;
  mode_ = mode;
}

void Sampler::begin_prepared_block() {
  if (mode_ != StepMode::kPrepare) throw std::logic_error("Sampler::begin_prepared_block: not in kPrepare mode");
  if (block_) throw std::logic_error("Sampler::begin_prepared_block: a block is open");
  block_ = true;
  block_row_ = 0;
}

int64_t Sampler::end_prepared_block() {
  if (!block_) throw std::logic_error("Sampler::end_prepared_block: no block is open");
  block_ = false;
  if (block_row_ == 0) throw std::logic_error("Sampler::end_prepared_block: the block prepared no step");
  for (auto& b : step_buffers_) b->commit(block_row_);
  prepared_rows_ = block_row_;
  return block_row_;
}

const std::vector<Sampler::PreparedLaunch>& Sampler::prepared_row(int64_t row, const char* who) const {
  if (mode_ != StepMode::kPrepare) throw std::logic_error(std::string(who) + ": not in kPrepare mode");
  if (row < 0 || row >= static_cast<int64_t>(prepared_.size()))
    throw std::logic_error(std::string(who) + ": row " + std::to_string(row) + " outside the prepared block");
  const auto& launches = prepared_[static_cast<size_t>(row)];
  for (const auto& l : launches)
    if (!l.ready) throw std::logic_error(std::string(who) + ": no step was prepared");
  return launches;
}

void Sampler::launch_prepared(int64_t row) {
  const auto& launches = prepared_row(row, "Sampler::launch_prepared");
  torch::NoGradGuard no_grad;
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto theta = flat_[g]->data();
    kernels::fused_update_from(launches[g].rule, theta, launches[g].state, flat_[g]->grad(),
                               step_buffers_[g]->device_buffer(row));
  }
}

std::vector<int> Sampler::prepared_rules() const {
  std::vector<int> out;
  for (int64_t r = 0; r < prepared_rows_; ++r)
    for (const auto& p : prepared_[static_cast<size_t>(r)]) out.push_back(static_cast<int>(p.rule));
  return out;
}

void Sampler::zero_grad() {
  for (auto& g : groups_)
    for (auto& p : g.params) compat::zero_grad_inplace(p);
}

void Sampler::set_lr(double lr) {
  if (!(lr >= 0) || !std::isfinite(lr))
    throw std::invalid_argument("lr must be a finite number >= 0, got " + std::to_string(lr));
  lr_ = lr;
}

void Sampler::set_lr_scale(size_t group, double scale) {
  if (group >= groups_.size())
    throw std::invalid_argument("param group " + std::to_string(group) + " out of range (" +
                                std::to_string(groups_.size()) + " groups)");
  if (!(scale > 0) || !std::isfinite(scale))
    throw std::invalid_argument("param group lr_scale must be a finite number > 0, got " + std::to_string(scale));
  groups_[group].lr_scale = scale;
}

void Sampler::set_temperature(double t) {
  if (!(t >= 0) || !std::isfinite(t))
    throw std::invalid_argument("temperature must be a finite number >= 0, got " +
                                std::to_string(t));
  temperature_ = t;
}

std::vector<torch::Tensor> Sampler::parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

torch::Tensor Sampler::randn_like(const torch::Tensor& like) {
  return at::randn(like.sizes(), generator_, like.options());
}

void Sampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("step_count", torch::tensor(step_count_, torch::kInt64));
  archive.write("lr", torch::tensor(lr_, torch::kFloat64));
  archive.write("temperature", torch::tensor(temperature_, torch::kFloat64));
  auto tensors = const_cast<Sampler*>(this)->state_tensors();
  for (auto& [key, t] : tensors)
    if (t->defined()) archive.write("state." + key, *t, /*is_buffer=*/true);
}

void Sampler::load(torch::serialize::InputArchive& archive) {
  // A fresh tensor per read: InputArchive::read into an already-defined tensor calls set_(), which
  // keeps the old dtype and reinterprets the bytes (a double lr read into the int64 step tensor).
  auto read_scalar = [&](const char* key) {
    torch::Tensor t;
    archive.read(key, t);
    return t;
  };
  step_count_ = read_scalar("step_count").item<int64_t>();
  lr_ = read_scalar("lr").item<double>();
  temperature_ = read_scalar("temperature").item<double>();
  for (auto& [key, ptr] : state_tensors()) {
    torch::Tensor value;
    if (!archive.try_read("state." + key, value, /*is_buffer=*/true)) continue;
    if (ptr->defined()) {
      ptr->copy_(value);
    } else {
      *ptr = value.to(parameters().empty() ? torch::kCPU : parameters()[0].device());
    }
  }
}

}  // namespace sgmcmc
