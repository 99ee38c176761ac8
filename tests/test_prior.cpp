#include <gtest/gtest.h>

#include <cmath>

#include "compat.h"
#include "metrics/async_read.h"
#include "priors/gaussian_prior.h"

using namespace sgmcmc;

// Draws from Gamma(a, b) (shape a, rate b) have mean a/b and variance a/b². With M draws the sample
// mean has standard deviation sqrt(a)/b/sqrt(M), the sample variance ≈ var·sqrt((2 + 6/a)/M)
// (Gamma's excess kurtosis is 6/a). Tolerances are 5 of those standard deviations (fixed seed, so
// the test is deterministic; 5σ keeps it valid for any seed with probability > 1 − 1e-6).
TEST(Prior, GibbsConditionalMoments) {
  auto gen = compat::make_generator(torch::kCPU, 123);
  auto w = at::randn({50}, gen, torch::kFloat64) * 0.3;
  const double alpha = 1.0, beta = 1.0;
  const double a = alpha + 50 / 2.0, b = beta + w.pow(2).sum().item<double>() / 2;
  const int64_t M = 20000;
  auto draws = sample_gamma(torch::full({M}, a, torch::kFloat64), torch::full({M}, b, torch::kFloat64), gen);
  const double mean = a / b, var = a / (b * b);
  EXPECT_NEAR(draws.mean().item<double>(), mean, 5 * std::sqrt(var / M));
  EXPECT_NEAR(draws.var().item<double>(), var, 5 * var * std::sqrt((2 + 6 / a) / M));
}

// The same through GaussianPrior::gibbs_step on two groups of a model-like parameter set.
TEST(Prior, GibbsStepDrawsFromConditional) {
  auto gen = compat::make_generator(torch::kCPU, 7);
  auto w1 = at::randn({10, 3}, gen, torch::kFloat32) * 0.5;
  auto w2 = at::randn({4}, gen, torch::kFloat32) * 2.0;
  GaussianPrior prior({{"w1", {w1}}, {"w2", {w2}}}, 1.0, true, 2.0, 3.0);
  const int64_t M = 4000;
  std::vector<double> l1, l2;
  for (int64_t i = 0; i < M; ++i) {
    prior.gibbs_step(gen);
    l1.push_back(prior.precisions()[0]);
    l2.push_back(prior.precisions()[1]);
  }
  auto check = [&](const std::vector<double>& l, const torch::Tensor& w) {
    const double a = 2.0 + w.numel() / 2.0, b = 3.0 + w.to(torch::kFloat64).pow(2).sum().item<double>() / 2;
    auto t = torch::tensor(l, torch::kFloat64);
    const double var = a / (b * b);
    EXPECT_NEAR(t.mean().item<double>(), a / b, 5 * std::sqrt(var / M));
    EXPECT_NEAR(t.var().item<double>(), var, 5 * var * std::sqrt((2 + 6 / a) / M));
  };
  check(l1, w1);
  check(l2, w2);
  EXPECT_EQ(prior.log_values().count("lambda.w2"), 1u);
}

TEST(Prior, FixedPrecisionIsNotResampled) {
  auto gen = compat::make_generator(torch::kCPU, 7);
  auto w = torch::ones({3});
  GaussianPrior prior({{"w", {w}}}, 2.5, false, 1, 1);
  prior.gibbs_step(gen);
  EXPECT_EQ(prior.precisions()[0], 2.5);
}

