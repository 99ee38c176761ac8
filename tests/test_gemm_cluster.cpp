// The cluster products (kernels/gemm_cluster.h): the plan and the CPU reference of the kernel's
// arithmetic on every machine, the kernel against that reference bit for bit on a GPU (sm_90).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include "compat.h"
#include "kernels/gemm_cluster.h"

using namespace sgmcmc;
using kernels::GemmClusterPlan;

namespace {

struct Shape {
  int64_t m, n, k;
};

// The hidden layers' products of App. H.1 (784-100-10, batch 500) and FNN-800 (784-800-800-10, batch
// 100): the forward product of each hidden layer and its weight gradient, and FNN-800's g_1 = g_2·W_1.
const std::vector<Shape> kStepShapes = {{500, 100, 784}, {100, 784, 500}, {100, 800, 784}, {100, 800, 800},
                                        {800, 784, 100}, {800, 800, 100}};

// The float32 product's error against float64 over the bound k·2^-24·Σ_k |a_ik||b_kj| (k roundings of
// the sum in any order), plus 2^-23·(|c0| + |result|) for the accumulating add: max(|c − want| − bound).
double bound_excess(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c0, const torch::Tensor& c,
                    bool accumulate) {
  const auto a64 = a.cpu().to(torch::kFloat64), b64 = b.cpu().to(torch::kFloat64), c064 = c0.cpu().to(torch::kFloat64);
  auto want = a64.matmul(b64);
  auto bound = static_cast<double>(a.size(1)) * std::ldexp(1.0, -24) * a64.abs().matmul(b64.abs());
  if (accumulate) {
    want += c064;
    bound += std::ldexp(1.0, -23) * (c064.abs() + want.abs());
  }
  return ((c.cpu().to(torch::kFloat64) - want).abs() - bound).max().item<double>();
}

}  // namespace

// The plan on an H100's 132 SMs: every k covered once by the splits (the last one shorter, none empty),
// chunks and stages multiples of 4 (float4 loads), at most 8 splits (the portable cluster size), at least
// 32 of k a split, no more blocks than SMs where the tiles alone are fewer, and shared memory within 64 KB.
// App. H.1's forward product: 16 tiles × 8 splits of 100 (128 blocks); its weight gradient 26 × 5 of 100;
// FNN-800's first layer 26 × 5 of 160 (stages of 128 and 32); its weight gradients 169 tiles, unsplit.
TEST(GemmCluster, PlanCoversKOnceAndFillsTheSms) {
  std::vector<Shape> shapes = kStepShapes;
  for (const Shape s : {Shape{1, 1, 4}, Shape{37, 20, 12}, Shape{3, 130, 64}, Shape{64, 64, 4096}, Shape{2000, 2000, 8}})
    shapes.push_back(s);
  for (const auto& [m, n, k] : shapes) {
    SCOPED_TRACE(std::to_string(m) + " × " + std::to_string(n) + " × " + std::to_string(k));
    const auto p = kernels::gemm_cluster_plan(m, n, k, 132);
    const int64_t tiles = int64_t{p.tiles_m} * p.tiles_n;
    EXPECT_EQ(p.tiles_m, (m + 63) / 64);
    EXPECT_EQ(p.tiles_n, (n + 63) / 64);
    EXPECT_GE(p.splits, 1);
    EXPECT_LE(p.splits, GemmClusterPlan::kMaxSplits);
    EXPECT_EQ(p.k_chunk % 4, 0);
    EXPECT_LT(int64_t{p.splits - 1} * p.k_chunk, k);  // the last split is not empty
    EXPECT_GE(int64_t{p.splits} * p.k_chunk, k);      // and the splits cover k
    EXPECT_TRUE(p.splits == 1 || p.k_chunk >= 32);
    EXPECT_EQ(p.stage_k % 4, 0);
    EXPECT_LE(p.stage_k, GemmClusterPlan::kMaxStageK);
    EXPECT_EQ(p.stage_k, std::min(p.k_chunk, GemmClusterPlan::kMaxStageK));
    EXPECT_EQ(p.blocks, tiles * p.splits);
    if (tiles < 132) EXPECT_LE(p.blocks, 132);
    if (tiles >= 132) EXPECT_EQ(p.splits, 1);
    EXPECT_GE(p.smem_bytes, size_t{64} * 64 * sizeof(float));
    EXPECT_LE(p.smem_bytes, size_t{64} * 1024);
  }
  const auto h1 = kernels::gemm_cluster_plan(500, 100, 784, 132);
  EXPECT_EQ(h1.splits, 8);
  EXPECT_EQ(h1.k_chunk, 100);
  EXPECT_EQ(h1.blocks, 128);
  const auto h1_grad = kernels::gemm_cluster_plan(100, 784, 500, 132);
  EXPECT_EQ(h1_grad.splits, 5);
  EXPECT_EQ(h1_grad.k_chunk, 100);
  const auto fnn = kernels::gemm_cluster_plan(100, 800, 784, 132);
  EXPECT_EQ(fnn.splits, 5);
  EXPECT_EQ(fnn.k_chunk, 160);
  EXPECT_EQ(fnn.stage_k, 128);
  EXPECT_EQ(kernels::gemm_cluster_plan(800, 784, 100, 132).splits, 1);
}

