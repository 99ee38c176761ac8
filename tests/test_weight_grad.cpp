// The hidden layers' weight gradients as the pass's own tiled launch (kernels/cuda_mlp/weight_grad.h): the CPU
// reference of the kernel's arithmetic against exact sums on every machine (and a golden value only the
// kernel's order of summation gives), what it takes, and on a GPU the kernel against the reference bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compat.h"
#include "cuda_graph_util.h"
#include "kernel_cases.h"
#include "kernels/cuda_mlp/weight_grad.h"

using namespace sgmcmc;

// (a named namespace: the CUDA branches' compile check puts this file in one unit with the other tests)
namespace weight_grad_test {

using weight_grad_cases::Case;
using weight_grad_cases::cases;
using weight_grad_cases::copy_to;
using weight_grad_cases::launch;
using weight_grad_cases::outputs;

}  // namespace weight_grad_test

namespace wgt = weight_grad_test;

// The reference against float64 sums: within (r + 8)·u·Σ_i |a_i||b_i| (u = 2^-24 float32; 2^-53 float64,
// doubled: the comparison's own error), overwriting and accumulating (one more rounding of |C + z|).
TEST(WeightGrad, ReferenceWithinRoundingOfExactSums) {
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (const auto& c : wgt::cases())
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64" : " float32") + (accumulate ? ", accumulating" : ""));
        torch::manual_seed(7);
        const auto o = torch::TensorOptions().dtype(dt);
        const auto a = torch::randn({c.r, c.m}, o), b = torch::rand({c.r, c.n}, o);
        auto out = torch::randn({c.m, c.n}, o);
        const auto start = out.to(torch::kFloat64, false, true);  // a copy, float64 too
        ASSERT_TRUE(kernels::weight_grad_applies(kernels::weight_grad_of(a, b, out, accumulate)));
        kernels::weight_grad_reference(kernels::weight_grad_of(a, b, out, accumulate));
        const double u = dt == torch::kFloat64 ? 2 * std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
        const auto a64 = a.to(torch::kFloat64), b64 = b.to(torch::kFloat64);
        auto want = torch::mm(a64.t(), b64);
        if (accumulate) want = want + start;
        const auto bound = (c.r + 8) * u * torch::mm(a64.abs().t(), b64.abs()) + u * want.abs() + 1e-300;
        const auto err = (out.to(torch::kFloat64) - want).abs();
        EXPECT_TRUE((err <= bound).all().item<bool>()) << "worst error / bound " << (err / bound).max().item<double>();
      }
}

// A golden value only the kernel's order gives: one output over 144 rows (chunks of 128 and 16), 1e8 at row
// 0 and −1e8 at row 128 (both warp 0's: its chain cancels them exactly) and 1 at row 16 (warp 1's): 1.
// Summed in row order, 1e8 + 1 rounds to 1e8 in float32 and the sum is 0.
TEST(WeightGrad, ReferenceSumsEachWarpsChunksThenTheWarps) {
  auto a = torch::zeros({144, 1}), b = torch::ones({144, 1}), c = torch::full({1, 1}, 5.0f);
  a[0][0] = 1e8f, a[128][0] = -1e8f, a[16][0] = 1.0f;
  kernels::weight_grad_reference(kernels::weight_grad_of(a, b, c, false));
  EXPECT_EQ(c.item<float>(), 1.0f);
  float in_order = 0;
  for (int q = 0; q < 144; ++q) in_order = std::fma(a[q][0].item<float>(), 1.0f, in_order);
  EXPECT_EQ(in_order, 0.0f);
}

TEST(WeightGrad, AppliesWhereTheKernelTakesIt) {
  using kernels::weight_grad_applies;
  using kernels::weight_grad_of;
  const auto a = torch::randn({50, 10}), b = torch::randn({50, 20});
  auto c = torch::zeros({10, 20});
  EXPECT_TRUE(weight_grad_applies(weight_grad_of(a, b, c, false)));
  EXPECT_FALSE(weight_grad_applies(weight_grad_of(a.narrow(0, 0, 49).contiguous(), b, c, false)));  // rows differ
  EXPECT_FALSE(weight_grad_applies(weight_grad_of(a, b, torch::zeros({10, 21}), false)));
  EXPECT_FALSE(weight_grad_applies(weight_grad_of(a.t().contiguous().t(), b, c, false)));  // not contiguous
  EXPECT_FALSE(weight_grad_applies(weight_grad_of(a.to(torch::kFloat64), b, c, false)));   // mixed dtypes
  EXPECT_FALSE(weight_grad_applies(weight_grad_of(a.to(torch::kInt32), b.to(torch::kInt32), c.to(torch::kInt32), false)));
  EXPECT_FALSE(weight_grad_applies(weight_grad_of(torch::zeros({0, 10}), torch::zeros({0, 20}), c, false)));  // no rows
  EXPECT_THROW(kernels::weight_grad_reference(weight_grad_of(a, b.narrow(1, 0, 19).contiguous(), c, false)),
               std::invalid_argument);
  // the launch's other parts: a bias of m, the prior all or none and only overwriting, the nll's sum
  auto t = wgt::launch(torch::kFloat32, true, true, 3);
  EXPECT_TRUE(weight_grad_applies(t));
  const auto bad = [&](const std::function<void(kernels::WeightGradLaunch&)>& change) {
    auto u = wgt::launch(torch::kFloat32, true, true, 3);
    change(u);
    EXPECT_FALSE(weight_grad_applies(u));
  };
  bad([](kernels::WeightGradLaunch& u) { u.accumulate = true; });  // a prior while accumulating
  bad([](kernels::WeightGradLaunch& u) { u.problems[0].bias_lambda = torch::Tensor(); });
  bad([](kernels::WeightGradLaunch& u) { u.problems[1].bias_grad = torch::zeros({7}); });
  bad([](kernels::WeightGradLaunch& u) { u.nll = torch::Tensor(); });
  bad([](kernels::WeightGradLaunch& u) { u.loss_sum = torch::zeros({}); });  // float32: the trainer's is float64
  bad([](kernels::WeightGradLaunch& u) { u.row_nll = u.row_nll.narrow(0, 0, 10); });
  bad([](kernels::WeightGradLaunch& u) { u.problems.resize(5, u.problems[0]); });
}

