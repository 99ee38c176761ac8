// The hidden layers' weight gradients as the pass's own tiled launch (kernels/weight_grad.h): the CPU
// reference of the kernel's arithmetic against exact sums on every machine (and a golden value only the
// kernel's order of summation gives), what it takes, and on a GPU the kernel against the reference bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include "compat.h"
#include "kernels/weight_grad.h"

using namespace sgmcmc;

// (a named namespace: the CUDA branches' compile check puts this file in one unit with the other tests)
namespace weight_grad_test {

struct Case {
  std::string name;
  int64_t r, m, n;
};

// App. H.1's ∇W_0 (500 rows, 100 × 784: 4 chunks, the last of 116 rows; 7 × 25 tiles, the last ones
// partial), FNN-800's ∇W_1 (100 rows, 800 × 800: one chunk, warps past row 100 reading zeros), and odd
// shapes (fewer rows than a warp's share, a chunk and one row).
std::vector<Case> cases() {
  return {{"H.1", 500, 100, 784}, {"FNN-800", 100, 800, 800}, {"odd", 5, 3, 7}, {"129 rows", 129, 17, 33}};
}

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
        ASSERT_TRUE(kernels::weight_grad_applies(a, b, out));
        kernels::weight_grad_reference(a, b, out, accumulate);
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
  kernels::weight_grad_reference(a, b, c, false);
  EXPECT_EQ(c.item<float>(), 1.0f);
  float in_order = 0;
  for (int q = 0; q < 144; ++q) in_order = std::fma(a[q][0].item<float>(), 1.0f, in_order);
  EXPECT_EQ(in_order, 0.0f);
}

TEST(WeightGrad, AppliesWhereTheKernelTakesIt) {
  const auto a = torch::randn({50, 10}), b = torch::randn({50, 20});
  auto c = torch::zeros({10, 20});
  EXPECT_TRUE(kernels::weight_grad_applies(a, b, c));
  EXPECT_FALSE(kernels::weight_grad_applies(a.narrow(0, 0, 49).contiguous(), b, c));  // rows differ
  EXPECT_FALSE(kernels::weight_grad_applies(a, b, torch::zeros({10, 21})));
  EXPECT_FALSE(kernels::weight_grad_applies(a.t().contiguous().t(), b, c));             // not contiguous
  EXPECT_FALSE(kernels::weight_grad_applies(a.to(torch::kFloat64), b, c));              // mixed dtypes
  EXPECT_FALSE(kernels::weight_grad_applies(a.to(torch::kInt32), b.to(torch::kInt32), c.to(torch::kInt32)));
  EXPECT_FALSE(kernels::weight_grad_applies(torch::zeros({0, 10}), torch::zeros({0, 20}), c));  // no rows
  EXPECT_THROW(kernels::weight_grad_reference(a, b.narrow(1, 0, 19).contiguous(), c, false), std::invalid_argument);
}

// On a GPU: the kernel against the reference bit for bit (the same fma chains and warp order), every case,
// dtype and mode; a captured launch replayed equals the eager one.
TEST(WeightGrad, CudaEqualsReferenceBitForBit) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (const auto& c : wgt::cases())
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64" : " float32") + (accumulate ? ", accumulating" : ""));
        torch::manual_seed(9);
        const auto o = torch::TensorOptions().dtype(dt);
        const auto a = torch::randn({c.r, c.m}, o), b = torch::rand({c.r, c.n}, o);
        const auto start = torch::randn({c.m, c.n}, o);
        auto want = start.clone();
        kernels::weight_grad_reference(a, b, want, accumulate);
        const auto ag = a.to(dev), bg = b.to(dev);
        auto got = start.to(dev);
        ASSERT_TRUE(kernels::weight_grad_cuda(ag, bg, got, accumulate));
        EXPECT_TRUE(torch::equal(got.cpu(), want)) << "worst " << (got.cpu() - want).abs().max().item<double>();
        auto cap = start.to(dev);
        at::cuda::CUDAGraph graph;
        const auto stream = c10::cuda::getStreamFromPool();
        {
          c10::cuda::CUDAStreamGuard guard(stream);
          graph.capture_begin();
          const bool launched = kernels::weight_grad_cuda(ag, bg, cap, accumulate);
          graph.capture_end();
          ASSERT_TRUE(launched);
        }
        graph.replay();
        torch::cuda::synchronize();
        EXPECT_TRUE(torch::equal(cap.cpu(), want)) << "replayed";
      }
  auto c = torch::zeros({3, 4}, torch::Device(dev));
  EXPECT_FALSE(kernels::weight_grad_cuda(torch::zeros({5, 3}, dev), torch::zeros({6, 4}, dev), c, false));
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}
