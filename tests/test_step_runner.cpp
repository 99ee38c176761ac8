// StepRunner (train/step_runner.h): the prior's gradient folded into the sampler's update
// against the seeded gradient it replaces, for every sampler with a fused step, and where the fold
// does not apply.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "compat.h"
#include "core/kernel_settings.h"
#include "core/option_map.h"
#include "kernels/update/fused_update.h"
#include "models/mlp.h"
#include "priors/gaussian_prior.h"
#include "samplers/registry.h"
#include "train/step_runner.h"

using namespace sgmcmc;

namespace {

constexpr int64_t kExamples = 240, kBatch = 60;

// A 20-16-8-3 sigmoid MLP on random data with SGHMC-style options: the same model, sampler seed and
// prior in every instance, so two instances differ only in the fold.
struct TrainSetup {
  std::unique_ptr<Mlp> model;
  SamplerPtr sampler;
  std::unique_ptr<GaussianPrior> prior;
  Batch train;
  std::unique_ptr<LossMeter> loss;
  std::unique_ptr<StepRunner> runner;

  // `graph_steps` ≥ 1: the step captured (train.graph; on the CPU its body runs every step), in blocks of
  // that many steps beyond 1.
  TrainSetup(const std::string& sampler_name, const std::vector<std::pair<std::string, std::string>>& options,
             int64_t graph_steps = 0) {
    auto init = compat::make_generator(torch::kCPU, 11);
    MlpOptions mo;
    mo.inputs = 20;
    mo.hidden = {16, 8};
    mo.outputs = 3;
    model = std::make_unique<Mlp>(mo, init);
    train.inputs = torch::randn({kExamples, 20}, compat::make_generator(torch::kCPU, 12));
    train.targets = torch::randint(0, 3, {kExamples}, compat::make_generator(torch::kCPU, 13));
    OptionMap so("sampler");
    so.set("lr", "1e-3");
    for (const auto& [k, v] : options) so.set(k, v);
    sampler = make_sampler(sampler_name, {ParamGroup(model->parameters())}, so, compat::make_generator(torch::kCPU, 14));
    if (graph_steps > 0) sampler->set_step_mode(Sampler::StepMode::kPrepare);  // as make_run_setup does
    prior = std::make_unique<GaussianPrior>(make_prior_groups(*model, "per_tensor"), 2.0, false, 1.0, 1.0);
    loss = std::make_unique<LossMeter>(torch::kCPU);
    runner = std::make_unique<StepRunner>(*model, *sampler, *prior, train, double(kExamples) / kBatch, kBatch, *loss,
                                          graph_steps > 0, torch::kCPU, compat::make_generator(torch::kCPU, 15),
                                          std::max<int64_t>(graph_steps, 1));
  }

  // `count` steps as blocks of graph_steps (step_block; λ changes before the last block).
  void blocks(int count) {
    auto order = torch::randperm(kExamples, compat::make_generator(torch::kCPU, 16));
    const int64_t k = runner->block_steps();
    for (int b = 0; b < count; ++b) {
      if (b + 1 == count) prior->set_precisions(std::vector<double>(prior->groups().size(), 0.75));
      auto idx = order.index({torch::arange(b * k * kBatch, (b + 1) * k * kBatch) % kExamples});
      runner->step_block(idx, [](int64_t) {});
    }
  }

  // `steps` steps over fixed minibatches; λ changes halfway (as a Gibbs step would change it).
  void steps(int count) {
    auto order = torch::randperm(kExamples, compat::make_generator(torch::kCPU, 16));
    for (int t = 0; t < count; ++t) {
      if (t == count / 2) {
        std::vector<double> lambda(prior->groups().size());
        for (size_t k = 0; k < lambda.size(); ++k) lambda[k] = 0.5 + static_cast<double>(k);
        prior->set_precisions(lambda);
      }
      runner->step(order.narrow(0, (t % (kExamples / kBatch)) * kBatch, kBatch));
    }
  }
};

struct SamplerCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> options;
};