// The reference (the kernel's order: per split a chain of fmas in k order, the splits added in order)
// against float64 within float32's bound, overwriting and accumulating, for 1, 5 and 8 splits, and an
// order that is not a plain one: the same values split 8 ways and unsplit differ in some bits (so the
// GPU test's bit-for-bit comparison checks the split as well as the sums).
TEST(GemmCluster, ReferenceWithinFloat32OfTheProduct) {
  torch::manual_seed(3);
  const auto a = torch::randn({70, 96}), b = torch::randn({96, 50}), c0 = torch::randn({70, 50});
  for (int sms : {1, 40, 132})  // 1 tile × … : splits 1, 3 (96 / 32), 3
    for (bool accumulate : {false, true}) {
      SCOPED_TRACE(std::to_string(sms) + " SMs" + (accumulate ? ", accumulating" : ""));
      const auto plan = kernels::gemm_cluster_plan(70, 50, 96, sms);
      const auto c = kernels::gemm_cluster_reference(a, b, c0, accumulate, plan);
      EXPECT_LE(bound_excess(a, b, c0, c, accumulate), 0.0);
    }
  const auto x = torch::randn({500, 784}), w = torch::randn({100, 784}), zero = torch::zeros({500, 100});
  const auto split = kernels::gemm_cluster_plan(500, 100, 784, 132), one = kernels::gemm_cluster_plan(500, 100, 784, 1);
  ASSERT_EQ(split.splits, 8);
  ASSERT_EQ(one.splits, 1);
  const auto c8 = kernels::gemm_cluster_reference(x, w.t(), zero, false, split);
  const auto c1 = kernels::gemm_cluster_reference(x, w.t(), zero, false, one);
  EXPECT_LE(bound_excess(x, w.t(), zero, c8, false), 0.0);
  EXPECT_LE(bound_excess(x, w.t(), zero, c1, false), 0.0);
  EXPECT_FALSE(torch::equal(c8, c1));
}

// The layouts it takes: App. H.1's products as the pass holds them (x·W_0ᵀ: row × column-major; g_1ᵀ·x:
// column × row-major), row × row, a narrowed output row; not: k not a multiple of 4, an operand 4 bytes off
// 16-byte alignment, float64, an output with strided columns, an operand strided along both dimensions, an
// m-contiguous operand whose m is no multiple of 4, mismatched sizes.
TEST(GemmCluster, LayoutsItTakes) {
  const auto x = torch::randn({500, 784}), w = torch::randn({100, 784}), g = torch::randn({500, 100});
  auto c = torch::zeros({500, 100}), c_grad = torch::zeros({100, 784});
  EXPECT_TRUE(kernels::gemm_cluster_layout_ok(x, w.t(), c));
  EXPECT_TRUE(kernels::gemm_cluster_layout_ok(g.t(), x, c_grad));
  EXPECT_TRUE(kernels::gemm_cluster_layout_ok(x, torch::randn({784, 100}), c));
  auto wide = torch::zeros({500, 128});
  EXPECT_TRUE(kernels::gemm_cluster_layout_ok(x, w.t(), wide.narrow(1, 0, 100)));
  EXPECT_FALSE(kernels::gemm_cluster_layout_ok(x.narrow(1, 0, 782), w.narrow(1, 0, 782).t(), c));
  const auto flat = torch::randn({1 + 500 * 784});
  EXPECT_FALSE(kernels::gemm_cluster_layout_ok(flat.narrow(0, 1, 500 * 784).view({500, 784}), w.t(), c));
  EXPECT_FALSE(kernels::gemm_cluster_layout_ok(x.to(torch::kFloat64), w.t().to(torch::kFloat64), c.to(torch::kFloat64)));
  EXPECT_FALSE(kernels::gemm_cluster_layout_ok(x, w.t(), torch::zeros({100, 500}).t()));
  EXPECT_FALSE(kernels::gemm_cluster_layout_ok(torch::randn({1000, 1568}).slice(0, 0, 1000, 2).slice(1, 0, 1568, 2), w.t(), c));
  EXPECT_FALSE(kernels::gemm_cluster_layout_ok(torch::randn({784, 98}).t(), torch::randn({784, 100}), torch::zeros({98, 100})));
  EXPECT_FALSE(kernels::gemm_cluster_layout_ok(x, w.t(), torch::zeros({500, 101})));
}

