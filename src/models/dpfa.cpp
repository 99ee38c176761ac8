#include "models/dpfa.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "compat.h"

namespace sgmcmc {
using namespace local_draws;
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& what) {
  throw std::invalid_argument(where + "." + key + ": " + what);
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

void positive(const std::string& where, const char* key, double v) {
  if (!(v > 0) || !std::isfinite(v)) bad(where, key, "must be a finite number > 0, got " + round_trip_text(v));
}

double softplus(double v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); }
double sigmoid(double v) { return v >= 0 ? 1 / (1 + std::exp(-v)) : std::exp(v) / (1 + std::exp(v)); }

torch::Tensor log1p_exp(const torch::Tensor& v) { return torch::relu(v) + torch::log1p(torch::exp(-v.abs())); }

}  // namespace

void DpfaOptions::validate(const std::string& where) const {
  if (topics < 1) bad(where, "topics", "must be >= 1, got " + std::to_string(topics));
  for (auto k : hidden)
    if (k < 1) bad(where, "hidden", "layer widths must be >= 1, got " + list_text(hidden));
  positive(where, "prior_sd", prior_sd);
  if (!std::isfinite(prior_mean)) bad(where, "prior_mean", "must be finite, got " + round_trip_text(prior_mean));
  positive(where, "weight_sd", weight_sd);
  positive(where, "r_shape", r_shape);
  positive(where, "r_rate", r_rate);
  positive(where, "p_a", p_a);
  positive(where, "p_b", p_b);
  if (gibbs_sweeps < 1) bad(where, "gibbs_sweeps", "must be >= 1, got " + std::to_string(gibbs_sweeps));
  if (eval_sweeps < 1) bad(where, "eval_sweeps", "must be >= 1, got " + std::to_string(eval_sweeps));
}

std::vector<int64_t> DpfaOptions::layers() const {
  std::vector<int64_t> l = {topics};
  l.insert(l.end(), hidden.begin(), hidden.end());
  return l;
}

std::vector<OptionDoc> dpfa_option_docs() {
  const DpfaOptions d;
  return {
      {"topics", "integer", std::to_string(d.topics), "K_1, the topics (the units right above the words)", {}, ">= 1"},
      {"hidden", "list", list_text(d.hidden), "the SBN's layers above the topics, e.g. 64,32 (none: [])", {},
       ">= 1 each"},
      {"prior_mean", "real", round_trip_text(d.prior_mean), "the mean of the topics' natural parameters' Gaussian prior", {},
       "finite"},
      {"prior_sd", "real", round_trip_text(d.prior_sd), "the sd of the topics' natural parameters' Gaussian prior", {}, "> 0"},
      {"weight_sd", "real", round_trip_text(d.weight_sd), "the sd of the SBN weights' and biases' Gaussian prior", {}, "> 0"},
      {"r_shape", "real", round_trip_text(d.r_shape), "γ₀ of the topics' Gamma(γ₀, c₀) prior on r_k", {}, "> 0"},
      {"r_rate", "real", round_trip_text(d.r_rate), "c₀ (rate) of the Gamma prior on r_k", {}, "> 0"},
      {"p_a", "real", round_trip_text(d.p_a), "a₀ of each document's Beta(a₀, b₀) prior on p_n (integrated out)", {}, "> 0"},
      {"p_b", "real", round_trip_text(d.p_b), "b₀ of the Beta prior on p_n", {}, "> 0"},
      {"gibbs_sweeps", "integer", std::to_string(d.gibbs_sweeps),
       "Gibbs sweeps of a minibatch document's locals per step (the first half burn-in)", {}, ">= 1"},
      {"eval_sweeps", "integer", std::to_string(d.eval_sweeps),
       "Gibbs sweeps of a held-out document's locals per prediction (the first half burn-in)", {}, ">= 1"},
  };
}

DpfaOptions parse_dpfa_options(const OptionMap& o) {
  const std::string where = o.context().empty() ? "model" : o.context();
  DpfaOptions d;
  d.topics = o.get_int("topics", d.topics);
  const std::string hidden = o.get_string("hidden", list_text(d.hidden));
  d.hidden = hidden == "none" ? std::vector<int64_t>{} : parse_int_list(hidden, where + ".hidden");
  d.prior_mean = o.get_double("prior_mean", d.prior_mean);
  d.prior_sd = o.get_double("prior_sd", d.prior_sd);
  d.weight_sd = o.get_double("weight_sd", d.weight_sd);
  d.r_shape = o.get_double("r_shape", d.r_shape);
  d.r_rate = o.get_double("r_rate", d.r_rate);
  d.p_a = o.get_double("p_a", d.p_a);
  d.p_b = o.get_double("p_b", d.p_b);
  d.gibbs_sweeps = o.get_int("gibbs_sweeps", d.gibbs_sweeps);
  d.eval_sweeps = o.get_int("eval_sweeps", d.eval_sweeps);
  d.validate(where);
  return d;
}

