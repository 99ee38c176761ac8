// BPMF model: the likelihood by hand, gradient sparsity, the τ Gibbs step, the Gamma sampler, and a
// small synthetic low-rank problem learned through the sampler registry.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/kernel_settings.h"
#include "core/remove_tree.h"
#include "compat.h"
#include "config/experiment_config.h"
#include "data/kfold.h"
#include "models/bpmf.h"
#include "samplers/registry.h"
#include "train/trainer.h"

using namespace sgmcmc;

namespace {

at::Generator gen(uint64_t seed) { return compat::make_generator(torch::kCPU, seed); }

std::shared_ptr<Bpmf> tiny_model(double tau, double mu) {
  BpmfOptions o;
  o.dim(2).tau(tau).mean(mu);
  auto m = std::make_shared<Bpmf>(2, 3, o, gen(1));
  torch::NoGradGuard g;
  m->U().copy_(torch::tensor({{1.0f, 2.0f}, {-1.0f, 0.5f}}));
  m->V().copy_(torch::tensor({{0.5f, 0.0f}, {1.0f, -1.0f}, {2.0f, 1.0f}}));
  m->a().copy_(torch::tensor({0.1f, -0.2f}));
  m->b().copy_(torch::tensor({0.0f, 0.3f, -0.4f}));
  return m;
}

}  // namespace

// ŷ and nll against a hand computation.
TEST(Bpmf, NllMatchesHandComputation) {
  auto m = tiny_model(2.0, 3.0);
  Batch b{torch::tensor({0, 1, 1, 2, 0, 2}, torch::kInt64).view({3, 2}), torch::tensor({4.0f, 2.0f, 3.5f})};
  // (0,1): 1·1 + 2·(−1) + 0.1 + 0.3 + 3 = 2.4;  (1,2): −2 + 0.5 − 0.2 − 0.4 + 3 = 0.9;
  // (0,2): 2 + 2 + 0.1 − 0.4 + 3 = 6.7.
  auto pred = m->predict(b.inputs);
  EXPECT_NEAR(pred[0].item<double>(), 2.4, 1e-6);
  EXPECT_NEAR(pred[1].item<double>(), 0.9, 1e-6);
  EXPECT_NEAR(pred[2].item<double>(), 6.7, 1e-6);
  const double sq = 1.6 * 1.6 + 1.1 * 1.1 + 3.2 * 3.2;
  const double want = 0.5 * 2.0 * sq - 1.5 * std::log(2.0) + 1.5 * std::log(2 * M_PI);
  EXPECT_NEAR(m->nll(b).item<double>(), want, 1e-5);
  EXPECT_EQ(m->likelihood_hyperparameters().at("tau"), 2.0);
}