// On a GPU from sm_90 on: the kernel's c equals gemm_cluster_reference's bit for bit for every step shape
// (in the pass's layouts: x·Wᵀ row × column-major, the weight gradients gᵀ·h column × row-major) and small
// odd ones (tiles cut by m, n and the stage; column-major operands only where m and n are multiples of 4),
// overwriting and accumulating, into a narrowed output (the columns beside it untouched); a graph capture replays to the same bits; what it does not take returns
// false and leaves c as it was.
TEST(GemmCluster, CudaEqualsReferenceBitForBit) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  if (at::cuda::getCurrentDeviceProperties()->major < 9) GTEST_SKIP() << "needs sm_90 (thread-block clusters)";
  const torch::Device dev(torch::kCUDA);
  const auto opts = torch::TensorOptions().device(dev);
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  torch::manual_seed(5);
  std::vector<Shape> shapes = kStepShapes;
  for (const Shape s : {Shape{37, 20, 12}, Shape{3, 132, 260}, Shape{130, 68, 1000}, Shape{36, 132, 260}}) shapes.push_back(s);
  for (const auto& [m, n, k] : shapes)
    for (bool forward : {true, false})  // row × column-major (x·Wᵀ) or column × row-major (gᵀ·h)
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(std::to_string(m) + " × " + std::to_string(n) + " × " + std::to_string(k) +
                     (forward ? ", row × column" : ", column × row") + (accumulate ? ", accumulating" : ""));
        const auto a = forward ? torch::randn({m, k}, opts) : torch::randn({k, m}, opts).t();
        const auto b = forward ? torch::randn({n, k}, opts).t() : torch::randn({k, n}, opts);
        auto wide = torch::randn({m, n + 8}, opts);
        const auto before = wide.clone();
        auto c = wide.narrow(1, 0, n);
        if (!forward && (m % 4 != 0 || n % 4 != 0)) {  // float4s along m (n) would cross the matrix's end
          EXPECT_FALSE(kernels::gemm_cluster(a, b, c, accumulate));
          EXPECT_TRUE(torch::equal(wide, before));
          continue;
        }
        const auto want = kernels::gemm_cluster_reference(a, b, c, accumulate, kernels::gemm_cluster_plan(m, n, k, sms));
        ASSERT_TRUE(kernels::gemm_cluster(a, b, c, accumulate));
        torch::cuda::synchronize();
        EXPECT_TRUE(torch::equal(c.cpu(), want));
        EXPECT_TRUE(torch::equal(wide.narrow(1, n, 8), before.narrow(1, n, 8)));
        EXPECT_LE(bound_excess(a, b, before.narrow(1, 0, n), c, accumulate), 0.0);
      }
  {  // captured on a side stream, replayed: the eager bits
    const auto x = torch::randn({500, 784}, opts), w = torch::randn({100, 784}, opts);
    auto eager = torch::zeros({500, 100}, opts), captured = torch::zeros({500, 100}, opts);
    ASSERT_TRUE(kernels::gemm_cluster(x, w.t(), eager, false));
    at::cuda::CUDAGraph graph;
    const auto main = c10::cuda::getCurrentCUDAStream(), side = c10::cuda::getStreamFromPool();
    at::cuda::CUDAEvent queued, done;
    queued.record(main);
    queued.block(side);
    bool ok = false;
    {
      const c10::cuda::CUDAStreamGuard guard(side);
      graph.capture_begin();
      ok = kernels::gemm_cluster(x, w.t(), captured, false);
      graph.capture_end();
    }
    done.record(side);
    done.block(main);
    ASSERT_TRUE(ok);
    graph.replay();
    torch::cuda::synchronize();
    EXPECT_TRUE(torch::equal(captured, eager));
  }
  auto c = torch::zeros({500, 100}, opts);
  const auto w = torch::randn({100, 784}, opts);
  EXPECT_FALSE(kernels::gemm_cluster(torch::randn({500, 782}, opts), w.narrow(1, 0, 782).t(), c, false));
  EXPECT_FALSE(kernels::gemm_cluster(torch::randn({500, 784}), w.t().cpu(), c, false));  // operands on the CPU
  EXPECT_TRUE(torch::equal(c, torch::zeros_like(c)));
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}
