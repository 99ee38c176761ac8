#include "models/lda.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "compat.h"
#include "models/local_draws.h"

namespace sgmcmc {
using namespace local_draws;
namespace {

// θ of the mean parametrization is kept away from 0 where it divides (the mirrored boundary makes
// θ = 0 a null set, but float32 can round a tiny θ to it).
constexpr double kTinyTheta = 1e-30;

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& what) {
  throw std::invalid_argument(where + "." + key + ": " + what);
}

}  // namespace

void LdaOptions::validate(const std::string& where) const {
  if (topics < 1) bad(where, "topics", "must be >= 1, got " + std::to_string(topics));
  if (!(alpha > 0) || !std::isfinite(alpha)) bad(where, "alpha", "must be a finite number > 0, got " + round_trip_text(alpha));
  if (!(beta > 0) || !std::isfinite(beta)) bad(where, "beta", "must be a finite number > 0, got " + round_trip_text(beta));
  if (!(prior_sd > 0) || !std::isfinite(prior_sd)) bad(where, "prior_sd", "must be a finite number > 0, got " + round_trip_text(prior_sd));
  if (!std::isfinite(prior_mean)) bad(where, "prior_mean", "must be finite, got " + round_trip_text(prior_mean));
  if (gibbs_sweeps < 1) bad(where, "gibbs_sweeps", "must be >= 1, got " + std::to_string(gibbs_sweeps));
  if (eval_sweeps < 1) bad(where, "eval_sweeps", "must be >= 1, got " + std::to_string(eval_sweeps));
  if (parametrization != "natural" && parametrization != "mean")
    bad(where, "parametrization", "must be natural or mean, got '" + parametrization + "'");
  if (inference != "sgmcmc" && inference != "collapsed_gibbs")
    bad(where, "inference", "must be sgmcmc or collapsed_gibbs, got '" + inference + "'");
}

std::vector<OptionDoc> lda_option_docs() {
  const LdaOptions d;
  return {
      {"topics", "integer", std::to_string(d.topics), "K, the number of topics", {}, ">= 1"},
      {"alpha", "real", round_trip_text(d.alpha), "Dirichlet α of each document's topic proportions", {}, "> 0"},
      {"parametrization", "choice", d.parametrization,
       "natural: π = softmax(θ), θ ~ N(prior_mean, prior_sd²) | mean: π = θ/Σθ, θ ~ Gamma(beta, 1) (for sgrld)",
       {"natural", "mean"}, ""},
      {"prior_mean", "real", round_trip_text(d.prior_mean), "natural: the mean of θ's Gaussian prior", {}, "finite"},
      {"prior_sd", "real", round_trip_text(d.prior_sd), "natural: the sd of θ's Gaussian prior", {}, "> 0"},
      {"beta", "real", round_trip_text(d.beta), "mean: θ's Gamma(β, 1) prior; collapsed_gibbs: the topics' Dirichlet β", {},
       "> 0"},
      {"gibbs_sweeps", "integer", std::to_string(d.gibbs_sweeps),
       "Gibbs sweeps of a minibatch document's topics per step (the first half burn-in)", {}, ">= 1"},
      {"eval_sweeps", "integer", std::to_string(d.eval_sweeps),
       "Gibbs sweeps of a held-out document's topics per prediction (the first half burn-in)", {}, ">= 1"},
      {"inference", "choice", d.inference,
       "sgmcmc: θ by the sampler | collapsed_gibbs: the collapsed Gibbs baseline (θ moves by its sweeps "
       "alone: pair it with sgld at temperature 0, as configs/lee_lda_gibbs.yaml)",
       {"sgmcmc", "collapsed_gibbs"}, ""},
  };
}

LdaOptions parse_lda_options(const OptionMap& o) {
  const std::string where = o.context().empty() ? "model" : o.context();
  LdaOptions l;
  l.topics = o.get_int("topics", l.topics);
  l.alpha = o.get_double("alpha", l.alpha);
  l.parametrization = o.get_choice("parametrization", l.parametrization, {"natural", "mean"});
  l.prior_mean = o.get_double("prior_mean", l.prior_mean);
  l.prior_sd = o.get_double("prior_sd", l.prior_sd);
  l.beta = o.get_double("beta", l.beta);
  l.gibbs_sweeps = o.get_int("gibbs_sweeps", l.gibbs_sweeps);
  l.eval_sweeps = o.get_int("eval_sweeps", l.eval_sweeps);
  l.inference = o.get_choice("inference", l.inference, {"sgmcmc", "collapsed_gibbs"});
  l.validate(where);
  return l;
}