// The likelihood gradient is exactly −τ r V_j on the batch's user rows and zero on every other row.
TEST(Bpmf, GradientOnlyOnBatchRows) {
  BpmfOptions o;
  o.dim(4).tau(1.5).mean(3.0);
  auto m = std::make_shared<Bpmf>(50, 40, o, gen(3));
  {
    torch::NoGradGuard g;
    m->a().normal_(0, 1, gen(4));
  }
  auto users = torch::tensor({1, 3, 3, 17}, torch::kInt64);
  auto items = torch::tensor({2, 5, 2, 39}, torch::kInt64);
  Batch b{torch::stack({users, items}, 1), torch::tensor({4.0f, 1.0f, 5.0f, 2.5f})};
  m->nll(b).backward();
  auto r = (b.targets - m->predict(b.inputs)).detach();
  auto gU = torch::zeros_like(m->U());
  auto ga = torch::zeros_like(m->a());
  for (int k = 0; k < 4; ++k) {
    gU[users[k].item<int64_t>()] -= 1.5 * r[k] * m->V()[items[k].item<int64_t>()].detach();
    ga[users[k].item<int64_t>()] -= 1.5 * r[k];
  }
  EXPECT_TRUE(torch::allclose(m->U().grad(), gU, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(m->a().grad(), ga, 1e-5, 1e-6));
  auto rows_u = (m->U().grad().abs().sum(1) > 0).nonzero().flatten();
  auto rows_v = (m->V().grad().abs().sum(1) > 0).nonzero().flatten();
  EXPECT_TRUE(torch::equal(rows_u, torch::tensor({1, 3, 17}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(rows_v, torch::tensor({2, 5, 39}, torch::kInt64)));
  EXPECT_EQ((m->b().grad() != 0).sum().item<int64_t>(), 3);
}

// With a dense .grad already there (as in training), the rows' gradient is accumulated through a
// sparse embedding gradient: the same values as index_select's dense one, and .grad stays dense.
TEST(Bpmf, SparseRowGradientEqualsDense) {
  BpmfOptions o;
  o.dim(4).tau(1.5).mean(3.0);
  auto m = std::make_shared<Bpmf>(50, 40, o, gen(3));
  auto users = torch::tensor({1, 3, 3, 17}, torch::kInt64);
  auto items = torch::tensor({2, 5, 2, 39}, torch::kInt64);
  Batch b{torch::stack({users, items}, 1), torch::tensor({4.0f, 1.0f, 5.0f, 2.5f})};
  m->nll(b).backward();  // no .grad yet: the dense path
  auto dense_u = m->U().grad().clone(), dense_v = m->V().grad().clone();
  m->U().mutable_grad().fill_(0.25);  // a seeded dense .grad: the sparse path adds into it
  m->V().mutable_grad().zero_();
  m->nll(b).backward();
  EXPECT_EQ(m->U().grad().layout(), torch::kStrided);
  EXPECT_TRUE(torch::allclose(m->U().grad(), dense_u + 0.25, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(m->V().grad(), dense_v, 1e-6, 1e-6));
}

// The model's own backward (bpmf_backward.cpp) against autograd on nll(): the nll and the gradients of
// U, V, a, b added into seeded .grads, for 3,000 ratings (both passes split over tasks; users and
// items repeat within the batch and straddle the tasks' row ranges). float32: the nll to 1e-6 relative
// (float64 sums in both), the gradients to 1e-5 of their largest entry (float sums of up to ~100
// terms per row in a different order). A rating outside the tables is an error naming it.
namespace {

// A model of dimension d on `dev`, 3,000 ratings of 60 users × 45 items, and the comparison of
// nll_backward with autograd from the same prior-seeded .grads. Returns the model and the batch.
std::pair<std::shared_ptr<Bpmf>, Batch> expect_own_backward_equals_autograd(int64_t d, const torch::Device& dev) {
  BpmfOptions o;
  o.dim(d).tau(1.7).mean(3.2).init_std(0.5);
  auto m = std::make_shared<Bpmf>(60, 45, o, gen(9));
  m->to(dev);
  auto g = gen(10);
  auto users = at::randint(0, 60, {3000}, g, torch::kInt64);
  auto items = at::randint(0, 45, {3000}, g, torch::kInt64);
  Batch b{torch::stack({users, items}, 1).to(dev), (at::rand({3000}, g) * 4 + 1).to(torch::kFloat32).to(dev)};
  const double scale = 33.0;
  auto seed = [&] {
    for (auto& p : m->parameters()) p.mutable_grad() = 0.5 * p.detach();
  };
  seed();
  auto nll = m->nll(b);
  nll.backward(torch::full({}, scale, nll.options()));
  std::vector<torch::Tensor> want;
  for (auto& p : m->parameters()) want.push_back(p.grad().clone());
  seed();
  auto got = m->nll_backward(b, scale);
  EXPECT_TRUE(got.defined());
  if (!got.defined()) return {m, b};
  EXPECT_NEAR(got.item<double>(), nll.item<double>(), 1e-6 * std::abs(nll.item<double>()));
  auto params = m->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_LE((params[i].grad() - want[i]).abs().max().item<double>(), 1e-5 * want[i].abs().max().item<double>()) << i;
  return {m, b};
}

}  // namespace

TEST(Bpmf, OwnBackwardEqualsAutograd) {
  auto [m, b] = expect_own_backward_equals_autograd(6, torch::kCPU);
  Batch bad{torch::tensor({{0, 1}, {60, 2}}, torch::kInt64), torch::tensor({1.0f, 2.0f})};
  EXPECT_THROW(m->nll_backward(bad, 33.0), std::out_of_range);
  m->parameters()[0].mutable_grad() = torch::Tensor();
  EXPECT_FALSE(m->nll_backward(b, 33.0).defined());
}

// The CUDA kernel (kernels/cuda/bpmf_cuda.h, kernels.cuda_bpmf: fused) against autograd on the same device,
// with the same tolerances (float32 atomics add in a varying order); d = 40 > 32: two passes of a
// warp's lanes.
TEST(Bpmf, CudaOwnBackwardEqualsAutograd) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  KernelSettings k;
  k.cuda_bpmf_fused = true;
  ScopedKernelSettings scope(k);
  expect_own_backward_equals_autograd(40, torch::Device(torch::kCUDA));
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}

TEST(Bpmf, PriorGroupsAndBadInputs) {
  BpmfOptions o;
  o.dim(3);
  Bpmf m(5, 7, o, gen(1));
  auto groups = m.prior_groups();
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].name, "U");
  EXPECT_EQ(groups[0].numel(), 15);
  EXPECT_EQ(groups[1].name, "V");
  EXPECT_EQ(groups[1].numel(), 21);
  EXPECT_EQ(groups[2].numel(), 5);
  EXPECT_EQ(groups[3].numel(), 7);
  EXPECT_EQ(m.parameters().size(), 4u);
  EXPECT_THROW(m.predict(torch::zeros({3, 2}, torch::kFloat32)), std::invalid_argument);
  BpmfOptions bad;
  bad.tau(0);
  try {
    Bpmf(5, 7, bad, gen(1));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "model.tau: must be a finite number > 0, got 0");
  }
}

