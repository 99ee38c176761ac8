#include "priors/gaussian_prior.h"

#include <fnmatch.h>

#include "kernels/cpu/scale_segments.h"

#include <algorithm>
#include <map>
#include <utility>
#include <stdexcept>

namespace sgmcmc {

GaussianPrior::GaussianPrior(std::vector<PriorGroup> groups, double precision, bool learn, double alpha, double beta)
    : groups_(std::move(groups)), lambda_(groups_.size(), precision), learn_(learn), alpha_(alpha), beta_(beta) {
  if (!(precision > 0)) throw std::invalid_argument("prior.precision: must be > 0");
  if (!(alpha > 0) || !(beta > 0)) throw std::invalid_argument("prior.alpha/beta: must be > 0");
  // λ_g lives in one buffer per dtype and device, each group's a 0-dim view of it, so that a Gibbs
  // step updates every λ with one copy per buffer (one for App. H.1's four groups and for 100
  // chains' 400 alike) instead of a fill per group.
  std::map<std::pair<int, std::string>, std::vector<size_t>> by_buffer;
  std::vector<torch::TensorOptions> options;
  for (size_t g = 0; g < groups_.size(); ++g) {
    options.push_back(groups_[g].params.empty() ? torch::TensorOptions().dtype(torch::kFloat64)
                                                : groups_[g].params.front().options().requires_grad(false));
    by_buffer[{static_cast<int>(options[g].dtype().toScalarType()), options[g].device().str()}].push_back(g);
  }
  lambda_dev_.resize(groups_.size());
  std::vector<std::pair<size_t, int64_t>> slot(groups_.size());  // group -> (buffer, position)
  for (auto& [key, members] : by_buffer) {
    LambdaBuffer b{torch::zeros({static_cast<int64_t>(members.size())}, options[members.front()]), members, {}};
    for (size_t i = 0; i < members.size(); ++i) {
      lambda_dev_[members[i]] = b.values.select(0, static_cast<int64_t>(i));
      slot[members[i]] = {lambda_buffers_.size(), static_cast<int64_t>(i)};
    }
    lambda_buffers_.push_back(std::move(b));
  }
  plan_chain_params(slot);
  sync_device_lambda();
}

void GaussianPrior::plan_chain_params(const std::vector<std::pair<size_t, int64_t>>& slot) {
  // Each parameter's chain slices, by chain: vectorized when chain c's group sits at position
  // first + c of one buffer for every c < C (make_prior_groups' order: a group's chains in a row).
  std::map<const void*, std::vector<std::pair<int64_t, size_t>>> slices;  // TensorImpl -> (chain, group)
  std::map<const void*, torch::Tensor> tensor;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].chain < 0) continue;
    for (const auto& p : groups_[g].params) {
      slices[p.unsafeGetTensorImpl()].push_back({groups_[g].chain, g});
      tensor[p.unsafeGetTensorImpl()] = p;
    }
  }
  std::vector<ChainParam> planned;
  for (auto& [impl, list] : slices) {
    const torch::Tensor& p = tensor[impl];
    std::sort(list.begin(), list.end());
    const auto [buffer, first] = slot[list.front().second];
    bool in_a_row = p.dim() > 0 && static_cast<int64_t>(list.size()) == p.size(0);
    for (size_t c = 0; in_a_row && c < list.size(); ++c)
      in_a_row = list[c].first == static_cast<int64_t>(c) && slot[list[c].second].first == buffer &&
                 slot[list[c].second].second == first + static_cast<int64_t>(c);
    if (!in_a_row) return;  // every chain group then takes the per-group path
    std::vector<int64_t> shape(static_cast<size_t>(p.dim()), 1);
    shape[0] = p.size(0);
    planned.push_back({p, lambda_buffers_[buffer].values.narrow(0, first, p.size(0)).view(shape)});
  }
  chain_params_ = std::move(planned);
  chains_vectorized_ = !chain_params_.empty();
}

void GaussianPrior::sync_device_lambda() {
  torch::NoGradGuard no_grad;
  for (auto& b : lambda_buffers_) {
    std::vector<double> values;
    for (size_t g : b.groups) values.push_back(lambda_[g]);
    // non-blocking: the host tensor is pageable, which CUDA copies from before returning, so the
    // copy needs no wait for the device (a blocking copy_ would synchronise the stream)
    b.values.copy_(torch::tensor(values, torch::kFloat64).to(b.values.scalar_type()), /*non_blocking=*/true);
  }
}