std::vector<double> lda_document_sweeps(const std::vector<int64_t>& tokens, const double* pi, int64_t K, int64_t W,
                                        double alpha, int64_t sweeps, uint64_t seed, double* expected_kw) {
  Stream s(seed);
  const auto L = tokens.size();
  std::vector<int64_t> z(L);
  std::vector<double> ndk(static_cast<size_t>(K), 0.0), p(static_cast<size_t>(K)), mean_ndk(static_cast<size_t>(K), 0.0);
  auto conditional = [&](int64_t w) {
    double total = 0;
    for (int64_t k = 0; k < K; ++k) total += (p[k] = (alpha + ndk[k]) * pi[k * W + w]);
    return total;
  };
  // Sequential initialization: each token drawn given the tokens before it.
  for (size_t i = 0; i < L; ++i) {
    z[i] = draw(p.data(), K, conditional(tokens[i]), s);
    ndk[z[i]] += 1;
  }
  const int64_t burn = sweeps / 2;
  const double weight = 1.0 / static_cast<double>(sweeps - burn);
  for (int64_t sweep = 0; sweep < sweeps; ++sweep) {
    const bool keep = sweep >= burn;
    for (size_t i = 0; i < L; ++i) {
      ndk[z[i]] -= 1;
      const double total = conditional(tokens[i]);
      z[i] = draw(p.data(), K, total, s);
      ndk[z[i]] += 1;
      if (keep && expected_kw)
        for (int64_t k = 0; k < K; ++k) expected_kw[k * W + tokens[i]] += weight * p[k] / total;
    }
    if (keep)
      for (int64_t k = 0; k < K; ++k) mean_ndk[k] += weight * ndk[k];
  }
  return mean_ndk;
}

Lda::Lda(const LdaOptions& options, uint64_t seed) : options_(options), seed_(mix(seed ^ 0x4C44414C44414C44ULL)) {
  options_.validate("model");
  if (options_.words < 1) throw std::invalid_argument("model.name: lda needs a bag-of-words data set (data.format: bow)");
  torch::NoGradGuard no_grad;
  auto gen = compat::make_generator(torch::kCPU, seed_);
  // Topics start apart: natural θ ~ N(μ₀, σ₀²)'s draw; mean θ ~ Gamma-like positive draws 0.5 + U(0, 1)
  // (the Gamma(β, 1) prior's own draws are mostly ~0 for β = 0.1, where the Γ term then dominates).
  torch::Tensor init = options_.parametrization == "natural"
                           ? torch::randn({options_.topics, options_.words}, gen, torch::kFloat32) *
                                     static_cast<float>(options_.prior_sd) +
                                 static_cast<float>(options_.prior_mean)
                           : torch::rand({options_.topics, options_.words}, gen, torch::kFloat32) + 0.5f;
  theta_ = register_parameter("theta", init);
  if (options_.inference == "collapsed_gibbs") z_ = register_buffer("z", torch::empty({0, 0}, torch::kInt64));
}

torch::Tensor Lda::topics() const {
  torch::NoGradGuard no_grad;
  auto th = theta_.detach().to(torch::kCPU, torch::kFloat64);
  if (options_.parametrization == "natural") return torch::softmax(th, 1);
  th = th.abs().clamp_min(kTinyTheta);
  return th / th.sum(1, true);
}

std::pair<torch::Tensor, double> Lda::expected_counts(const Batch& batch, const torch::Tensor& pi) {
  const int64_t K = options_.topics, W = options_.words;
  auto nkw = torch::zeros({K, W}, torch::kFloat64);
  const auto inputs = batch.inputs.to(torch::kCPU);
  const uint64_t state = hash_of(theta_.detach()) ^ seed_;
  for (int64_t d = 0; d < inputs.size(0); ++d) {
    const auto tokens = row_tokens(inputs[d]);
    const uint64_t doc_seed = mix(state ^ mix(static_cast<uint64_t>(inputs[d][0].item<int64_t>()) + 1));
    lda_document_sweeps(tokens, pi.data_ptr<double>(), K, W, options_.alpha, options_.gibbs_sweeps, doc_seed,
                        nkw.data_ptr<double>());
  }
  const double value = -(nkw * pi.clamp_min(1e-300).log()).sum().item<double>();
  return {nkw, value};
}

torch::Tensor Lda::backward(const Batch& batch, double scale, bool overwrite) {
  torch::NoGradGuard no_grad;
  torch::Tensor g;
  double value = 0;
  const auto th = theta_.detach().to(torch::kCPU, torch::kFloat64);
  if (options_.inference == "collapsed_gibbs") {
    g = torch::zeros_like(th);  // θ moves by the collapsed sweeps alone
  } else {
    const auto pi = topics();
    auto [nkw, v] = expected_counts(batch, pi);
    value = v;
    const auto nk = nkw.sum(1, true);
    if (options_.parametrization == "natural") {
      const double var = options_.prior_sd * options_.prior_sd;
      g = -(nkw - pi * nk) * scale + (th - options_.prior_mean) / var;
    } else {
      const auto t = th.abs().clamp_min(kTinyTheta);
      g = (-nkw / t + nk / t.sum(1, true)) * scale + (1.0 - (options_.beta - 1.0) / t);
    }
  }
  g = g.to(theta_.options());
  auto& grad = theta_.mutable_grad();
  if (overwrite || !grad.defined()) grad = g;
  else grad.add_(g);
  return torch::tensor(value, theta_.options());
}

