// The last hidden layer and the head in one launch (kernels/cuda_mlp/mlp_forward_head.h): the CPU reference of the
// kernel's arithmetic against exact sums and float64 formulas on every machine (and a golden value that
// only the kernel's order of summation gives), what it takes, and on a GPU the kernel against the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "compat.h"
#include "cuda_graph_util.h"
#include "kernel_cases.h"
#include "kernels/cuda_mlp/mlp_forward_head.h"

using namespace sgmcmc;
using kernels::Activation;
using kernels::MlpForwardHeadArgs;
using kernels::MlpForwardHeadShape;

// (a named namespace: the CUDA branches' compile check puts this file in one unit with the other tests)
namespace mlp_forward_head_test {

using forward_head_cases::Case;
using forward_head_cases::cases;
using forward_head_cases::copy_to;
using forward_head_cases::make;
using forward_head_cases::outputs;
using forward_head_cases::without_head;

torch::Tensor act_of(Activation act, const torch::Tensor& z) {
  switch (act) {
    case Activation::kSigmoid: return torch::sigmoid(z);
    case Activation::kRelu: return torch::relu(z);
    case Activation::kTanh: return torch::tanh(z);
    case Activation::kNone: break;
  }
  return z;
}

torch::Tensor derivative_of(Activation act, const torch::Tensor& g, const torch::Tensor& h) {
  switch (act) {
    case Activation::kSigmoid: return g * (1 - h) * h;
    case Activation::kRelu: return torch::where(h <= 0, torch::zeros_like(g), g);
    case Activation::kTanh: return g * (1 - h * h);
    case Activation::kNone: break;
  }
  return g;
}

double max_abs(const torch::Tensor& t) { return t.abs().max().item<double>(); }

}  // namespace mlp_forward_head_test

namespace mfh = mlp_forward_head_test;

// The reference against float64 formulas. The pre-activation z's sums (activation none, where h = z + b):
// within (k + 8)·u·Σ_k |a||w| + u·|z + b| of the exact value (u = 2^-24 for float32; 2^-53 for float64,
// whose comparison values carry an error of the same bound, so twice it). The head after the activation:
// g_L, g_{L−1} and nll within 1e-4 (float32) / 1e-11 (float64) of 1 + their largest magnitude — exp's and
// the sums' rounding through the softmax (1e-6 / 1e-14 measured), well below what a wrong index gives (O(1)).
TEST(MlpForwardHead, ReferenceWithinRoundingOfExactSums) {
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (const auto& c : mfh::cases()) {
      if (c.name == "FNN-800" && dt == torch::kFloat64) continue;  // its head's 169 KB: not taken
      SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64" : " float32"));
      auto t = mfh::make(c, dt, 3);
      ASSERT_TRUE(kernels::mlp_forward_head_applies(t));
      kernels::mlp_forward_head_reference(t);
      const double u = dt == torch::kFloat64 ? 2 * std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
      const auto a = t.a.to(torch::kFloat64), w = t.weight.to(torch::kFloat64), b = t.bias.to(torch::kFloat64);
      const auto z = torch::mm(a, w.t()) + b;
      const auto h = mfh::act_of(c.act, z);
      if (c.act == Activation::kNone) {
        const auto bound = (c.k + 8) * u * torch::mm(a.abs(), w.abs().t()) + u * z.abs() + 1e-300;
        const auto err = (t.h_out.to(torch::kFloat64) - z).abs();
        EXPECT_TRUE((err <= bound).all().item<bool>()) << "worst error / bound " << (err / bound).max().item<double>();
      }
      // the head from the reference's own h (its rounding is checked above)
      const auto hr = t.h_out.to(torch::kFloat64);
      const auto f = torch::mm(hr, t.out_weight.to(torch::kFloat64).t()) + t.out_bias.to(torch::kFloat64);
      const auto onehot = torch::one_hot(t.targets, c.outs).to(torch::kFloat64);
      const auto g = t.scale * (torch::softmax(f, 1) - onehot);
      const auto nll = -(torch::log_softmax(f, 1) * onehot).sum(1);
      const auto d = mfh::derivative_of(c.act, torch::mm(g, t.out_weight.to(torch::kFloat64)), hr);
      const double tol = dt == torch::kFloat64 ? 1e-11 : 1e-4;
      EXPECT_LE(mfh::max_abs(hr - h), tol * (1 + mfh::max_abs(h))) << "h";
      EXPECT_LE(mfh::max_abs(t.g_out.to(torch::kFloat64) - g), tol * (1 + mfh::max_abs(g))) << "g_L";
      EXPECT_LE(mfh::max_abs(t.g_hidden.to(torch::kFloat64) - d), tol * (1 + mfh::max_abs(d))) << "g_{L-1}";
      EXPECT_LE(mfh::max_abs(t.row_nll.to(torch::kFloat64) - nll), tol * (1 + mfh::max_abs(nll))) << "nll";
    }
}

