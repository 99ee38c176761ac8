// Parallel chains (MlpChains, `chains: C`) and the convergence diagnostics (split-R̂, ESS).
#include <gtest/gtest.h>

#include "data/tensors.h"

#include <cmath>

#include "compat.h"
#include "config/experiment_config.h"
#include "data/tensors.h"
#include "metrics/convergence.h"
#include "models/mlp.h"
#include "models/mlp_chains.h"
#include "priors/gaussian_prior.h"
#include "tiny_idx.h"
#include "samplers/registry.h"
#include "train/minibatches.h"
#include "train/step_runner.h"
#include "train/trainer.h"

using namespace sgmcmc;
namespace fs = std::filesystem;

namespace {

// AR(1) chains x_t = ρ x_{t−1} + sqrt(1 − ρ²) ε_t (stationary N(0, 1)), [S, C], started at stationarity.
torch::Tensor ar1(int64_t S, int64_t C, double rho, uint64_t seed) {
  auto gen = compat::make_generator(torch::kCPU, seed);
  auto eps = at::randn({S, C}, gen, torch::kFloat64);
  auto x = torch::empty({S, C}, torch::kFloat64);
  x[0] = eps[0];
  const double s = std::sqrt(1 - rho * rho);
  for (int64_t t = 1; t < S; ++t) x[t] = rho * x[t - 1] + s * eps[t];
  return x;
}

ExperimentConfig tiny_config(const std::string& data_dir, std::vector<std::string> extra = {},
                             const std::string& sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}") {
  std::string text = R"(
name: tiny_chains
seed: 5
data: {dir: DATA, val_size: 100}
model: {name: mlp, hidden: [20], activation: relu}
prior: {precision: 1, hyperprior: gamma, gibbs_every_epochs: 1}
sampler: SAMPLER
train: {epochs: 12, burn_in: 4, batch_size: 50, eval_every: 4}
output: {progress: false}
)";
  return test_util::config_from(text, {{"DATA", data_dir}, {"SAMPLER", sampler}}, extra, "tiny_chains.yaml");
}

}  // namespace

// Independent N(0,1) draws: R̂ = 1 + O(1/n) (here 8 half-chains of 500: the variance of the half-chain
// means is 1/500, so B/n ≈ 0.002 and R̂ − 1 ≈ 0.001 ± 0.001); ESS ≈ S·C (Geyer's estimator has a few %
// relative error at 4,000 draws; ±20 % bound).
TEST(Convergence, IidDraws) {
  auto gen = compat::make_generator(torch::kCPU, 11);
  auto x = at::randn({1000, 4}, gen, torch::kFloat64);
  EXPECT_NEAR(split_rhat(x), 1.0, 0.01);
  EXPECT_NEAR(effective_sample_size(x) / 4000.0, 1.0, 0.2);
}

// AR(1) with ρ = 0.9: integrated autocorrelation time (1 + ρ)/(1 − ρ) = 19, so ESS = S·C/19 ≈ 1,053 for
// 4 × 5,000 draws. The estimator's relative sd at this length is ≈ 10 %; bound ±25 %.
TEST(Convergence, Ar1EffectiveSampleSize) {
  auto x = ar1(5000, 4, 0.9, 3);
  EXPECT_NEAR(effective_sample_size(x) / (20000.0 / 19.0), 1.0, 0.25);
  EXPECT_NEAR(split_rhat(x), 1.0, 0.02);
}

// Chains stuck in different places: chain c has mean 2c, sd 1 → between-chain variance dominates,
// R̂ ≈ sqrt(1 + var(means)/1) ≈ 2.6; a trend inside one chain is caught by the split (R̂ > 1.5).
TEST(Convergence, DetectsDisagreementAndTrends) {
  auto gen = compat::make_generator(torch::kCPU, 4);
  auto x = at::randn({400, 4}, gen, torch::kFloat64) + torch::arange(4, torch::kFloat64) * 2;
  EXPECT_GT(split_rhat(x), 1.5);
  auto trend = at::randn({400, 1}, gen, torch::kFloat64) * 0.1 + torch::linspace(0, 5, 400, torch::kFloat64).unsqueeze(1);
  EXPECT_GT(split_rhat(trend), 1.5);
  EXPECT_TRUE(std::isnan(split_rhat(torch::zeros({3, 2}, torch::kFloat64))));
  EXPECT_EQ(split_rhat(torch::ones({10, 2}, torch::kFloat64)), 1.0);
}