// --- one document's locals ---

DpfaDocument::DpfaDocument(const DpfaGlobals& g, std::vector<int64_t> tokens, uint64_t seed)
    : g_(g), tokens_(std::move(tokens)), stream_(seed) {
  const auto L = g_.layers.size();
  h_.resize(L), psi_.resize(L);
  for (size_t l = 0; l < L; ++l) h_[l].assign(g_.layers[l], 0.0), psi_[l].assign(g_.layers[l], 0.0);
  x_.assign(g_.layers[0], 0.0);
  scratch_.resize(g_.layers[0]);
  // The layers above the topics from the SBN's prior, top down; every topic active to start, then each
  // token drawn given the tokens before it (the first sweep switches off the topics no token took).
  for (size_t l = L; l-- > 1;) {
    recompute();
    for (int64_t k = 0; k < g_.layers[l]; ++k) h_[l][k] = stream_.uniform() < sigmoid(psi_[l][k]) ? 1.0 : 0.0;
  }
  std::fill(h_[0].begin(), h_[0].end(), 1.0);
  recompute();
  z_.resize(tokens_.size());
  const int64_t K = g_.layers[0];
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const double* phi = g_.phi_wk.data() + tokens_[i] * K;
    double total = 0;
    for (int64_t k = 0; k < K; ++k) total += (scratch_[k] = h_[0][k] * (x_[k] + g_.r[k]) * phi[k]);
    z_[i] = draw(scratch_.data(), K, total, stream_);
    x_[z_[i]] += 1;
  }
}

void DpfaDocument::set_state(const std::vector<int64_t>& z, const std::vector<std::vector<double>>& h) {
  z_ = z;
  h_ = h;
  recompute();
}

void DpfaDocument::recompute() {
  const auto L = g_.layers.size();
  std::fill(x_.begin(), x_.end(), 0.0);
  for (auto k : z_) x_[k] += 1;
  for (size_t l = 0; l < L; ++l) {
    const int64_t K = g_.layers[l];
    for (int64_t k = 0; k < K; ++k) {
      double v = g_.c[l][k];
      if (l + 1 < L) {
        const int64_t P = g_.layers[l + 1];
        const double* w = g_.w[l].data() + k * P;
        for (int64_t j = 0; j < P; ++j) v += w[j] * h_[l + 1][j];
      }
      psi_[l][k] = v;
    }
  }
  R_ = 0;
  for (int64_t k = 0; k < g_.layers[0]; ++k) R_ += g_.r[k] * h_[0][k];
}

double DpfaDocument::token_weights(int64_t i, double* p) const {
  const int64_t K = g_.layers[0];
  const double* phi = g_.phi_wk.data() + tokens_[i] * K;
  double total = 0;
  for (int64_t k = 0; k < K; ++k)
    total += (p[k] = h_[0][k] * (x_[k] - (z_[i] == k ? 1.0 : 0.0) + g_.r[k]) * phi[k]);
  return total;
}

double DpfaDocument::unit_log_odds(int64_t layer, int64_t k) const {
  double lo = psi_[layer][k];
  if (layer == 0) {
    if (x_[k] > 0) return std::numeric_limits<double>::infinity();
    const double X = static_cast<double>(tokens_.size()), a = g_.p_a, b = g_.p_b, r = g_.r[k];
    const double rest = R_ - r * h_[0][k];
    return lo + std::lgamma(b + rest + r) - std::lgamma(a + X + b + rest + r) - std::lgamma(b + rest) +
           std::lgamma(a + X + b + rest);
  }
  // The children's Bernoulli terms at h^layer_k = 1 and 0.
  const int64_t C = g_.layers[layer - 1], P = g_.layers[layer];
  const double* w = g_.w[layer - 1].data();
  const double hk = h_[layer][k];
  for (int64_t j = 0; j < C; ++j) {
    const double wj = w[j * P + k];
    const double off = psi_[layer - 1][j] - hk * wj;
    lo += h_[layer - 1][j] * wj - softplus(off + wj) + softplus(off);
  }
  return lo;
}

void DpfaDocument::flip(int64_t layer, int64_t k, double value) {
  const double delta = value - h_[layer][k];
  if (delta == 0) return;
  h_[layer][k] = value;
  if (layer == 0) R_ += delta * g_.r[k];
  if (layer >= 1) {
    const int64_t C = g_.layers[layer - 1], P = g_.layers[layer];
    const double* w = g_.w[layer - 1].data();
    for (int64_t j = 0; j < C; ++j) psi_[layer - 1][j] += delta * w[j * P + k];
  }
}