// The fold and the seed sum the same terms (λθ and the likelihood's per-example contributions) in a
// different order: the bias gradients are λθ + Σ_i g_i against Σ_i g_i + λθ, so the two gradients
// differ by float rounding, a few ulps of their size (ε = 6e-8). Over 20 steps of lr 1e-3 the
// parameters then differ by far less than 1e-6 relative; allclose at rtol 1e-5 / atol 1e-6 is a
// bound that no real difference (a missing or doubled λθ, a stale gradient, the wrong λ after it
// changed: ≥ 1e-4 per step here) passes.
TEST(StepRunner, PriorFoldEqualsSeededGradient) {
  const std::vector<SamplerCase> cases = {{"sghmc", {{"alpha", "0.1"}}},
                                          {"sghmc", {{"alpha", "0.1"}, {"integrator", "ssi"}}},
                                          {"sgld", {}},
                                          {"psgld", {}},
                                          {"msgnht", {}},
                                          {"santa", {{"burnin", "10"}}}};
  for (const auto& c : cases) {
    TrainSetup folded(c.name, c.options), seeded(c.name, c.options);
    seeded.runner->use_prior_fold(false);
    EXPECT_TRUE(folded.runner->prior_folded()) << c.name;
    EXPECT_FALSE(seeded.runner->prior_folded()) << c.name;
    folded.steps(20);
    seeded.steps(20);
    EXPECT_NEAR(folded.loss->take_mean(), seeded.loss->take_mean(), 1e-5) << c.name;
    const auto a = folded.model->parameters(), b = seeded.model->parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6))
          << c.name << " parameter " << i << ": max |Δ| " << (a[i] - b[i]).abs().max().item<double>();
      EXPECT_FALSE(torch::equal(a[i], TrainSetup(c.name, c.options).model->parameters()[i])) << c.name << ": did not move";
    }
  }
}

// Without λθ folded in, the fold's run would not match: the test above can fail.
TEST(StepRunner, MissingPriorWouldBeSeen) {
  TrainSetup folded("sghmc", {{"alpha", "0.1"}}), unregularized("sghmc", {{"alpha", "0.1"}});
  unregularized.prior->set_precisions(std::vector<double>(unregularized.prior->groups().size(), 0.0));
  folded.prior->set_precisions(std::vector<double>(folded.prior->groups().size(), 2.0));
  for (int t = 0; t < 5; ++t) {
    auto idx = torch::arange(t * kBatch % kExamples, t * kBatch % kExamples + kBatch);
    folded.runner->step(idx);
    unregularized.runner->step(idx);
  }
  const auto a = folded.model->parameters(), b = unregularized.model->parameters();
  EXPECT_FALSE(torch::allclose(a[0], b[0], 1e-5, 1e-6));
}

// Where the fold does not apply, the runner seeds as before: a sampler without a fused step (an
// optimizer, SGHMC estimating B̂ from the Fisher), the autograd backward, fused kernels off.
TEST(StepRunner, PriorFoldOnlyWhereItApplies) {
  {
    TrainSetup r("sgd", {});
    EXPECT_FALSE(r.runner->prior_folded());
  }
  {
    TrainSetup r("sghmc", {{"alpha", "0.1"}, {"noise_estimate", "fisher"}});
    EXPECT_FALSE(r.runner->prior_folded());
  }
  {
    TrainSetup r("sghmc", {{"alpha", "0.1"}});
    r.runner->use_model_backward(false);
    EXPECT_FALSE(r.runner->prior_folded());
  }
  {
    TrainSetup r("sghmc", {{"alpha", "0.1"}});
    r.sampler->set_fused(false);
    EXPECT_FALSE(r.runner->prior_folded());
  }
}

// The sampler's other paths take a pending fold into .grad before their update (Sampler::
// fold_prior_into_next_step): the reference path (fused off) and a sampler without a fused step.
TEST(StepRunner, SamplerAppliesAFoldOnEveryPath) {
  for (const std::string name : {"sghmc", "sgd"}) {
    for (bool fused : {true, false}) {
      auto make = [&](at::Generator gen, torch::Tensor& w) {
        w = torch::linspace(-1, 1, 50).requires_grad_(true);
        OptionMap so("sampler");
        so.set("lr", "1e-2");
        auto s = make_sampler(name, {ParamGroup({w})}, so, gen);
        s->set_fused(fused);
        return s;
      };
      torch::Tensor w1, w2;
      auto s1 = make(compat::make_generator(torch::kCPU, 3), w1);
      auto s2 = make(compat::make_generator(torch::kCPU, 3), w2);
      const auto g = torch::linspace(0, 2, 50);
      const kernels::PriorFold fold = {{5, 20, 3.0}, {30, 20, 0.25}};
      s1->step([&] {
        w1.mutable_grad().copy_(g);
        s1->fold_prior_into_next_step({fold});
        return torch::zeros({});
      });
      s2->step([&] {
        auto full = g.clone();
        for (const auto& seg : fold) full.narrow(0, seg.begin, seg.n).add_(w2.detach().narrow(0, seg.begin, seg.n).mul(seg.lambda));
        w2.mutable_grad().copy_(full);
        return torch::zeros({});
      });
      EXPECT_TRUE(torch::allclose(w1, w2, 1e-6, 1e-7)) << name << (fused ? " fused" : " reference")
                                                          << ": max |Δ| " << (w1 - w2).abs().max().item<double>();
    }
  }
}