// A hidden layer alone (no head: FNN-800's first layer in the pass) writes the same h as with the head.
TEST(MlpForwardHead, ReferenceWithoutHeadWritesTheSameH) {
  for (const auto& c : mfh::cases()) {
    SCOPED_TRACE(c.name);
    auto t = mfh::make(c, torch::kFloat32, 6);
    auto alone = mfh::without_head(t);
    ASSERT_TRUE(kernels::mlp_forward_head_applies(alone));
    kernels::mlp_forward_head_reference(t);
    kernels::mlp_forward_head_reference(alone);
    EXPECT_TRUE(torch::equal(alone.h_out, t.h_out));
  }
  auto half = mfh::without_head(mfh::make(mfh::cases()[0], torch::kFloat32, 6));
  half.targets = torch::zeros({500}, torch::kInt64);  // a head's tensor without the head
  EXPECT_FALSE(kernels::mlp_forward_head_applies(half));
}

// A golden value only the kernel's order gives: k = 144 (chunks of 128 and 16), one unit, a row with 1e8 at
// k = 0 and −1e8 at k = 128 (both in warp 0's share: its chain cancels them exactly) and 1 at k = 16 (warp
// 1's): z = 1. Summed in k order, 1e8 + 1 rounds to 1e8 in float32 and z = 0.
TEST(MlpForwardHead, ReferenceSumsEachWarpsChunksThenTheWarps) {
  auto t = mfh::make(mfh::Case{"golden", 3, 144, 1, 2, Activation::kNone}, torch::kFloat32, 4);
  t.a.zero_();
  t.a[0][0] = 1e8f, t.a[0][128] = -1e8f, t.a[0][16] = 1.0f;
  t.weight.fill_(1.0f);
  t.bias.zero_();
  kernels::mlp_forward_head_reference(t);
  EXPECT_EQ(t.h_out[0][0].item<float>(), 1.0f);
  EXPECT_EQ(t.h_out[1][0].item<float>(), 0.0f);
  float in_order = 0;  // what a plain k-order chain gives
  for (int q = 0; q < 144; ++q) in_order = std::fma(t.a[0][q].item<float>(), 1.0f, in_order);
  EXPECT_EQ(in_order, 0.0f);
}

TEST(MlpForwardHead, AppliesWhereTheKernelTakesIt) {
  const mfh::Case h1 = mfh::cases()[0];
  EXPECT_TRUE(kernels::mlp_forward_head_applies(mfh::make(h1, torch::kFloat32, 2)));
  EXPECT_TRUE(kernels::mlp_forward_head_applies(mfh::make(h1, torch::kFloat64, 2)));
  const auto bad = [&](const std::function<void(MlpForwardHeadArgs&)>& change) {
    auto t = mfh::make(h1, torch::kFloat32, 2);
    change(t);
    EXPECT_FALSE(kernels::mlp_forward_head_applies(t));
    EXPECT_THROW(kernels::mlp_forward_head_reference(t), std::invalid_argument);
  };
  bad([](MlpForwardHeadArgs& t) { t.a = t.a.narrow(0, 0, 499).contiguous(); });        // rows ≠ the outputs'
  bad([](MlpForwardHeadArgs& t) { t.weight = t.weight.to(torch::kFloat64); });          // mixed dtypes
  bad([](MlpForwardHeadArgs& t) { t.a = t.a.t().contiguous().t(); });                   // not contiguous
  bad([](MlpForwardHeadArgs& t) { t.a = t.a.to(torch::kInt32); });                      // not a float
  bad([](MlpForwardHeadArgs& t) { t.targets = t.targets.to(torch::kInt32); });          // labels not int64
  bad([](MlpForwardHeadArgs& t) { t.out_bias = t.out_bias.narrow(0, 0, 9); });
  bad([](MlpForwardHeadArgs& t) { t.row_nll = t.row_nll.narrow(0, 0, 10); });
  bad([](MlpForwardHeadArgs& t) { t.g_hidden = torch::zeros({500, 99}); });
  // the head's shared memory: FNN-800's in float64 (10 outputs over 800 units, 16 rows) is 169 KB, and 200
  // outputs over 4,000 units in float32 3.4 MB
  bad([](MlpForwardHeadArgs& t) { t = mfh::make(mfh::cases()[1], torch::kFloat64, 2); });
  bad([](MlpForwardHeadArgs& t) { t = mfh::make(mfh::Case{"wide", 20, 8, 4000, 200, Activation::kRelu}, torch::kFloat32, 2); });
  // a label outside [0, outs): the reference refuses it (the kernel asserts, as nll_loss does)
  auto t = mfh::make(h1, torch::kFloat32, 2);
  t.targets[17] = 10;
  ASSERT_TRUE(kernels::mlp_forward_head_applies(t));
  EXPECT_THROW(kernels::mlp_forward_head_reference(t), std::invalid_argument);
}