// C = 1 is Mlp exactly: same initial parameters (the generator is consumed identically), same nll
// and gradients on a batch (batched vs plain GEMM: float round-off only, 1e-5 relative).
TEST(MlpChains, OneChainEqualsMlp) {
  MlpOptions o;
  o.inputs = 12;
  o.hidden = {7, 5};
  o.outputs = 3;
  o.activation = "tanh";
  auto g1 = compat::make_generator(torch::kCPU, 9), g2 = compat::make_generator(torch::kCPU, 9);
  Mlp plain(o, g1);
  MlpChains batched(o, 1, g2);
  auto pp = plain.named_parameters(), pb = batched.named_parameters();
  ASSERT_EQ(pp.size(), pb.size());
  for (const auto& item : pp) {
    auto other = pb[item.key()];
    EXPECT_TRUE(torch::equal(item.value(), other.reshape(item.value().sizes()))) << item.key();
  }
  auto gx = compat::make_generator(torch::kCPU, 1);
  Batch b{at::randn({16, 12}, gx, torch::kFloat32), at::randint(0, 3, {16}, gx, torch::kInt64)};
  auto l1 = plain.nll(b), l2 = batched.nll(b);
  EXPECT_NEAR(l1.item<double>(), l2.item<double>(), 1e-5 * std::abs(l1.item<double>()));
  l1.backward();
  l2.backward();
  for (const auto& item : pp)
    EXPECT_TRUE(torch::allclose(item.value().grad(), pb[item.key()].grad().reshape(item.value().sizes()), 1e-5, 1e-6))
        << item.key();
  EXPECT_TRUE(torch::allclose(plain.predict(b.inputs), batched.predict(b.inputs), 1e-5, 1e-6));
}

namespace {
MlpOptions one_hidden_layer(int64_t inputs, int64_t hidden, int64_t outputs) {
  MlpOptions o;
  o.inputs = inputs;
  o.hidden = {hidden};
  o.outputs = outputs;
  return o;
}
}  // namespace

// With C chains every chain's loss and gradient involve its own slice of the batch only, and the
// per-chain prior groups split each tensor by chain.
TEST(MlpChains, ChainsAreIndependent) {
  auto g = compat::make_generator(torch::kCPU, 2);
  MlpChains m(one_hidden_layer(6, 4, 2), 3, g);
  auto gx = compat::make_generator(torch::kCPU, 8);
  auto x = at::randn({3 * 5, 6}, gx, torch::kFloat32);
  auto y = at::randint(0, 2, {15}, gx, torch::kInt64);
  m.nll({x, y}).backward();
  auto g_all = m.named_parameters()["fc1.weight"].grad().clone();
  for (auto& p : m.parameters()) p.mutable_grad().zero_();
  // Changing chain 2's inputs leaves chains 0 and 1's gradients unchanged.
  auto x2 = x.clone();
  x2.slice(0, 10, 15).add_(1.0);
  m.nll({x2, y}).backward();
  auto g_new = m.named_parameters()["fc1.weight"].grad();
  EXPECT_TRUE(torch::equal(g_all.slice(0, 0, 2), g_new.slice(0, 0, 2)));
  EXPECT_FALSE(torch::equal(g_all[2], g_new[2]));
  auto groups = make_prior_groups(m, "per_tensor");
  EXPECT_EQ(groups.size(), 4u * 3u);  // (W1, b1, W2, b2) × 3 chains
  EXPECT_EQ(groups[0].numel(), 4 * 6);
  EXPECT_EQ(m.predict_chains(x).sizes(), (std::vector<int64_t>{3, 15, 2}));
}