void DpfaDocument::draw_unit(int64_t layer, int64_t k) {
  const double lo = unit_log_odds(layer, k);
  flip(layer, k, std::isinf(lo) && lo > 0 ? 1.0 : (stream_.uniform() < sigmoid(lo) ? 1.0 : 0.0));
}

void DpfaDocument::sweep(double* expected_kw, double weight) {
  recompute();  // ψ and R afresh: the incremental updates' rounding does not build up over sweeps
  const int64_t K = g_.layers[0];
  for (size_t i = 0; i < tokens_.size(); ++i) {
    x_[z_[i]] -= 1;
    const double* phi = g_.phi_wk.data() + tokens_[i] * K;
    double total = 0;
    for (int64_t k = 0; k < K; ++k) total += (scratch_[k] = h_[0][k] * (x_[k] + g_.r[k]) * phi[k]);
    z_[i] = draw(scratch_.data(), K, total, stream_);
    x_[z_[i]] += 1;
    if (expected_kw) {
      double* e = expected_kw + tokens_[i];
      const double f = weight / total;
      for (int64_t k = 0; k < K; ++k) e[k * g_.words] += f * scratch_[k];
    }
  }
  for (size_t l = 0; l < g_.layers.size(); ++l)
    for (int64_t k = 0; k < g_.layers[l]; ++k) draw_unit(static_cast<int64_t>(l), k);
}

// --- the model ---

Dpfa::Dpfa(const DpfaOptions& options, uint64_t seed) : options_(options), seed_(mix(seed ^ 0x4450464144504641ULL)) {
  options_.validate("model");
  if (options_.words < 1) throw std::invalid_argument("model.name: dpfa needs a bag-of-words data set (data.format: bow)");
  torch::NoGradGuard no_grad;
  auto gen = compat::make_generator(torch::kCPU, seed_);
  const auto layers = options_.layers();
  psi_ = register_parameter("topics", torch::randn({options_.topics, options_.words}, gen, torch::kFloat32) *
                                          static_cast<float>(options_.prior_sd) +
                                      static_cast<float>(options_.prior_mean));
  log_r_ = register_parameter("log_r", torch::zeros({options_.topics}, torch::kFloat32));  // r = 1, the prior's mean
  // Small random weights: the units' own draws break the symmetry between them as well.
  for (size_t l = 0; l + 1 < layers.size(); ++l)
    w_.push_back(register_parameter("w" + std::to_string(l + 1),
                                    torch::randn({layers[l], layers[l + 1]}, gen, torch::kFloat32) * 0.1f));
  for (size_t l = 0; l < layers.size(); ++l)
    c_.push_back(register_parameter("c" + std::to_string(l + 1), torch::zeros({layers[l]}, torch::kFloat32)));
}

torch::Tensor Dpfa::topics() const {
  torch::NoGradGuard no_grad;
  return torch::softmax(psi_.detach().to(torch::kCPU, torch::kFloat64), 1);
}

