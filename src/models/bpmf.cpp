#include "models/bpmf.h"

#include "core/gamma.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace sgmcmc {
namespace {

[[noreturn]] void bad_option(const std::string& key, const std::string& what) {
  throw std::invalid_argument("model." + key + ": " + what);
}

std::string str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Rows `index` of `table`. While autograd records on the CPU into an existing dense .grad (as in
// training: flat gradient buffers, seeded with the prior's gradient): an embedding with a sparse
// gradient, so that the backward pass adds the batch's rows into that .grad instead of zero-filling
// a table-sized gradient, scattering into it and adding it whole (4.2 → 1.6 ms for the
// forward and backward of U and V at ml-1M's shape, batch 4,000). Otherwise (no gradient, or CUDA,
// where a sparse gradient's host syncs would break graph capture; or no .grad yet, which would then
// become sparse) index_select.
torch::Tensor rows(const torch::Tensor& table, const torch::Tensor& index) {
  if (table.dim() == 2 && table.requires_grad() && torch::GradMode::is_enabled() && table.device().is_cpu() &&
      table.grad().defined() && table.grad().layout() == torch::kStrided)
    return torch::embedding(table, index, /*padding_idx=*/-1, /*scale_grad_by_freq=*/false, /*sparse=*/true);
  return table.index_select(0, index);
}

}  // namespace

void BpmfOptions::validate() const {
  if (dim() < 1) bad_option("dim", "must be at least 1, got " + std::to_string(dim()));
  if (!(init_std() >= 0) || !std::isfinite(init_std()))
    bad_option("init_std", "must be a finite number >= 0, got " + str(init_std()));
  if (!std::isfinite(mean())) bad_option("mean", "must be finite, got " + str(mean()));
  if (!(tau() > 0) || !std::isfinite(tau())) bad_option("tau", "must be a finite number > 0, got " + str(tau()));
  if (!(tau_alpha() > 0) || !std::isfinite(tau_alpha()))
    bad_option("tau_alpha", "must be a finite number > 0, got " + str(tau_alpha()));
  if (!(tau_beta() > 0) || !std::isfinite(tau_beta()))
    bad_option("tau_beta", "must be a finite number > 0, got " + str(tau_beta()));
}

Bpmf::Bpmf(int64_t users, int64_t items, BpmfOptions options, at::Generator generator)
    : options_(options) {
  options_.validate();
  if (users < 1 || items < 1)
    throw std::invalid_argument("bpmf: need at least one user and one item, got " + std::to_string(users) +
                                " users and " + std::to_string(items) + " items");
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const int64_t d = options_.dim();
  U_ = register_parameter("U", at::randn({users, d}, generator, f32).mul_(options_.init_std()));
  V_ = register_parameter("V", at::randn({items, d}, generator, f32).mul_(options_.init_std()));
  a_ = register_parameter("a", torch::zeros({users}, f32));
  b_ = register_parameter("b", torch::zeros({items}, f32));
  mu_ = register_buffer("mu", torch::full({}, options_.mean(), f32));
  tau_ = register_buffer("tau", torch::full({}, options_.tau(), f32));
}

void Bpmf::check_inputs(const torch::Tensor& inputs) const {
  if (!inputs.defined() || inputs.dim() != 2 || inputs.size(1) != 2 || inputs.scalar_type() != torch::kInt64) {
    std::ostringstream os;
    os << "bpmf: inputs must be [n, 2] int64 (user, item) indices, got ";
    if (inputs.defined())
      os << inputs.sizes() << " " << inputs.scalar_type();
    else
      os << "an undefined tensor";
    throw std::invalid_argument(os.str());
  }
}

torch::Tensor Bpmf::predict(const torch::Tensor& inputs) {
  check_inputs(inputs);
  auto users = inputs.select(1, 0);
  auto items = inputs.select(1, 1);
  auto dot = (rows(U_, users) * rows(V_, items)).sum(1);
  return dot + a_.index_select(0, users) + b_.index_select(0, items) + mu_;
}

torch::Tensor Bpmf::nll(const Batch& batch) {
  auto pred = predict(batch.inputs);
  auto r = batch.targets.to(pred.scalar_type()) - pred;
  const double n = static_cast<double>(batch.size());
  static const double kHalfLog2Pi = 0.5 * std::log(2.0 * M_PI);
  return 0.5 * tau_ * r.square().sum() - (0.5 * n) * tau_.log() + n * kHalfLog2Pi;
}

std::vector<PriorGroup> Bpmf::prior_groups() {
  return {{"U", {U_}}, {"V", {V_}}, {"a", {a_}}, {"b", {b_}}};
}

void Bpmf::set_tau(double tau) {
  if (!(tau > 0) || !std::isfinite(tau)) throw std::invalid_argument("bpmf: tau must be finite and > 0, got " + str(tau));
  torch::NoGradGuard guard;
  tau_.fill_(tau);
}

void Bpmf::gibbs_step_likelihood(const Batch& train, at::Generator& generator) {
  if (!options_.sample_tau() || train.size() == 0) return;
  torch::NoGradGuard guard;
  // Σ residual² over the whole training set, in chunks so ml-10M does not gather 8M×d at once.
  constexpr int64_t kChunk = int64_t{1} << 20;
  const int64_t n = train.size();
  auto sse = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(U_.device()));
  for (int64_t lo = 0; lo < n; lo += kChunk) {
    const int64_t len = std::min(kChunk, n - lo);
    auto r = train.targets.narrow(0, lo, len).to(torch::kFloat32) - predict(train.inputs.narrow(0, lo, len));
    sse += r.to(torch::kFloat64).square().sum();
  }
  const double shape = options_.tau_alpha() + 0.5 * static_cast<double>(n);
  const double rate = options_.tau_beta() + 0.5 * sse.item<double>();
  auto g = sample_gamma(torch::full({1}, shape, torch::kFloat64), torch::full({1}, rate, torch::kFloat64), generator);
  tau_.fill_(g.item<double>());
}