// train.chain_minibatch: shared. nll() on n examples equals the chain-major nll() on the same n
// repeated for every chain, value and gradients: the same sums in another order (float64, so the
// order's round-off is ~1e-15 relative; bound 1e-12). Classification and the Gaussian likelihood.
TEST(MlpChains, SharedMinibatchEqualsRepeatedOwn) {
  for (const std::string likelihood : {"categorical", "gaussian"}) {
    MlpOptions o = one_hidden_layer(6, 4, likelihood == "gaussian" ? 1 : 3);
    o.likelihood = likelihood;
    auto g1 = compat::make_generator(torch::kCPU, 3), g2 = compat::make_generator(torch::kCPU, 3);
    MlpChains own(o, 3, g1), shared(o, 3, g2);
    own.to(torch::kFloat64);
    shared.to(torch::kFloat64);
    EXPECT_TRUE(shared.share_minibatch(true));
    EXPECT_EQ(shared.minibatch_chains(), 1);
    EXPECT_EQ(own.minibatch_chains(), 3);
    auto gx = compat::make_generator(torch::kCPU, 8);
    auto x = at::randn({5, 6}, gx, torch::kFloat64);
    auto y = likelihood == "gaussian" ? at::randn({5}, gx, torch::kFloat64) : at::randint(0, 3, {5}, gx, torch::kInt64);
    auto l_shared = shared.nll({x, y});
    auto l_own = own.nll({x.repeat({3, 1}), y.repeat({3})});
    EXPECT_NEAR(l_shared.item<double>(), l_own.item<double>(), 1e-12 * std::abs(l_own.item<double>())) << likelihood;
    l_shared.backward();
    l_own.backward();
    auto po = own.named_parameters(), ps = shared.named_parameters();
    for (const auto& item : po)
      EXPECT_TRUE(torch::allclose(ps[item.key()].grad(), item.value().grad(), 1e-12, 1e-14)) << likelihood << " " << item.key();
    // Chain 1's gradient is chain 1's alone: changing its weights leaves chains 0 and 2's unchanged.
    auto g_before = ps["fc1.weight"].grad().clone();
    for (auto& p : shared.parameters()) p.mutable_grad().zero_();
    {
      torch::NoGradGuard no_grad;
      ps["fc1.weight"][1].add_(0.5);
    }
    shared.nll({x, y}).backward();
    const auto& g_after = ps["fc1.weight"].grad();
    EXPECT_TRUE(torch::allclose(g_after[0], g_before[0], 1e-12, 1e-14));
    EXPECT_TRUE(torch::allclose(g_after[2], g_before[2], 1e-12, 1e-14));
    EXPECT_FALSE(torch::allclose(g_after[1], g_before[1], 1e-6, 1e-8));
  }
}

// The prior's gradient over parallel chains, one op per parameter with each chain's λ broadcast,
// equals λ_{g,c}·θ_c slice by slice (exactly: the same products), for seed_grad and add_grad; float64
// parameters take that path (float32 on the CPU takes the one-loop kernel instead).
TEST(MlpChains, PriorGradientOfEveryChainWithItsOwnPrecision) {
  auto g = compat::make_generator(torch::kCPU, 4);
  MlpChains m(one_hidden_layer(5, 3, 2), 3, g);
  m.to(torch::kFloat64);
  auto groups = make_prior_groups(m, "per_tensor");
  GaussianPrior prior(groups, 1.0, true, 1.0, 1.0);
  EXPECT_TRUE(prior.chains_vectorized());
  std::vector<double> lambda;
  for (size_t k = 0; k < groups.size(); ++k) lambda.push_back(0.5 + 0.25 * static_cast<double>(k));
  prior.set_precisions(lambda);
  prior.seed_grad();
  for (size_t k = 0; k < groups.size(); ++k)
    for (const auto& p : groups[k].params)
      EXPECT_TRUE(torch::equal(groups[k].view(p.grad()), groups[k].view(p) * lambda[k])) << k;
  for (const auto& p : m.parameters()) p.mutable_grad().fill_(1.0);
  prior.add_grad();
  for (size_t k = 0; k < groups.size(); ++k)
    for (const auto& p : groups[k].params)
      EXPECT_TRUE(torch::equal(groups[k].view(p.grad()), 1.0 + groups[k].view(p) * lambda[k])) << k;
  // A Gibbs step's new λ reach the same views (the buffer is updated in place).
  auto gen = compat::make_generator(torch::kCPU, 9);
  prior.gibbs_step(gen);
  prior.seed_grad();
  for (size_t k = 0; k < groups.size(); ++k)
    for (const auto& p : groups[k].params)
      EXPECT_TRUE(torch::equal(groups[k].view(p.grad()), groups[k].view(p) * prior.precisions()[k])) << k;
}