// The whole launch (H.1's two layers: ∇W_0 with its bias over 500 rows and the output layer's, with the prior's
// λ or accumulating, and the nll with the trainer's loss sum) against float64: each sum within the bound
// above (the prior's fma one more rounding of |C|), the nll within r·u·Σ|nll_i|, the loss sum exactly
// loss_sum + weight·nll.
TEST(WeightGrad, ReferenceLaunchWithinRoundingOfExactSums) {
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (bool prior : {true, false}) {
      SCOPED_TRACE(std::string(dt == torch::kFloat64 ? "float64" : "float32") + (prior ? ", prior" : ", accumulating"));
      auto t = wgt::launch(dt, prior, true, 5);
      std::vector<torch::Tensor> start;
      for (const auto& q : t.problems)  // copies, float64 too
        start.push_back(q.c.to(torch::kFloat64, false, true)), start.push_back(q.bias_grad.to(torch::kFloat64, false, true));
      const double loss0 = t.loss_sum.item<double>();
      kernels::weight_grad_reference(t);
      const double u = dt == torch::kFloat64 ? 2 * std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
      for (size_t p = 0; p < t.problems.size(); ++p) {
        const auto& q = t.problems[p];
        const auto a = q.a.to(torch::kFloat64), b = q.b.to(torch::kFloat64);
        const int64_t r = a.size(0);
        auto want = torch::mm(a.t(), b), want_e = a.sum(0);
        if (prior) {
          want = want + q.weight_lambda.item<double>() * q.weight.to(torch::kFloat64);
          want_e = want_e + q.bias_lambda.item<double>() * q.bias.to(torch::kFloat64);
        } else {
          want = want + start[2 * p], want_e = want_e + start[2 * p + 1];
        }
        const auto bound = (r + 8) * u * torch::mm(a.abs().t(), b.abs()) + 2 * u * want.abs() + 1e-300;
        const auto bound_e = (r + 8) * u * a.abs().sum(0) + 2 * u * want_e.abs() + 1e-300;
        EXPECT_TRUE(((q.c.to(torch::kFloat64) - want).abs() <= bound).all().item<bool>()) << "problem " << p;
        EXPECT_TRUE(((q.bias_grad.to(torch::kFloat64) - want_e).abs() <= bound_e).all().item<bool>()) << "bias " << p;
      }
      const auto nll64 = t.row_nll.to(torch::kFloat64);
      EXPECT_LE(std::abs(t.nll.item<double>() - nll64.sum().item<double>()), 500 * u * nll64.abs().sum().item<double>());
      EXPECT_EQ(t.loss_sum.item<double>(), loss0 + 0.25 * t.nll.item<double>());
    }
}

// On a GPU: the kernel against the reference bit for bit (the same fma chains and warp order, the same nll
// tree), every case, dtype and mode, and the whole backward launch; a captured launch replayed equals the
// eager one.
TEST(WeightGrad, CudaEqualsReferenceBitForBit) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (const auto& c : wgt::cases())
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64" : " float32") + (accumulate ? ", accumulating" : ""));
        const auto [a, b, start, want] = weight_grad_cases::product(c, dt, accumulate);
        const auto ag = a.to(dev), bg = b.to(dev);
        auto got = start.to(dev);
        ASSERT_TRUE(kernels::weight_grad_cuda(kernels::weight_grad_of(ag, bg, got, accumulate)));
        EXPECT_TRUE(torch::equal(got.cpu(), want)) << "worst " << (got.cpu() - want).abs().max().item<double>();
        auto cap = start.to(dev);
        ASSERT_TRUE(test_util::capture_and_replay(
            [&] { return kernels::weight_grad_cuda(kernels::weight_grad_of(ag, bg, cap, accumulate)); }));
        EXPECT_TRUE(torch::equal(cap.cpu(), want)) << "replayed";
      }
  // the whole launch: both layers with their biases, the prior or accumulating, the nll and the loss sum
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (bool prior : {true, false}) {
      SCOPED_TRACE(std::string(dt == torch::kFloat64 ? "launch, float64" : "launch, float32") + (prior ? ", prior" : ""));
      const auto cpu = wgt::launch(dt, prior, true, 13);
      const auto gpu = wgt::copy_to(cpu, dev), cap = wgt::copy_to(cpu, dev);
      kernels::weight_grad_reference(cpu);
      ASSERT_TRUE(kernels::weight_grad_cuda(gpu));
      const auto w = wgt::outputs(cpu), g = wgt::outputs(gpu);
      for (size_t i = 0; i < w.size(); ++i) EXPECT_TRUE(torch::equal(g[i].cpu(), w[i])) << "output " << i;
      ASSERT_TRUE(test_util::capture_and_replay([&] { return kernels::weight_grad_cuda(cap); }));
      const auto r = wgt::outputs(cap);
      for (size_t i = 0; i < w.size(); ++i) EXPECT_TRUE(torch::equal(r[i].cpu(), w[i])) << "replayed, output " << i;
    }
  auto c = torch::zeros({3, 4}, torch::Device(dev));
  EXPECT_FALSE(
      kernels::weight_grad_cuda(kernels::weight_grad_of(torch::zeros({5, 3}, dev), torch::zeros({6, 4}, dev), c, false)));
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}