DpfaGlobals Dpfa::globals() const {
  torch::NoGradGuard no_grad;
  DpfaGlobals g;
  g.words = options_.words;
  g.layers = options_.layers();
  g.p_a = options_.p_a, g.p_b = options_.p_b;
  auto vec = [](const torch::Tensor& t) {
    const auto c = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  g.phi_wk = vec(topics().t());
  g.r = vec(log_r_.exp());
  for (const auto& w : w_) g.w.push_back(vec(w));
  for (const auto& c : c_) g.c.push_back(vec(c));
  return g;
}

uint64_t Dpfa::state_hash() const {
  uint64_t h = seed_;
  for (const auto& p : parameters()) h = hash_of(p.detach(), h);
  return h;
}

torch::Tensor Dpfa::prior_neg_log() const {
  const auto var = options_.prior_sd * options_.prior_sd, wvar = options_.weight_sd * options_.weight_sd;
  auto u = (psi_ - options_.prior_mean).square().sum() / (2 * var);
  for (const auto& w : w_) u = u + w.square().sum() / (2 * wvar);
  for (const auto& c : c_) u = u + c.square().sum() / (2 * wvar);
  // r = e^ρ ~ Gamma(γ₀, c₀): log p(ρ) = γ₀ ρ − c₀ e^ρ + const (the Jacobian e^ρ included).
  return u - (options_.r_shape * log_r_ - options_.r_rate * log_r_.exp()).sum();
}

torch::Tensor Dpfa::nll(const Batch& batch) {
  const auto g = globals();
  const auto layers = g.layers;
  const int64_t K = layers[0], W = options_.words, L = static_cast<int64_t>(layers.size());
  const int64_t sweeps = options_.gibbs_sweeps, burn = sweeps / 2, kept = sweeps - burn;
  auto nkw = torch::zeros({K, W}, torch::kFloat64);
  std::vector<std::vector<double>> h_rows(L);
  std::vector<double> x_rows, lengths;
  const auto inputs = batch.inputs.to(torch::kCPU).contiguous();
  const uint64_t state = state_hash();
  for (int64_t d = 0; d < inputs.size(0); ++d) {
    const uint64_t doc_seed = mix(state ^ mix(static_cast<uint64_t>(inputs[d][0].item<int64_t>()) + 1));
    DpfaDocument doc(g, row_tokens(inputs[d]), doc_seed);
    for (int64_t s = 0; s < sweeps; ++s) {
      const bool keep = s >= burn;
      doc.sweep(keep ? nkw.data_ptr<double>() : nullptr, 1.0 / static_cast<double>(kept));
      if (!keep) continue;
      for (int64_t l = 0; l < L; ++l) h_rows[l].insert(h_rows[l].end(), doc.h()[l].begin(), doc.h()[l].end());
      x_rows.insert(x_rows.end(), doc.x().begin(), doc.x().end());
      lengths.push_back(static_cast<double>(doc.length()));
    }
  }
  const int64_t S = static_cast<int64_t>(lengths.size());
  auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  auto table = [&](std::vector<double>& v, int64_t cols) { return torch::from_blob(v.data(), {S, cols}, f64).clone(); };
  std::vector<torch::Tensor> H;
  for (int64_t l = 0; l < L; ++l) H.push_back(table(h_rows[l], layers[l]));
  const auto X = table(x_rows, K);
  const auto length = torch::from_blob(lengths.data(), {S}, f64).clone();

  // The surrogate (header): its value the batch's −log p(w, z, h | globals) averaged over the kept sweeps.
  const auto psi = psi_.to(torch::kFloat64);
  auto ll = (nkw * torch::log_softmax(psi, 1)).sum();
  torch::Tensor local = torch::zeros({}, f64);
  for (int64_t l = 0; l < L; ++l) {
    auto pre = c_[l].to(torch::kFloat64).unsqueeze(0);
    if (l + 1 < L) pre = pre + H[l + 1].matmul(w_[l].to(torch::kFloat64).t());
    local = local + (H[l] * pre - log1p_exp(pre)).sum();
  }
  const auto r = log_r_.to(torch::kFloat64).exp();
  local = local + (H[0] * (torch::lgamma(X + r) - torch::lgamma(r))).sum();
  const auto R = H[0].matmul(r);
  const double a = options_.p_a, b = options_.p_b;
  const double log_beta_ab = std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b);
  local = local + (torch::lgamma(length + a) + torch::lgamma(R + b) - torch::lgamma(length + a + b + R) -
                   torch::lgamma(length + 1) - log_beta_ab)
                      .sum();
  const auto batch_nll = -(ll + local / static_cast<double>(kept));
  const double share = static_cast<double>(batch.size()) / static_cast<double>(std::max<int64_t>(1, options_.documents));
  return (batch_nll + share * prior_neg_log().to(torch::kFloat64)).to(psi_.scalar_type());
}

torch::Tensor Dpfa::predict(const torch::Tensor& inputs) {
  torch::NoGradGuard no_grad;
  const auto g = globals();
  const int64_t K = options_.topics, T = inputs.size(0);
  const auto in = inputs.to(torch::kCPU).contiguous();
  const auto phi = topics();
  const auto starts = document_starts(in);
  auto out = torch::empty({T, 2}, torch::kFloat32);
  const uint64_t state = state_hash() ^ mix(seed_);
  const int64_t sweeps = options_.eval_sweeps, burn = sweeps / 2;
  const int64_t groups = static_cast<int64_t>(starts.size()) - 1;
  at::parallel_for(0, groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t gi = begin; gi < end; ++gi) {
      const int64_t first = starts[gi];
      const auto tokens = row_tokens(in[first], 2);
      uint64_t doc_seed = state;
      for (int64_t w : tokens) doc_seed = mix(doc_seed ^ static_cast<uint64_t>(w));
      DpfaDocument doc(g, tokens, doc_seed);
      std::vector<double> eta(static_cast<size_t>(K), 0.0);
      for (int64_t s = 0; s < sweeps; ++s) {
        doc.sweep();
        if (s < burn) continue;
        const double denom = static_cast<double>(doc.length()) + doc.active_r();
        for (int64_t k = 0; k < K; ++k)
          eta[k] += (doc.x()[k] + g.r[k] * doc.h()[0][k]) / (denom * static_cast<double>(sweeps - burn));
      }
      write_word_probabilities(in, first, starts[gi + 1], eta, phi, out);
    }
  });
  return out.to(inputs.device());
}

}  // namespace sgmcmc