// The trainer with `chains: 1` (the batched model) reproduces the plain single-chain run: same data
// order, same noise draws, same Gibbs steps; only float round-off of batched vs plain GEMM differs,
// which over 120 steps stays far below the test metrics' resolution (error: 1/200; nll to 1e-3).
// With `chains: 4` the run reports R̂/ESS over 4 chains, and every chain has learned the problem.
TEST(Trainer, ParallelChains) {
  auto dir = test_util::temp_dir("trainer_chains");
  test_util::write_tiny_idx_dir(dir + "/data");
  RunOptions a;
  a.quiet = true;
  a.out_dir = dir + "/plain";
  auto plain = run_training(tiny_config(dir + "/data"), a);
  a.out_dir = dir + "/one";
  auto one = run_training(tiny_config(dir + "/data", {"chains=1"}), a);
  EXPECT_EQ(plain.values.at("test_error"), one.values.at("test_error"));
  EXPECT_NEAR(plain.values.at("test_nll"), one.values.at("test_nll"), 1e-3);
  EXPECT_NEAR(plain.values.at("rhat_test_loglik"), one.values.at("rhat_test_loglik"), 1e-2);

  a.out_dir = dir + "/four";
  auto four = run_training(tiny_config(dir + "/data", {"chains=4"}), a);
  EXPECT_EQ(four.values.at("chains"), 4);
  EXPECT_EQ(four.values.at("samples"), 8);  // epochs 5..12, one per epoch
  EXPECT_LT(four.values.at("test_error"), 0.05);
  EXPECT_TRUE(std::isfinite(four.values.at("rhat_test_loglik")));
  EXPECT_GT(four.values.at("ess_test_loglik"), 0);
  EXPECT_TRUE(std::isfinite(four.values.at("rhat_weights_max")));
  // Each sample file holds every chain's own λ ("lambda.<group>.chain<c>") beside their mean ("lambda.<group>").
  {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/four/samples")) files.push_back(e.path());
    ASSERT_FALSE(files.empty());
    const auto dict = read_pickle_file(files.front().string()).toGenericDict();
    int groups = 0;
    for (const auto& item : dict) {
      const std::string key = item.key().toStringRef();
      if (key.rfind("lambda.", 0) != 0 || key.find(".chain") != std::string::npos) continue;
      ++groups;
      double sum = 0;
      for (int c = 0; c < 4; ++c) {
        const std::string k = key + ".chain" + std::to_string(c);
        ASSERT_TRUE(dict.contains(k)) << k;
        sum += dict.at(k).toDouble();
      }
      EXPECT_NEAR(sum / 4, item.value().toDouble(), 1e-12 * std::fabs(sum)) << key;
    }
    EXPECT_GT(groups, 0);
  }

  // One minibatch a step for all four chains (train.chain_minibatch: shared): every chain learns the
  // problem, as with their own minibatches.
  a.out_dir = dir + "/shared";
  auto shared = run_training(tiny_config(dir + "/data", {"chains=4", "train.chain_minibatch=shared"}), a);
  EXPECT_EQ(shared.values.at("samples"), 8);
  EXPECT_LT(shared.values.at("test_error"), 0.05);
  EXPECT_TRUE(std::isfinite(shared.values.at("rhat_test_loglik")));
  EXPECT_NE(shared.values.at("test_nll"), four.values.at("test_nll"));  // another data order: another run
  // With one chain there is nothing to share: the same run as its own minibatches, bit for bit.
  a.out_dir = dir + "/one_shared";
  auto one_shared = run_training(tiny_config(dir + "/data", {"chains=1", "train.chain_minibatch=shared"}), a);
  EXPECT_EQ(one.values.at("test_nll"), one_shared.values.at("test_nll"));
  EXPECT_THROW(tiny_config(dir + "/data", {"chains=4", "train.chain_minibatch=some"}), std::invalid_argument);

  // Samplers with a global thermostat / accept step are refused with chains.
  a.out_dir = dir + "/bad";
  try {
    run_training(tiny_config(dir + "/data", {"chains=4"}, "{name: sgnht, lr: 1.0e-4}"), a);
    ADD_FAILURE() << "sgnht with chains: 4 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("chains: sampler sgnht couples"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tiny_config(dir + "/data", {"chains=0"}), std::invalid_argument);
}

// Bayesian linear regression (an mlp with no hidden layer, a Gaussian likelihood with fixed τ, a fixed
// prior precision λ) sampled by SGLD through the trainer's step (StepRunner, MinibatchStream) with 64
// chains, each drawing its own minibatches and sharing one (train.chain_minibatch). Every chain's (w, b)
// has the posterior N(μ, A⁻¹), A = λI + τX̃ᵀX̃, μ = τA⁻¹X̃ᵀy, X̃ = [X, 1].
// Tolerances. The means: SGLD on a Gaussian target is a linear recursion with zero-mean noise, so they
// are unbiased at any step size: 5 standard errors of the time-batch means (20 batches of 1,000 steps,
// ≫ the slowest mode's relaxation time 1/(η·λ_min(A)) ≈ 200 steps), pooled over the chains so that the
// shared minibatch's correlation between chains is inside the error. The variances: SGLD's stationary
// covariance with the full gradient is (A − ηA²/2)⁻¹, at most η·λ_max(A)/2 ≈ 1 % above A⁻¹ here; the
// minibatch's gradient noise adds about (η/2)·V·A⁻¹ ≈ 1.6 % (V ≈ (N²/n)(N − n)/(N − 1) ≈ 63 per unit of
// per-example gradient variance); allowed: 5 standard errors + 5 %. A likelihood gradient scaled by 2
// (or by the chain count) moves the means by ≫ 5 errors and the variances by ≥ 30 %.
TEST(Trainer, ChainsSampleTheLinearRegressionPosterior) {
  const int64_t N = 20, n = 5, C = 64, burn = 2000, steps = 20000, batches = 20, per = steps / batches;
  const double tau = 1.0, lambda = 10.0;
  auto gd = compat::make_generator(torch::kCPU, 21);
  const auto X = at::randn({N, 2}, gd, torch::kFloat64);
  const auto y = X.matmul(torch::tensor({1.0, -0.5}, torch::kFloat64)) + 0.3 + at::randn({N}, gd, torch::kFloat64);
  const auto Xt = torch::cat({X, torch::ones({N, 1}, torch::kFloat64)}, 1);
  const auto A = lambda * torch::eye(3, torch::kFloat64) + tau * Xt.t().matmul(Xt);
  const auto cov = torch::inverse(A);
  const auto mu = cov.matmul(tau * Xt.t().matmul(y));
  const Batch train{X, y};
  for (const bool shared : {false, true}) {
    MlpOptions o;
    o.inputs = 2;
    o.hidden = {};
    o.outputs = 1;
    o.likelihood = "gaussian";
    o.noise_precision = tau;
    auto gi = compat::make_generator(torch::kCPU, 3);
    MlpChains m(o, C, gi);
    m.to(torch::kFloat64);
    ASSERT_TRUE(m.share_minibatch(shared));
    EXPECT_EQ(m.minibatch_chains(), shared ? 1 : C);
    GaussianPrior prior(make_prior_groups(m, "per_tensor"), lambda, /*learn=*/false, 1.0, 1.0);
    auto gen = compat::make_generator(torch::kCPU, 7);
    OptionMap lr("sampler");
    lr.set("lr", "5e-4");
    auto sampler = make_sampler("sgld", {ParamGroup(m.parameters())}, lr, gen);
    LossMeter loss(torch::kCPU);
    StepRunner runner(m, *sampler, prior, train, static_cast<double>(N) / n, n, loss, /*graph=*/false, torch::kCPU, gen);
    MinibatchStream stream(N, n, m.minibatch_chains(), torch::kCPU, gen);
    auto params = m.named_parameters();
    const auto w = params["fc1.weight"], b = params["fc1.bias"];
    auto m1 = torch::zeros({batches, 3}, torch::kFloat64), m2 = torch::zeros({batches, 3}, torch::kFloat64);
    for (int64_t t = 0; t < burn + steps; ++t) {
      runner.step(stream.next());
      if (t < burn) continue;
      torch::NoGradGuard no_grad;
      const auto th = torch::cat({w.detach().reshape({C, 2}), b.detach().reshape({C, 1})}, 1);
      const int64_t k = (t - burn) / per;
      m1[k] += th.sum(0);
      m2[k] += th.square().sum(0);
    }
    m1 /= static_cast<double>(per * C);
    m2 /= static_cast<double>(per * C);
    const auto vb = m2 - m1.square();  // each batch's variance over its steps and chains
    const double root = std::sqrt(static_cast<double>(batches));
    for (int64_t j = 0; j < 3; ++j) {
      const double mean = m1.select(1, j).mean().item<double>(), mean_se = m1.select(1, j).std().item<double>() / root;
      const double var = vb.select(1, j).mean().item<double>(), var_se = vb.select(1, j).std().item<double>() / root;
      const double want_var = cov[j][j].item<double>();
      EXPECT_NEAR(mean, mu[j].item<double>(), 5 * mean_se) << (shared ? "shared" : "own") << " coordinate " << j;
      EXPECT_NEAR(var, want_var, 5 * var_se + 0.05 * want_var) << (shared ? "shared" : "own") << " coordinate " << j;
    }
  }
}

// A deep ensemble is an optimizer with `chains: K`. K = 1 reproduces the plain optimizer
// run (the same tolerances as ParallelChains above: batched vs plain GEMM round-off only); K = 3
// reports the members' mutual information, which one member cannot have.
TEST(Trainer, DeepEnsembleOfOptimizers) {
  auto dir = test_util::temp_dir("trainer_ensemble");
  test_util::write_tiny_idx_dir(dir + "/data");
  const std::string sgdm = "{name: sgd-momentum, lr: 1.0e-4, momentum: 0.9}";
  RunOptions a;
  a.quiet = true;
  a.out_dir = dir + "/plain";
  auto plain = run_training(tiny_config(dir + "/data", {"train.burn_in=0", "prior.hyperprior=none"}, sgdm), a);
  a.out_dir = dir + "/one";
  auto one = run_training(tiny_config(dir + "/data", {"train.burn_in=0", "prior.hyperprior=none", "chains=1"}, sgdm), a);
  EXPECT_EQ(plain.values.at("test_error"), one.values.at("test_error"));
  EXPECT_NEAR(plain.values.at("test_nll"), one.values.at("test_nll"), 1e-3);
  EXPECT_EQ(plain.values.count("test_mi"), 0u);
  a.out_dir = dir + "/three";
  auto three = run_training(tiny_config(dir + "/data", {"train.burn_in=0", "prior.hyperprior=none", "chains=3"}, sgdm), a);
  EXPECT_EQ(three.values.at("chains"), 3);
  EXPECT_GT(three.values.at("test_mi"), 0);
  EXPECT_LT(three.values.at("test_error"), 0.05);
}