torch::Tensor Lda::nll(const Batch& batch) {
  if (options_.inference == "collapsed_gibbs") return (theta_ * 0).sum();
  torch::Tensor nkw;
  {
    torch::NoGradGuard no_grad;
    nkw = expected_counts(batch, topics()).first.to(theta_.options());
  }
  const double share = static_cast<double>(batch.size()) / static_cast<double>(std::max<int64_t>(1, options_.documents));
  if (options_.parametrization == "natural") {
    const double var = options_.prior_sd * options_.prior_sd;
    const auto prior = (theta_ - options_.prior_mean).square().sum() / (2 * var);
    return -(nkw * torch::log_softmax(theta_, 1)).sum() + share * prior;
  }
  const auto t = theta_.abs().clamp_min(kTinyTheta);
  const auto log_pi = t.log() - t.sum(1, true).log();
  const auto prior = (t - (options_.beta - 1.0) * t.log()).sum();
  return -(nkw * log_pi).sum() + share * prior;
}

torch::Tensor Lda::predict(const torch::Tensor& inputs) {
  torch::NoGradGuard no_grad;
  const int64_t K = options_.topics, W = options_.words, T = inputs.size(0);
  const auto in = inputs.to(torch::kCPU).contiguous();
  const auto pi = topics();
  // Consecutive identical rows are one document's points: its proportions are inferred once.
  const auto starts = document_starts(in);
  auto out = torch::empty({T, 2}, torch::kFloat32);
  const uint64_t state = hash_of(theta_.detach()) ^ mix(seed_);
  const int64_t groups = static_cast<int64_t>(starts.size()) - 1;
  at::parallel_for(0, groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const int64_t first = starts[g];
      const auto tokens = row_tokens(in[first], 2);
      std::vector<double> eta(static_cast<size_t>(K), 1.0 / static_cast<double>(K));
      if (!tokens.empty()) {
        uint64_t doc_seed = state;
        for (int64_t w : tokens) doc_seed = mix(doc_seed ^ static_cast<uint64_t>(w));
        const auto ndk = lda_document_sweeps(tokens, pi.data_ptr<double>(), K, W, options_.alpha,
                                             options_.eval_sweeps, doc_seed, nullptr);
        const double denom = static_cast<double>(tokens.size()) + static_cast<double>(K) * options_.alpha;
        for (int64_t k = 0; k < K; ++k) eta[k] = (ndk[k] + options_.alpha) / denom;
      }
      write_word_probabilities(in, first, starts[g + 1], eta, pi, out);
    }
  });
  return out.to(inputs.device());
}

void Lda::gibbs_step_likelihood(const Batch& train, at::Generator&) {
  if (options_.inference == "collapsed_gibbs") collapsed_sweep(train);
}

void Lda::collapsed_sweep(const Batch& train) {
  torch::NoGradGuard no_grad;
  const int64_t K = options_.topics, W = options_.words;
  const auto in = train.inputs.to(torch::kCPU).contiguous();
  const int64_t D = in.size(0), width = in.size(1);
  if (z_.size(0) != D || z_.size(1) != width - 1) z_.set_(torch::full({D, width - 1}, -1, torch::kInt64));
  auto z = z_.accessor<int64_t, 2>();
  const int64_t* rows = in.data_ptr<int64_t>();
  std::vector<double> nkw(static_cast<size_t>(K * W), 0.0), nk(static_cast<size_t>(K), 0.0), p(static_cast<size_t>(K));
  for (int64_t d = 0; d < D; ++d)
    for (int64_t i = 1; i < width && rows[d * width + i] >= 0; ++i)
      if (z[d][i - 1] >= 0) nkw[z[d][i - 1] * W + rows[d * width + i]] += 1, nk[z[d][i - 1]] += 1;
  Stream s(mix(hash_of(z_) ^ seed_));
  const double beta = options_.beta, wbeta = static_cast<double>(W) * beta, alpha = options_.alpha;
  for (int64_t d = 0; d < D; ++d) {
    std::vector<double> ndk(static_cast<size_t>(K), 0.0);
    for (int64_t i = 1; i < width && rows[d * width + i] >= 0; ++i)
      if (z[d][i - 1] >= 0) ndk[z[d][i - 1]] += 1;
    for (int64_t i = 1; i < width && rows[d * width + i] >= 0; ++i) {
      const int64_t w = rows[d * width + i];
      int64_t& zi = z[d][i - 1];
      if (zi >= 0) ndk[zi] -= 1, nkw[zi * W + w] -= 1, nk[zi] -= 1;
      double total = 0;
      for (int64_t k = 0; k < K; ++k) total += (p[k] = (ndk[k] + alpha) * (nkw[k * W + w] + beta) / (nk[k] + wbeta));
      zi = draw(p.data(), K, total, s);
      ndk[zi] += 1, nkw[zi * W + w] += 1, nk[zi] += 1;
    }
  }
  // The topics at the posterior mean of π given the assignments.
  auto pi = torch::from_blob(nkw.data(), {K, W}, torch::kFloat64).add(beta) /
            torch::from_blob(nk.data(), {K, 1}, torch::kFloat64).add(wbeta);
  theta_.copy_(options_.parametrization == "natural" ? pi.log() : pi);
}

}  // namespace sgmcmc