// On a GPU: the kernel against the reference (the pre-activation's sums run in the same order, so with no
// activation h is the reference's bit for bit; otherwise exp's rounding: h within 8 ulps of 1 + |h| and the
// head within 1e-5 (float32) / 1e-12 (float64) of 1 + its largest magnitude), every case and dtype; twice
// the same bits with the counts back at 0, and the layer alone (no head) the same h; a captured launch
// replayed equals the eager one.
TEST(MlpForwardHead, CudaEqualsReference) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (const auto& c : mfh::cases()) {
      if (c.name == "FNN-800" && dt == torch::kFloat64) continue;  // its head's 169 KB: not taken
      SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64" : " float32"));
      MlpForwardHeadArgs cpu = mfh::make(c, dt, 21);
      MlpForwardHeadArgs gpu = mfh::copy_to(cpu, dev);
      const MlpForwardHeadArgs start = mfh::copy_to(cpu, dev);
      kernels::mlp_forward_head_reference(cpu);
      ASSERT_TRUE(kernels::mlp_forward_head_cuda(gpu));
      const auto want = mfh::outputs(cpu), got = mfh::outputs(gpu);
      const double eps = dt == torch::kFloat64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
      const double tol = dt == torch::kFloat64 ? 1e-12 : 1e-5;
      for (size_t i = 0; i < want.size(); ++i) {
        const auto g = got[i].cpu().to(torch::kFloat64), w = want[i].to(torch::kFloat64);
        if (c.act == Activation::kNone && i == 0) {
          EXPECT_TRUE(torch::equal(got[i].cpu(), want[i])) << "h, worst " << mfh::max_abs(g - w);
        } else {
          const double bound = i == 0 ? 8 * eps * (1 + mfh::max_abs(w)) : tol * (1 + mfh::max_abs(w));
          EXPECT_LE(mfh::max_abs(g - w), bound) << "output " << i;
        }
      }
      EXPECT_EQ(gpu.counters.sum().item<int64_t>(), 0);
      {  // the layer alone: the same h as with the head
        MlpForwardHeadArgs alone = mfh::without_head(mfh::copy_to(start, dev));
        ASSERT_TRUE(kernels::mlp_forward_head_cuda(alone));
        EXPECT_TRUE(torch::equal(alone.h_out, got[0])) << "without the head";
      }
      // again: the same bits
      MlpForwardHeadArgs second = mfh::copy_to(start, dev);
      ASSERT_TRUE(kernels::mlp_forward_head_cuda(second));
      const auto s = mfh::outputs(second);
      for (size_t i = 0; i < s.size(); ++i) EXPECT_TRUE(torch::equal(s[i], got[i])) << "second call, output " << i;
      // captured, then replayed twice (the counts must be back at 0 for the second replay)
      MlpForwardHeadArgs cap = mfh::copy_to(start, dev);
      ASSERT_TRUE(test_util::capture_and_replay([&] { return kernels::mlp_forward_head_cuda(cap); }, 2));
      const auto r = mfh::outputs(cap);
      for (size_t i = 0; i < r.size(); ++i) EXPECT_TRUE(torch::equal(r[i], got[i])) << "replayed, output " << i;
    }
  // where the check declines, the kernel launches nothing
  auto wide = mfh::copy_to(mfh::make(mfh::Case{"wide", 20, 8, 4000, 200, Activation::kRelu}, torch::kFloat32, 2), dev);
  EXPECT_FALSE(kernels::mlp_forward_head_cuda(wide));
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}