std::map<std::string, double> Bpmf::likelihood_hyperparameters() const {
  return {{"tau", tau_.item<double>()}};
}

std::vector<OptionDoc> bpmf_option_docs() {
  const BpmfOptions d;
  return {
      {"dim", "integer", std::to_string(d.dim()), "latent dimension d of the user and item factors", {}, ">= 1"},
      {"init_std", "real", round_trip_text(d.init_std()), "U, V initialised N(0, init_std²)", {}, ">= 0"},
      {"tau", "real", round_trip_text(d.tau()),
       "τ, the rating noise precision (initial value when sampled)", {}, "> 0"},
      {"sample_tau", "flag", d.sample_tau() ? "true" : "false", "Gibbs steps for τ", {}, ""},
      {"tau_alpha", "real", round_trip_text(d.tau_alpha()), "shape α of τ's Gamma(α, β) prior", {}, "> 0"},
      {"tau_beta", "real", round_trip_text(d.tau_beta()), "rate β of τ's Gamma(α, β) prior", {}, "> 0"},
  };
}

BpmfOptions parse_bpmf_options(const OptionMap& o) {
  BpmfOptions opt;
  opt.dim(o.get_int("dim", opt.dim()))
      .init_std(o.get_double("init_std", opt.init_std()))
      .tau(o.get_double("tau", opt.tau()))
      .sample_tau(o.get_bool("sample_tau", opt.sample_tau()))
      .tau_alpha(o.get_double("tau_alpha", opt.tau_alpha()))
      .tau_beta(o.get_double("tau_beta", opt.tau_beta()));
  opt.validate();
  return opt;
}

std::shared_ptr<Bpmf> make_bpmf(const Dataset& data, BpmfOptions opt, at::Generator generator) {
  auto dim_of = [&](const char* key) {
    auto it = data.dims.find(key);
    if (it == data.dims.end())
      throw std::invalid_argument(std::string("model.name: bpmf needs a ratings data set (data.dims has no '") + key +
                                  "'; set data.format: ratings)");
    return it->second;
  };
  if (data.train.size() == 0) throw std::invalid_argument("model.name: bpmf needs a non-empty training set");
  opt.mean(data.train.targets.to(torch::kFloat64).mean().item<double>());
  return std::make_shared<Bpmf>(dim_of("users"), dim_of("items"), opt, std::move(generator));
}

std::shared_ptr<Bpmf> make_bpmf(const Dataset& data, const OptionMap& o, at::Generator generator) {
  return make_bpmf(data, parse_bpmf_options(o), std::move(generator));
}

}  // namespace sgmcmc