torch::Tensor GaussianPrior::neg_log_prob() const {
  refresh_host();
  torch::Tensor total;
  for (size_t g = 0; g < groups_.size(); ++g)
    for (const auto& p : groups_[g].params) {
      auto term = groups_[g].view(p).pow(2).sum() * (0.5 * lambda_[g]);
      total = total.defined() ? total + term : term;
    }
  return total.defined() ? total : torch::zeros({});
}

void GaussianPrior::for_each_grad(const GradOp& op) const {
  torch::NoGradGuard no_grad;
  auto grad_of = [](const torch::Tensor& p) -> torch::Tensor& {
    auto& grad = const_cast<torch::Tensor&>(p).mutable_grad();
    if (!grad.defined()) grad = torch::zeros_like(p);
    return grad;
  };
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (chains_vectorized_ && groups_[g].chain >= 0) continue;  // below, one op per parameter
    for (const auto& p : groups_[g].params) {
      auto out = groups_[g].view(grad_of(p));
      op(out, groups_[g].view(p), lambda_dev_[g]);
    }
  }
  // every chain's slice at once, λ broadcast along dim 0: the same products as one op per slice
  for (const auto& c : chain_params_) op(grad_of(c.param), c.param, c.lambda);
}

std::vector<PriorSeed> GaussianPrior::seeds() const {
  std::vector<PriorSeed> out;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].chain >= 0) return {};
    for (const auto& p : groups_[g].params) out.push_back({p, lambda_dev_[g]});
  }
  return out;
}

void GaussianPrior::add_grad() const {
  for_each_grad([](torch::Tensor& grad, const torch::Tensor& p, const torch::Tensor& lambda) {
    grad.addcmul_(p, lambda);
  });
}

void GaussianPrior::seed_grad() const {
  if (seed_grad_cpu()) return;
  for_each_grad([](torch::Tensor& grad, const torch::Tensor& p, const torch::Tensor& lambda) {
    at::mul_out(grad, p, lambda);
  });
}

namespace {
// The elements of PriorGroup::view(t) as one run of floats: t whole, or its slice `chain` along dim 0;
// {nullptr, 0} where they are not one contiguous float32 run on the CPU. Pointer arithmetic only:
// no view tensor (an ATen op per parameter and step otherwise).
std::pair<float*, int64_t> float_run(const PriorGroup& group, const torch::Tensor& t) {
  if (!t.defined() || !t.device().is_cpu() || t.scalar_type() != torch::kFloat32 || !t.is_contiguous())
    return {nullptr, 0};
  float* base = t.data_ptr<float>();
  if (group.chain < 0) return {base, t.numel()};
  if (t.dim() == 0 || group.chain >= t.size(0)) return {nullptr, 0};
  return {base + group.chain * t.stride(0), t.numel() / t.size(0)};
}
}  // namespace

bool GaussianPrior::seed_grad_cpu() const {
  if (pending_.defined() && !pending_.device().is_cpu()) return false;  // a device draw: for_each_grad reads it
  refresh_host();
  thread_local std::vector<kernels::ScaleSegment> segments;
  segments.clear();
  for (size_t g = 0; g < groups_.size(); ++g)
    for (const auto& p : groups_[g].params) {
      const auto [gp, gn] = float_run(groups_[g], p.grad());
      const auto [pp, pn] = float_run(groups_[g], p);
      if (gp == nullptr || pp == nullptr || gn != pn) return false;
      // λ as lambda_dev_ holds it (a float32 tensor filled from the double): the same float
      segments.push_back({gp, pp, gn, static_cast<float>(lambda_[g])});
    }
  kernels::scale_segments(segments);
  return true;
}

bool GaussianPrior::covers(const std::vector<torch::Tensor>& params) const {
  std::map<const void*, int64_t> covered;  // TensorImpl → elements covered by the groups
  for (const auto& g : groups_)
    for (const auto& p : g.params) covered[p.unsafeGetTensorImpl()] += g.view(p).numel();
  if (covered.size() != params.size()) return false;
  for (const auto& p : params) {
    auto it = covered.find(p.unsafeGetTensorImpl());
    if (it == covered.end() || it->second != p.numel()) return false;
  }
  return true;
}