// prior.init: init_scale gives λ_g = n_g/‖θ_g‖² exactly; prior_draw draws λ_g ~ Gamma(α, β) from the
// generator handed in (the same draw as sample_gamma on an identically seeded generator).
TEST(Prior, InitialPrecisions) {
  auto w1 = torch::full({4, 5}, 0.5), w2 = torch::tensor({3.0f, 4.0f});
  auto gen = compat::make_generator(torch::kCPU, 11);
  GaussianPrior scaled({{"w1", {w1}}, {"w2", {w2}}}, 1.0, true, 2.0, 3.0);
  scaled.initialize("init_scale", gen);
  EXPECT_DOUBLE_EQ(scaled.precisions()[0], 20 / 5.0);  // 20 entries, ‖θ‖² = 20·0.25
  EXPECT_DOUBLE_EQ(scaled.precisions()[1], 2 / 25.0);
  GaussianPrior kept({{"w1", {w1}}}, 1.5, true, 2.0, 3.0);
  kept.initialize("precision", gen);
  EXPECT_EQ(kept.precisions()[0], 1.5);

  GaussianPrior drawn({{"w1", {w1}}, {"w2", {w2}}}, 1.0, true, 2.0, 3.0);
  auto g1 = compat::make_generator(torch::kCPU, 21), g2 = compat::make_generator(torch::kCPU, 21);
  drawn.initialize("prior_draw", g1);
  auto expect = sample_gamma(torch::full({2}, 2.0, torch::kFloat64), torch::full({2}, 3.0, torch::kFloat64), g2);
  EXPECT_DOUBLE_EQ(drawn.precisions()[0], expect[0].item<double>());
  EXPECT_DOUBLE_EQ(drawn.precisions()[1], expect[1].item<double>());
  EXPECT_NE(drawn.precisions()[0], drawn.precisions()[1]);
}

TEST(Prior, SameSeedSameDraws) {
  auto w = torch::ones({3});
  GaussianPrior p1({{"w", {w}}}, 1, true, 1, 1), p2({{"w", {w}}}, 1, true, 1, 1);
  auto g1 = compat::make_generator(torch::kCPU, 99), g2 = compat::make_generator(torch::kCPU, 99);
  p1.gibbs_step(g1);
  p2.gibbs_step(g2);
  EXPECT_EQ(p1.precisions()[0], p2.precisions()[0]);
}

// ∇ of Σ λ_g ‖θ_g‖²/2 is λ_g θ_g: autograd of neg_log_prob and add_grad agree with it exactly.
TEST(Prior, NegLogProbGradientIsLambdaTheta) {
  auto gen = compat::make_generator(torch::kCPU, 5);
  auto a = at::randn({3, 4}, gen, torch::kFloat64).requires_grad_(true);
  auto b = at::randn({4}, gen, torch::kFloat64).requires_grad_(true);
  GaussianPrior prior({{"a", {a}}, {"b", {b}}}, 1.0, false, 1, 1);
  prior.set_precisions({0.5, 3.0});
  auto u = prior.neg_log_prob();
  EXPECT_NEAR(u.item<double>(), 0.25 * a.pow(2).sum().item<double>() + 1.5 * b.pow(2).sum().item<double>(), 1e-12);
  u.backward();
  EXPECT_TRUE(torch::allclose(a.grad(), 0.5 * a.detach(), 0, 1e-15));
  EXPECT_TRUE(torch::allclose(b.grad(), 3.0 * b.detach(), 0, 1e-15));
  a.mutable_grad().zero_();
  b.mutable_grad().zero_();
  prior.add_grad();
  EXPECT_TRUE(torch::allclose(a.grad(), 0.5 * a.detach(), 0, 1e-15));
  EXPECT_TRUE(torch::allclose(b.grad(), 3.0 * b.detach(), 0, 1e-15));
}