// The loss sink (Model::set_loss_sink): the model's backward pass adds each step's weighted nll into
// the LossMeter's sum itself. On the CPU the sink is off by default (the meter adds on the host), so
// here it is turned on: both ways the meter sees the same per-example losses, added in the same order
// as doubles (the sink's add_ widens the float nll as the host add does), so the sums agree to a
// few ulps of double; 1e-12 relative leaves room for that and catches a missing or doubled step
// (1/20 of the sum). Every path counts each step once: the model's (the seed and the fold), the
// autograd fallback, a gradient reduction (sink off), and HMC, whose leapfrog calls the closure more
// than once a step (sink off).
TEST(StepRunner, LossSinkCountsEveryStepOnce) {
  for (bool fold : {true, false})
    for (bool model_backward : {true, false}) {
      SCOPED_TRACE(std::string(fold ? "fold" : "seed") + (model_backward ? ", model backward" : ", autograd"));
      TrainSetup host("sghmc", {{"alpha", "0.1"}}), sink("sghmc", {{"alpha", "0.1"}});
      for (auto* t : {&host, &sink}) {
        t->runner->use_prior_fold(fold);
        t->runner->use_model_backward(model_backward);
      }
      sink.runner->use_loss_sink(true);
      host.steps(20);
      sink.steps(20);
      int64_t n_host = 0, n_sink = 0;
      const double a = host.loss->take_sum(n_host).item<double>(), b = sink.loss->take_sum(n_sink).item<double>();
      EXPECT_EQ(n_host, 20);
      EXPECT_EQ(n_sink, 20);
      EXPECT_GT(a, 0);
      EXPECT_NEAR(b, a, 1e-12 * a);
    }
  // a gradient reduction takes the sink back: the reduced nll (here doubled) is what counts
  TrainSetup reduced("sghmc", {{"alpha", "0.1"}}), plain("sghmc", {{"alpha", "0.1"}});
  reduced.runner->use_loss_sink(true);
  reduced.runner->set_gradient_reduction([](torch::Tensor& nll) { nll = nll * 2; });
  reduced.runner->use_loss_sink(true);  // refused while the reduction is set
  plain.runner->set_gradient_reduction([](torch::Tensor& nll) { nll = nll * 2; });
  reduced.steps(10);
  plain.steps(10);
  EXPECT_DOUBLE_EQ(reduced.loss->take_mean(), plain.loss->take_mean());
}

TEST(StepRunner, LossSinkOffForSamplersThatCallTheClosureMoreThanOnce) {
  TrainSetup hmc("hmc", {{"leapfrog_steps", "3"}}), ref("hmc", {{"leapfrog_steps", "3"}});
  hmc.runner->use_loss_sink(true);
  hmc.steps(6);
  ref.steps(6);
  EXPECT_DOUBLE_EQ(hmc.loss->take_mean(), ref.loss->take_mean());
}

// The model's side: a sink receives weight · nll of every defined nll the backward passes return.
TEST(StepRunner, MlpAddsIntoItsLossSink) {
  TrainSetup t("sgld", {});
  Batch b{t.train.inputs.narrow(0, 0, kBatch), t.train.targets.narrow(0, 0, kBatch)};
  for (auto& p : t.model->parameters()) p.mutable_grad() = torch::zeros_like(p);
  auto sum = torch::zeros({}, torch::kFloat64);
  ASSERT_TRUE(t.model->set_loss_sink(sum, 0.25));
  const double n1 = t.model->nll_backward_overwrite(b, 4.0).item<double>();
  const double n2 = t.model->nll_backward(b, 4.0).item<double>();
  EXPECT_NEAR(sum.item<double>(), 0.25 * (n1 + n2), 1e-12 * (n1 + n2));
  t.model->set_loss_sink({}, 0.25);
  t.model->nll_backward(b, 4.0);
  EXPECT_NEAR(sum.item<double>(), 0.25 * (n1 + n2), 1e-12 * (n1 + n2));
}

}  // namespace