torch::Tensor GaussianPrior::squared_norms() const { return squared_norms_on_device().cpu(); }

torch::Tensor GaussianPrior::squared_norms_on_device() const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> sq;
  // chain-slice groups: each parameter's per-chain sums once ([C], one reduction), not one per slice
  std::map<const void*, torch::Tensor> per_chain;
  for (const auto& g : groups_) {
    torch::Tensor s;
    for (const auto& p : g.params) {
      torch::Tensor t;
      if (g.chain < 0) {
        t = p.detach().to(torch::kFloat64).pow(2).sum();
      } else {
        auto& c = per_chain[p.unsafeGetTensorImpl()];
        if (!c.defined()) c = p.detach().to(torch::kFloat64).pow(2).reshape({p.size(0), -1}).sum(1);
        t = c.select(0, g.chain);
      }
      s = s.defined() ? s + t : t;
    }
    sq.push_back(s.defined() ? s : torch::zeros({}, torch::kFloat64));
  }
  for (auto& t : sq) t = t.to(sq.front().device());
  return torch::stack(sq);
}

void GaussianPrior::set_from_draw(const std::vector<double>& shape, const torch::Tensor& rate, at::Generator& gen) {
  // Gamma draws on the generator's device (a CUDA generator draws on the GPU; sample_gamma moves
  // the host's shape and rate there).
  auto draw = sample_gamma(torch::tensor(shape, torch::kFloat64), rate, gen).cpu();
  auto acc = draw.accessor<double, 1>();
  pending_ = torch::Tensor();
  for (size_t g = 0; g < groups_.size(); ++g) lambda_[g] = std::max(acc[g], 1e-300);
  sync_device_lambda();
}

std::vector<double> GaussianPrior::conditional_shapes() const {
  std::vector<double> shape;
  for (const auto& g : groups_) shape.push_back(alpha_ + 0.5 * static_cast<double>(g.numel()));
  return shape;
}

void GaussianPrior::gibbs_step(at::Generator& gen) {
  if (!learn_ || groups_.empty()) return;
  if (draw_on_device_)
    draw_pending(gibbs_draw_on_device(gen));
  else
    set_from_draw(conditional_shapes(), squared_norms() * 0.5 + beta_, gen);
}

torch::Tensor GaussianPrior::gibbs_draw_on_device(at::Generator& gen) {
  if (!learn_ || groups_.empty()) return {};
  // Every op below is queued on the device: the rate β + ‖θ‖²/2 > 0 by construction (the host path's
  // check in sample_gamma would be a read), a non-finite θ gives a NaN λ that the divergence guard's
  // check of θ catches at the next evaluation, as it would catch the θ itself.
  torch::NoGradGuard no_grad;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(gen.device());
  if (!shape_dev_.defined() || shape_dev_.device() != opts.device())
    shape_dev_ = torch::tensor(conditional_shapes(), torch::kFloat64).to(opts);  // once: a host-to-device copy waits
  const auto rate = (squared_norms_on_device().to(opts) * 0.5).add_(beta_);
  auto draw = (at::_standard_gamma(shape_dev_, gen) / rate).clamp_min_(1e-300);
  for (auto& b : lambda_buffers_) {
    // a buffer's groups are ascending (the constructor's order), so a buffer of every group is the draw
    torch::Tensor values = draw;
    if (b.groups.size() != groups_.size()) {
      if (!b.draw_index.defined() || b.draw_index.device() != draw.device())  // once (the copy waits)
        b.draw_index = torch::tensor(std::vector<int64_t>(b.groups.begin(), b.groups.end()), torch::kInt64)
                           .to(draw.device());
      values = draw.index_select(0, b.draw_index);
    }
    b.values.copy_(values.to(b.values.scalar_type()), /*non_blocking=*/true);
  }
  return draw;
}

void GaussianPrior::refresh_host() const {
  if (!pending_.defined()) return;
  const auto d = pending_.cpu();  // the one read: after the evaluation's, nothing is queued before it
  pending_ = torch::Tensor();
  auto acc = d.accessor<double, 1>();
  for (size_t g = 0; g < groups_.size(); ++g) lambda_[g] = acc[static_cast<int64_t>(g)];
}