// Same seed, same initial parameters; init std as configured (0.1 ± a few % for 4000 draws).
TEST(Bpmf, SeededInit) {
  BpmfOptions o;
  o.dim(20);
  Bpmf a(100, 100, o, gen(9)), b(100, 100, o, gen(9)), c(100, 100, o, gen(10));
  EXPECT_TRUE(torch::equal(a.U(), b.U()));
  EXPECT_FALSE(torch::equal(a.U(), c.U()));
  // sd of the sample std of 2000 normals ≈ σ/sqrt(2·2000) = 0.0016; 5 sd = 0.008.
  EXPECT_NEAR(a.U().std().item<double>(), 0.1, 0.008);
  EXPECT_EQ(a.a().abs().sum().item<double>(), 0.0);
}

// make_bpmf reads the option keys and takes μ from the training targets.
TEST(Bpmf, FactoryFromDataset) {
  Dataset d;
  d.task = Task::kRegression;
  d.dims = {{"users", 4}, {"items", 6}};
  d.train = Batch{torch::zeros({3, 2}, torch::kInt64), torch::tensor({1.0f, 2.0f, 4.5f})};
  OptionMap o("model");
  o.set("dim", "5");
  o.set("tau", "3");
  o.set("sample_tau", "true");
  auto m = make_bpmf(d, o, gen(1));
  EXPECT_EQ(m->U().sizes(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(m->V().sizes(), (std::vector<int64_t>{6, 5}));
  EXPECT_NEAR(m->mean(), 2.5, 1e-12);
  EXPECT_EQ(m->tau(), 3.0);
  EXPECT_TRUE(m->options().sample_tau());
  Dataset no_dims;
  no_dims.train = d.train;
  EXPECT_THROW(make_bpmf(no_dims, o, gen(1)), std::invalid_argument);
}

// τ | residuals ~ Gamma(α + N/2, β + SSE/2). With U, V, a, b = 0 and μ = 0 the residuals are the
// targets, so the conditional is known exactly. Average of M draws vs its mean, 5 sd of the mean.
TEST(Bpmf, TauGibbsStepMatchesConditional) {
  BpmfOptions o;
  o.dim(2).init_std(0).mean(0).tau(1).sample_tau(true).tau_alpha(2).tau_beta(3);
  Bpmf m(30, 20, o, gen(1));
  const int64_t n = 4000;
  auto g = gen(2);
  auto users = at::randint(30, {n}, g, torch::kInt64);
  auto items = at::randint(20, {n}, g, torch::kInt64);
  auto y = at::randn({n}, g, torch::kFloat32).mul_(0.5);  // true τ = 4
  Batch train{torch::stack({users, items}, 1), y};
  const double sse = y.to(torch::kFloat64).square().sum().item<double>();
  const double shape = 2 + n / 2.0, rate = 3 + sse / 2;
  const int M = 400;
  double sum = 0;
  for (int k = 0; k < M; ++k) {
    m.gibbs_step_likelihood(train, g);
    sum += m.tau();
  }
  const double post_mean = shape / rate, post_sd = std::sqrt(shape) / rate;
  EXPECT_NEAR(sum / M, post_mean, 5 * post_sd / std::sqrt(M));
  EXPECT_NEAR(post_mean, 4.0, 0.4);  // sd of the estimate ≈ 4·sqrt(2/4000) = 0.09
  // Fixed τ: the Gibbs step leaves it alone.
  BpmfOptions f;
  f.tau(1.7);
  Bpmf fixed(30, 20, f, gen(1));
  fixed.gibbs_step_likelihood(train, g);
  EXPECT_NEAR(fixed.tau(), 1.7, 1e-6);
}

// A rank-3 60×50 matrix, 60 % observed with noise sd 0.1: SGLD from the registry, minibatches of 300,
// Ũ = (N/n)·nll + ½ Σ θ² (λ = 1), predictions averaged over thinned samples after burn-in. The
// held-out RMSE must fall well below predicting μ (≈ 1.7 here, the sd of the true entries): we
// require < 0.1 of it (held-out targets are noise-free; measured 0.070 / 1.680 = 0.042). A broken gradient, scale or index leaves it near the baseline.
TEST(Bpmf, SgldLearnsLowRankMatrix) {
  auto g = gen(77);
  const int64_t U = 60, I = 50, r = 3;
  auto Ut = at::randn({U, r}, g, torch::kFloat32), Vt = at::randn({I, r}, g, torch::kFloat32);
  auto full = torch::mm(Ut, Vt.t()) + 3.0;
  auto mask = at::rand({U, I}, g, torch::kFloat32) < 0.6;
  auto obs = mask.nonzero(), held = (~mask).nonzero();
  auto targets = [&](const torch::Tensor& idx) {
    return full.index({idx.select(1, 0), idx.select(1, 1)});
  };
  Batch train{obs, targets(obs) + 0.1 * at::randn({obs.size(0)}, g, torch::kFloat32)};
  Batch test{held, targets(held)};
  const int64_t N = train.size(), n = 300;

  BpmfOptions o;
  o.dim(5).tau(100).mean(train.targets.mean().item<double>());
  auto m = std::make_shared<Bpmf>(U, I, o, g);
  OptionMap so("sampler");
  so.set("lr", "5e-5");
  auto sampler = make_sampler("sgld", {ParamGroup(m->parameters())}, so, gen(78));

  const double baseline = (test.targets - o.mean()).square().mean().sqrt().item<double>();
  auto avg = torch::zeros({test.size()});
  int samples = 0;
  const int steps = 4000, burn_in = 2000, thin = 20;
  for (int t = 0; t < steps; ++t) {
    auto idx = at::randint(N, {n}, g, torch::kInt64);
    Batch b{train.inputs.index_select(0, idx), train.targets.index_select(0, idx)};
    sampler->zero_grad();
    auto loss = (double(N) / n) * m->nll(b);
    for (auto& p : m->parameters()) loss = loss + 0.5 * p.square().sum();
    loss.backward();
    sampler->step();
    if (t >= burn_in && t % thin == 0) {
      torch::NoGradGuard ng;
      avg += m->predict(test.inputs);
      ++samples;
    }
  }
  avg /= samples;
  const double rmse = (avg.clamp(full.min().item<double>(), full.max().item<double>()) - test.targets)
                          .square().mean().sqrt().item<double>();
  std::printf("[ info ] held-out RMSE %.4f vs baseline %.4f (%d samples)\n", rmse, baseline, samples);
  EXPECT_LT(rmse, 0.1 * baseline);
}

// ml-1M shape (6,040 × 3,952, d = 20), batch 4,000: forward + backward time, and the gradient
// touches no more rows than the batch has distinct users.
TEST(Bpmf, Ml1mShapeForwardBackward) {
  BpmfOptions o;
  o.dim(20).mean(3.58);
  Bpmf m(6040, 3952, o, gen(1));
  auto g = gen(2);
  const int64_t n = 4000;
  auto users = at::randint(6040, {n}, g, torch::kInt64), items = at::randint(3952, {n}, g, torch::kInt64);
  Batch b{torch::stack({users, items}, 1), at::randint(1, 6, {n}, g, torch::kFloat32)};
  for (auto& p : m.parameters()) p.mutable_grad() = torch::zeros_like(p);
  const int reps = 50;
  auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < reps; ++k) {
    for (auto& p : m.parameters()) p.mutable_grad().zero_();
    m.nll(b).backward();
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
  std::printf("[ info ] ml-1M shape, batch 4000, d 20: forward+backward %.3f ms (incl. zeroing grads)\n", ms);
  const int64_t distinct = std::get<0>(at::_unique(users)).numel();
  EXPECT_EQ((m.U().grad().abs().sum(1) > 0).sum().item<int64_t>(), distinct);
}

namespace {

// A rank-2 80×60 matrix around 3, rounded to half stars in [0.5, 5], ~50 % observed, written as
// ml-1M style ratings.dat with sparse original ids (users 1000 + 3u, items 17 + 5i).
void write_low_rank_ratings(const std::string& path, uint64_t seed) {
  auto g = gen(seed);
  const int64_t U = 80, I = 60;
  auto Ut = at::randn({U, 2}, g, torch::kFloat32) * 0.8, Vt = at::randn({I, 2}, g, torch::kFloat32) * 0.8;
  auto full = (torch::mm(Ut, Vt.t()) + 3.0).mul(2).round().div(2).clamp(0.5, 5.0);
  auto keep = at::rand({U, I}, g, torch::kFloat32) < 0.5;
  std::ostringstream text;
  auto acc = full.accessor<float, 2>();
  auto kacc = keep.accessor<bool, 2>();
  for (int64_t u = 0; u < U; ++u)
    for (int64_t i = 0; i < I; ++i)
      if (kacc[u][i]) text << (1000 + 3 * u) << "::" << (17 + 5 * i) << "::" << acc[u][i] << "::978300760\n";
  std::ofstream(path) << text.str();
}

}  // namespace

// End to end through the trainer: a ratings.dat the test writes (a rank-2 80×60 matrix around 3,
// rounded to half stars, ~50 % observed), data.format ratings with data.fold, model bpmf, SGLD with
// Gibbs steps for λ_U, λ_V, λ_a, λ_b and τ. The averaged prediction's test RMSE must beat predicting
// μ by a wide margin (< 0.6 of it; the rounding alone leaves an RMSE of 0.144 = 0.5/sqrt(12), and
// the measured ratio is 0.185 / 0.836 = 0.22), and the run directory holds the id map and summary.
TEST(Bpmf, TrainsEndToEndFromRatingsFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sgmcmc_test_bpmf_" + std::to_string(::getpid()));
  sgmcmc::remove_tree(dir);
  fs::create_directories(dir);
  const std::string ratings = (dir / "ratings.dat").string();
  write_low_rank_ratings(ratings, 5);
  const std::string yaml = (dir / "bpmf.yaml").string();
  std::ofstream(yaml) << "name: bpmf_e2e\nseed: 3\n"
                         "data: {format: ratings, path: " << ratings << ", folds: 5, fold: 2}\n"
                         "model: {name: bpmf, dim: 4, tau: 4, sample_tau: true}\n"
                         "prior: {groups: model, gibbs_every_steps: 200}\n"
                         "sampler: {name: sgld, lr: 2.0e-4}\n"
                         "train: {steps: 3000, batch_size: 200, burn_in_steps: 1000, thin: 10, eval_every_steps: 1000}\n"
                         "output: {checkpoint: false}\n";
  auto cfg = load_config(yaml);
  RunOptions ro;
  ro.out_dir = (dir / "run").string();
  ro.quiet = true;
  auto summary = run_training(cfg, ro);

  OptionMap d("data");
  d.set("path", ratings);
  d.set("fold", "2");
  auto ds = load_ratings_dataset(d);
  const double mu = ds.train.targets.mean().item<double>();
  const double baseline = (ds.test.targets - mu).square().mean().sqrt().item<double>();
  const double rmse = summary.values.at("test_rmse");
  std::printf("[ info ] end-to-end test RMSE %.4f vs baseline %.4f, %g samples, tau %.3g\n", rmse, baseline,
              summary.values.at("samples"), summary.values.count("tau") ? summary.values.at("tau") : NAN);
  EXPECT_TRUE(summary.finished);
  EXPECT_EQ(summary.values.at("steps"), 3000);
  EXPECT_EQ(summary.values.at("samples"), 200);
  EXPECT_LT(rmse, 0.6 * baseline);
  std::ifstream idmap(dir / "run" / "id_map.csv");
  std::string first;
  std::getline(idmap, first);
  EXPECT_EQ(first, "kind,index,id");
  std::getline(idmap, first);
  EXPECT_EQ(first, "user,0,1000");
  EXPECT_TRUE(fs::exists(dir / "run" / "summary.json"));
  EXPECT_TRUE(fs::exists(dir / "run" / "metrics.csv"));
  sgmcmc::remove_tree(dir);
}

// `sgmcmc train` on ratings without data.fold: every fold into OUT/fold<k>, and OUT/summary.json with
// the mean ± std of test_rmse over the folds.
TEST(Bpmf, CliRunsAllFolds) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sgmcmc_test_bpmf_cli_" + std::to_string(::getpid()));
  sgmcmc::remove_tree(dir);
  fs::create_directories(dir);
  const std::string ratings = (dir / "ratings.dat").string();
  write_low_rank_ratings(ratings, 6);
  const std::string yaml = (dir / "bpmf.yaml").string();
  std::ofstream(yaml) << "seed: 2\ndata: {format: ratings, path: " << ratings << ", folds: 3}\n"
                         "model: {name: bpmf, dim: 3}\nprior: {groups: model, gibbs_every_steps: 100}\n"
                         "sampler: {name: sgld, lr: 2.0e-4}\n"
                         "train: {steps: 300, batch_size: 200, burn_in_steps: 100, thin: 10, eval_every_steps: 300}\n"
                         "output: {checkpoint: false}\n";
  const std::string cmd = std::string(SGMCMC_BINARY) + " train " + yaml + " --out " + (dir / "cv").string() +
                          " -q > " + (dir / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<double> rmse;
  for (int k = 0; k < 3; ++k) {
    std::ifstream in(dir / "cv" / ("fold" + std::to_string(k)) / "summary.json");
    std::stringstream ss;
    ss << in.rdbuf();
    auto pos = ss.str().find("\"test_rmse\": ");
    ASSERT_NE(pos, std::string::npos) << "fold " << k;
    rmse.push_back(std::stod(ss.str().substr(pos + 13)));
  }
  std::ifstream in(dir / "cv" / "summary.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string js = ss.str();
  EXPECT_NE(js.find("\"folds\": 3"), std::string::npos) << js;
  auto m = mean_std(rmse);
  auto pos = js.find("\"test_rmse\": ");
  ASSERT_NE(pos, std::string::npos) << js;
  EXPECT_NEAR(std::stod(js.substr(pos + 13)), m.mean, 1e-8);
  pos = js.find("\"test_rmse_std\": ");
  ASSERT_NE(pos, std::string::npos) << js;
  EXPECT_NEAR(std::stod(js.substr(pos + 17)), m.std, 1e-8);
  // The folds' test sets differ, so their RMSEs do too.
  EXPECT_GT(m.std, 0.0);
  sgmcmc::remove_tree(dir);
}
