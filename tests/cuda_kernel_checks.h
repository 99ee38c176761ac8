// Checks of the stand-alone CUDA kernels against ATen's ops, shared by their GPU tests (on a CUDA device)
// and the CPU emulator's (tests/test_cuda_emu_kernels.cpp: the kernels compiled from their .cu sources,
// run on CPU tensors). `dev` is where the tensors live; the emulator runs smaller shapes, since it runs
// every CUDA thread as a fiber.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/gather_rows.h"
#include "kernels/cuda/softmax_xent_cuda.h"

namespace cuda_kernel_checks {

inline double max_abs(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// The softmax + cross-entropy kernel (kernels/cuda/softmax_xent_cuda.h) against log_softmax and nll_loss in
// float64, n rows of 10 classes: the nll to 10 tol relative, the gradient to tol · scale, the bias
// gradient (added into b0) to tol · scale · n / 100, tol = 1e-12 (float64) or 2e-6 (float32).
inline void softmax_xent_equals_aten(const torch::Device& dev, int64_t n) {
  torch::manual_seed(6);
  const int64_t k = 10;
  const double scale = 12.5;
  auto f = (torch::randn({n, k}, torch::kFloat64) * 4).to(dev);
  auto y = torch::randint(0, k, {n}, torch::kInt64).to(dev);
  auto fr = f.clone().requires_grad_(true);
  auto nll_ref = torch::nll_loss(torch::log_softmax(fr, 1), y, {}, at::Reduction::Sum);
  (nll_ref * scale).backward();
  auto g_ref = fr.grad();
  for (auto dt : {torch::kFloat64, torch::kFloat32}) {
    SCOPED_TRACE(dt == torch::kFloat64 ? "float64" : "float32");
    const double tol = dt == torch::kFloat64 ? 1e-12 : 2e-6;
    auto b0 = torch::randn({k}, torch::TensorOptions().dtype(dt).device(dev));
    auto b = b0.clone();
    auto g = torch::full({n, k}, std::nan(""), torch::TensorOptions().dtype(dt).device(dev));
    auto nll = sgmcmc::kernels::softmax_xent_backward_cuda(f.to(dt), y, scale, g, b);
    EXPECT_NEAR(nll.item<double>(), nll_ref.item<double>(), tol * nll_ref.item<double>() * 10);
    EXPECT_LT(max_abs(g, g_ref), tol * scale);
    EXPECT_LT(max_abs(b, b0.to(torch::kFloat64) + g_ref.sum(0)), tol * scale * n / 100);
  }
}

// The images' and labels' gather in one kernel (kernels/cpu/gather_rows.h) equals index_select bit for bit,
// reuses its outputs (a captured graph's addresses), and declines rows that are not whole 4-byte words;
// rows that are not whole aligned 16-byte vectors (copied word by word) too; `many` rows gathered with
// labels wider than the images' vectors (256 threads a row, a row a block: more than one grid holds when
// many > 65,535).
inline void gather_pair_equals_index_select(const torch::Device& dev, int64_t many) {
  using sgmcmc::kernels::gather_rows_pair_cuda;
  torch::manual_seed(4);
  auto x = torch::rand({1000, 1, 28, 28}, torch::TensorOptions().device(dev));
  auto y = torch::randint(0, 10, {1000}, torch::TensorOptions().dtype(torch::kInt64).device(dev));
  const auto index = [&](int64_t n) {
    return torch::randint(0, 1000, {n}, torch::TensorOptions().dtype(torch::kInt64).device(dev));
  };
  for (int64_t n : {500, 1, 0}) {
    auto idx = index(n);
    torch::Tensor xo, yo;
    ASSERT_TRUE(gather_rows_pair_cuda(xo, x, yo, y, idx));
    EXPECT_TRUE(torch::equal(xo, x.index_select(0, idx))) << n;
    EXPECT_TRUE(torch::equal(yo, y.index_select(0, idx))) << n;
    const void* kept = xo.data_ptr();
    ASSERT_TRUE(gather_rows_pair_cuda(xo, x, yo, y, idx));
    EXPECT_EQ(xo.data_ptr(), kept);
  }
  // the word-by-word copy: rows of 5 words (not whole 16-byte vectors), and rows of 4 words at an address
  // 4 bytes past a 16-byte boundary; narrow rows share a block
  const auto f32 = torch::TensorOptions().device(dev);
  const auto odd = torch::rand({1000, 5}, f32);
  const auto shifted = torch::rand({4001}, f32).narrow(0, 1, 4000).view({1000, 4});
  ASSERT_NE(reinterpret_cast<uintptr_t>(shifted.data_ptr()) % 16, 0u);
  for (const auto& a : {odd, shifted}) {
    auto idx = index(300);
    torch::Tensor ao, yo;
    ASSERT_TRUE(gather_rows_pair_cuda(ao, a, yo, y, idx));
    EXPECT_TRUE(torch::equal(ao, a.index_select(0, idx))) << a.sizes();
    EXPECT_TRUE(torch::equal(yo, y.index_select(0, idx))) << a.sizes();
  }
  {
    const auto wide = torch::randint(0, 1000, {1000, 300}, torch::TensorOptions().dtype(torch::kInt32).device(dev));
    auto idx = index(many);
    torch::Tensor ao, bo;
    ASSERT_TRUE(gather_rows_pair_cuda(ao, odd, bo, wide, idx));
    EXPECT_TRUE(torch::equal(ao, odd.index_select(0, idx)));
    EXPECT_TRUE(torch::equal(bo, wide.index_select(0, idx)));
  }
  torch::Tensor xo, yo;
  auto bytes = torch::zeros({1000, 3}, torch::TensorOptions().dtype(torch::kUInt8).device(dev));
  EXPECT_FALSE(gather_rows_pair_cuda(xo, bytes, yo, y, index(5)));
}

}  // namespace cuda_kernel_checks