void GaussianPrior::set_host_draw(const std::vector<double>& lambda) {
  if (lambda.size() != groups_.size())
    throw std::logic_error("GaussianPrior::set_host_draw: " + std::to_string(lambda.size()) + " values for " +
                           std::to_string(groups_.size()) + " groups");
  lambda_ = lambda;
  pending_ = torch::Tensor();
}

void GaussianPrior::initialize(const std::string& how, at::Generator& gen) {
  if (groups_.empty() || how == "precision") return;
  if (how == "prior_draw") {
    set_from_draw(std::vector<double>(groups_.size(), alpha_),
                  torch::full({static_cast<int64_t>(groups_.size())}, beta_, torch::kFloat64), gen);
    return;
  }
  if (how != "init_scale") throw std::invalid_argument("prior.init: unknown '" + how + "'");
  pending_ = torch::Tensor();
  auto sq = squared_norms();
  auto acc = sq.accessor<double, 1>();
  for (size_t g = 0; g < groups_.size(); ++g)
    lambda_[g] = acc[g] > 0 ? static_cast<double>(groups_[g].numel()) / acc[g] : lambda_[g];
  sync_device_lambda();
}

void GaussianPrior::set_precisions(const std::vector<double>& lambda) {
  if (lambda.size() != lambda_.size())
    throw std::invalid_argument("prior: checkpoint has " + std::to_string(lambda.size()) + " precisions, model has " +
                                std::to_string(lambda_.size()) + " groups");
  pending_ = torch::Tensor();
  lambda_ = lambda;
  sync_device_lambda();
}

std::map<std::string, double> GaussianPrior::log_values() const {
  refresh_host();
  // Groups sharing a name (the per-chain slices of one tensor) are logged as their mean over chains.
  std::map<std::string, double> sum, count;
  for (size_t g = 0; g < groups_.size(); ++g) {
    sum["lambda." + groups_[g].name] += lambda_[g];
    count["lambda." + groups_[g].name] += 1;
  }
  for (auto& [k, v] : sum) v /= count[k];
  return sum;
}

std::map<std::string, double> GaussianPrior::chain_values() const {
  refresh_host();
  std::map<std::string, double> out;
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].chain >= 0) out["lambda." + groups_[g].name + ".chain" + std::to_string(groups_[g].chain)] = lambda_[g];
  return out;
}

namespace {

std::vector<PriorGroup> groups_by_pattern(Model& model, const std::vector<std::pair<std::string, std::string>>& patterns) {
  std::vector<PriorGroup> groups;
  for (const auto& [name, _] : patterns) groups.push_back({name, {}});
  for (const auto& item : model.named_parameters()) {
    size_t g = 0;
    while (g < patterns.size() && fnmatch(patterns[g].second.c_str(), item.key().c_str(), 0) != 0) ++g;
    if (g == patterns.size())
      throw std::invalid_argument("prior.groups: parameter '" + item.key() +
                                  "' matches no pattern (add a last group such as rest: \"*\")");
    groups[g].params.push_back(item.value());
  }
  for (size_t g = 0; g < groups.size(); ++g)
    if (groups[g].params.empty())
      throw std::invalid_argument("prior.groups." + patterns[g].first + ": pattern '" + patterns[g].second +
                                  "' matches no parameter (or only parameters an earlier group took)");
  return groups;
}

}  // namespace

std::vector<PriorGroup> make_prior_groups(Model& model, const std::string& mode,
                                          const std::vector<std::pair<std::string, std::string>>& patterns) {
  if (model.own_prior()) return {};
  if (mode == "model") return model.prior_groups();
  std::vector<PriorGroup> groups;
  if (mode == "patterns") {
    groups = groups_by_pattern(model, patterns);
  } else if (mode == "single") {
    PriorGroup all{"all", {}};
    for (const auto& p : model.parameters()) all.params.push_back(p);
    groups.push_back(all);
  } else if (mode == "per_tensor") {
    for (const auto& item : model.named_parameters()) groups.push_back({item.key(), {item.value()}});
  } else {
    throw std::invalid_argument("prior.groups: unknown mode '" + mode + "'");
  }
  // Parallel chains: every chain gets its own precision per group (independent posteriors).
  const int64_t chains = model.chains();
  if (chains > 1) {
    std::vector<PriorGroup> split;
    for (const auto& g : groups)
      for (int64_t c = 0; c < chains; ++c) split.push_back({g.name, g.params, c});
    return split;
  }
  return groups;
}

}  // namespace sgmcmc