// seed_grad() then backward() gives the gradient of zeroing, backward() and add_grad(): λθ plus the
// likelihood's gradient (float64: equal to rounding; the two orders of one addition), also for
// chain slices and for a parameter without a gradient yet. covers() says when it may be used.
TEST(Prior, SeededGradientEqualsAddedGradient) {
  auto gen = compat::make_generator(torch::kCPU, 6);
  auto w = at::randn({2, 3, 4}, gen, torch::kFloat64).requires_grad_(true);  // 2 chains' slices
  auto b = at::randn({5}, gen, torch::kFloat64).requires_grad_(true);
  auto x = at::randn({3, 4}, gen, torch::kFloat64);
  auto lik = [&] { return (w * x).pow(3).sum() + b.sin().sum(); };
  GaussianPrior prior({{"w0", {w}, 0}, {"w1", {w}, 1}, {"b", {b}}}, 1.0, false, 1, 1);
  prior.set_precisions({0.5, 2.0, 3.0});
  EXPECT_TRUE(prior.covers({w, b}));
  EXPECT_FALSE(prior.covers({w}));
  EXPECT_FALSE(GaussianPrior({{"w0", {w}, 0}, {"b", {b}}}, 1.0, false, 1, 1).covers({w, b}));

  prior.seed_grad();  // b and w have no .grad yet: allocated
  lik().backward();
  auto seeded_w = w.grad().clone(), seeded_b = b.grad().clone();
  w.mutable_grad().zero_();
  b.mutable_grad().zero_();
  lik().backward();
  prior.add_grad();
  EXPECT_TRUE(torch::allclose(seeded_w, w.grad(), 1e-15, 1e-15));
  EXPECT_TRUE(torch::allclose(seeded_b, b.grad(), 1e-15, 1e-15));
  EXPECT_GT((seeded_w.select(0, 1) - seeded_w.select(0, 0)).abs().max().item<double>(), 0);
  // Seeding overwrites: a second seed_grad() + backward gives the same values again, not twice them.
  prior.seed_grad();
  lik().backward();
  EXPECT_TRUE(torch::allclose(seeded_w, w.grad(), 1e-15, 1e-15));
}

// On float32 CPU parameters with gradients, seed_grad() is one loop over every group
// (kernels/cpu/scale_segments.h): the same bits as at::mul_out by the group's float32 λ, for chain slices
// and a tensor large enough (120,000 elements per slice) to be split over threads.
TEST(Prior, SeedGradFloat32EqualsMulOut) {
  auto gen = compat::make_generator(torch::kCPU, 7);
  auto w = at::randn({2, 300, 400}, gen, torch::kFloat32).requires_grad_(true);
  auto b = at::randn({5}, gen, torch::kFloat32).requires_grad_(true);
  w.mutable_grad() = torch::full_like(w, 7.0);
  b.mutable_grad() = torch::full_like(b, 7.0);
  GaussianPrior prior({{"w0", {w}, 0}, {"w1", {w}, 1}, {"b", {b}}}, 1.0, false, 1, 1);
  prior.set_precisions({0.3, 2.7, 1e-3});
  prior.seed_grad();
  const auto lam = [](double l) { return torch::full({}, l, torch::kFloat32); };
  EXPECT_TRUE(torch::equal(w.grad().select(0, 0), at::mul(w.detach().select(0, 0), lam(0.3))));
  EXPECT_TRUE(torch::equal(w.grad().select(0, 1), at::mul(w.detach().select(0, 1), lam(2.7))));
  EXPECT_TRUE(torch::equal(b.grad(), at::mul(b.detach(), lam(1e-3))));
}

// Gamma(α, 1) over shapes from below 1 to very large: sample mean and variance against α. With n
// draws, sd(mean) = sqrt(α/n) and sd(sample variance) ≈ α·sqrt((2 + 6/α)/n) (Gamma excess kurtosis
// 6/α); bounds are 5 sd. Same seed → same draws; shape or rate ≤ 0 is rejected.
TEST(GammaSampler, MomentsMatchAcrossShapes) {
  const int64_t n = 20000;
  auto g = compat::make_generator(torch::kCPU, 123);
  auto ones = torch::ones({n}, torch::kFloat64);
  for (double alpha : {0.3, 1.0, 2.5, 40.0, 50001.0}) {
    auto x = sample_gamma(torch::full({n}, alpha, torch::kFloat64), ones, g);
    EXPECT_TRUE((x > 0).all().item<bool>()) << alpha;
    const double mean = x.mean().item<double>(), var = x.var().item<double>();
    EXPECT_NEAR(mean, alpha, 5 * std::sqrt(alpha / n)) << "alpha " << alpha;
    EXPECT_NEAR(var, alpha, 5 * alpha * std::sqrt((2 + 6 / alpha) / n)) << "alpha " << alpha;
  }
  auto a = compat::make_generator(torch::kCPU, 5), b = compat::make_generator(torch::kCPU, 5);
  auto two = torch::full({10}, 2.0, torch::kFloat64), one = torch::ones({10}, torch::kFloat64);
  EXPECT_TRUE(torch::equal(sample_gamma(two, one, a), sample_gamma(two, one, b)));
  EXPECT_THROW(sample_gamma(torch::zeros({2}, torch::kFloat64), torch::ones({2}, torch::kFloat64), a),
               std::invalid_argument);
  EXPECT_THROW(sample_gamma(torch::ones({2}, torch::kFloat64), torch::zeros({2}, torch::kFloat64), a),
               std::invalid_argument);
}

// draw_on_device (what a run on an accelerator sets): the norms, the Gamma draw and the λ buffers stay
// on the parameters' device, and the host's λ is read only when asked for. On the CPU the device is the
// host, so the draws must be the host path's bit for bit (the same ops on the same generator), the λ
// tensors the kernels read (seeds()) must hold them before the host asks, and set_precisions must
// win over a draw not yet read; gibbs_step in its two halves (what a captured Gibbs step runs) is the
// same step. Two buffers (float32 and float64 groups, interleaved) take the
// buffers' index path.
TEST(Prior, DrawOnDeviceEqualsTheHostDraw) {
  auto gen = compat::make_generator(torch::kCPU, 31);
  auto w1 = at::randn({6, 5}, gen, torch::kFloat32) * 0.4;
  auto b1 = at::randn({5}, gen, torch::kFloat64) * 0.7;
  auto w2 = at::randn({3, 2}, gen, torch::kFloat32) * 1.3;
  auto make = [&] { return GaussianPrior({{"w1", {w1}}, {"b1", {b1}}, {"w2", {w2}}}, 1.0, true, 2.0, 3.0); };
  GaussianPrior host = make(), device = make(), halves = make();
  device.set_draw_on_device(true);
  halves.set_draw_on_device(true);
  EXPECT_TRUE(device.draw_on_device());
  auto gh = compat::make_generator(torch::kCPU, 41), gd = compat::make_generator(torch::kCPU, 41);
  auto g2 = compat::make_generator(torch::kCPU, 41);
  for (int i = 0; i < 5; ++i) {
    host.gibbs_step(gh);
    device.gibbs_step(gd);
    // the step in the two halves a captured Gibbs step runs (train.graph_epoch): the same draw
    halves.draw_pending(halves.gibbs_draw_on_device(g2));
    EXPECT_EQ(halves.precisions(), host.precisions()) << "step " << i;
    const auto seeds = device.seeds();  // {w1, λ_w1}, {b1, λ_b1}, {w2, λ_w2}: views of the buffers
    ASSERT_EQ(seeds.size(), 3u);
    for (size_t g = 0; g < 3; ++g) {
      // the buffer holds the draw in its own dtype before the host reads it
      const double want = host.precisions()[g];
      const double in_buffer = seeds[g].lambda.item<double>();
      if (seeds[g].lambda.scalar_type() == torch::kFloat64) EXPECT_EQ(in_buffer, want) << g;
      else EXPECT_EQ(in_buffer, static_cast<double>(static_cast<float>(want))) << g;
    }
    for (size_t g = 0; g < 3; ++g) EXPECT_EQ(device.precisions()[g], host.precisions()[g]) << "step " << i << ", group " << g;
    EXPECT_EQ(device.log_values(), host.log_values());
  }
  // a deferred evaluation copies the unread draw itself (AsyncHostRead) and hands its values back: the
  // host's λ then equals the host path's, and nothing is left to read
  host.gibbs_step(gh);
  device.gibbs_step(gd);
  ASSERT_TRUE(device.pending_draw().defined());
  AsyncHostRead read;
  read.start(device.pending_draw());
  device.set_host_draw(read.values());
  EXPECT_FALSE(device.pending_draw().defined());
  EXPECT_EQ(device.precisions(), host.precisions());
  EXPECT_THROW(device.set_host_draw({1.0}), std::logic_error);
  device.gibbs_step(gd);
  device.set_precisions({0.5, 1.5, 2.5});  // the unread draw is dropped
  EXPECT_EQ(device.precisions(), (std::vector<double>{0.5, 1.5, 2.5}));
  EXPECT_EQ(device.seeds()[1].lambda.item<double>(), 1.5);
}
