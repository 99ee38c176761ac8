// The cuBLAS route's last launch as column blocks (kernels/cuda_mlp/mlp_tail.h): the CPU reference of the kernel's
// arithmetic against the exact sums on every machine (and a golden value that only the kernel's order of
// summation gives), what it takes, and on a GPU the kernel against the reference bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "compat.h"
#include "cuda_graph_util.h"
#include "kernels/cuda_mlp/mlp_tail.h"

using namespace sgmcmc;
using kernels::MlpLayerTensors;
using kernels::MlpTailArgs;

// (a named namespace: the CUDA branches' compile check puts this file in one unit with test_mlp_fused.cpp)
namespace mlp_tail_test {

struct Case {
  std::string name;
  int64_t n, outs, hdim;
  std::vector<std::pair<int64_t, int64_t>> hidden;  // each hidden layer's (out, in)
};

// App. H.1 (784-100-10, batch 500), FNN-800 (784-800-800-10, batch 100), an odd shape (no width a
// multiple of 8, fewer rows than row groups) and 12 outputs (the kernel's largest bucket of m, in float64
// the largest reduction within 48 KB; rows in two batches a thread, widths not a multiple of 8).
std::vector<Case> cases() {
  return {{"H.1", 500, 10, 100, {{100, 784}}},
          {"FNN-800", 100, 10, 800, {{800, 784}, {800, 800}}},
          {"odd", 37, 3, 45, {{13, 7}, {45, 13}}},
          {"12 outputs", 300, 12, 21, {{19, 5}}}};
}

MlpLayerTensors layer(int64_t out, int64_t in, const torch::TensorOptions& o, bool priors) {
  MlpLayerTensors l;
  l.weight = torch::randn({out, in}, o), l.bias = torch::randn({out}, o);
  l.weight_grad = torch::randn({out, in}, o), l.bias_grad = torch::randn({out}, o);
  if (priors) l.weight_lambda = torch::rand({}, o) * 3, l.bias_lambda = torch::rand({}, o) * 3;
  return l;
}

// Random inputs on the CPU; the gradients start random (what accumulating adds to, what the products wrote).
MlpTailArgs make(const Case& c, torch::Dtype dt, bool priors, bool accumulate, bool loss, uint64_t seed) {
  torch::manual_seed(seed);
  const auto o = torch::TensorOptions().dtype(dt);
  MlpTailArgs t;
  t.g_out = torch::randn({c.n, c.outs}, o);
  t.h_last = torch::rand({c.n, c.hdim}, o);
  t.out = layer(c.outs, c.hdim, o, priors);
  for (const auto& [out, in] : c.hidden) {
    t.g_hidden.push_back(torch::randn({c.n, out}, o));
    t.hidden.push_back(layer(out, in, o, priors));
  }
  t.accumulate = accumulate;
  t.row_nll = torch::rand({c.n}, o) * 2;
  if (loss) t.loss_sum = torch::full({}, 1.5, torch::TensorOptions().dtype(torch::kFloat64)), t.loss_weight = 0.25;
  return t;
}

torch::Tensor copy_to(const torch::Tensor& t, const torch::Device& d) {
  return t.defined() ? t.to(d, /*non_blocking=*/false, /*copy=*/true) : t;
}

MlpLayerTensors copy_to(const MlpLayerTensors& l, const torch::Device& d) {
  MlpLayerTensors c;
  c.weight = copy_to(l.weight, d), c.bias = copy_to(l.bias, d), c.weight_grad = copy_to(l.weight_grad, d);
  c.bias_grad = copy_to(l.bias_grad, d), c.weight_lambda = copy_to(l.weight_lambda, d);
  c.bias_lambda = copy_to(l.bias_lambda, d);
  return c;
}

MlpTailArgs copy_to(const MlpTailArgs& t, const torch::Device& d) {
  MlpTailArgs c = t;
  c.g_out = copy_to(t.g_out, d), c.h_last = copy_to(t.h_last, d), c.out = copy_to(t.out, d);
  for (size_t l = 0; l < t.hidden.size(); ++l) c.g_hidden[l] = copy_to(t.g_hidden[l], d), c.hidden[l] = copy_to(t.hidden[l], d);
  for (auto& p : c.weight_grad_parts) p = copy_to(p, d);
  c.row_nll = copy_to(t.row_nll, d), c.loss_sum = copy_to(t.loss_sum, d);
  return c;
}

// Every output of the launch, in one order: the output layer's ∇W and ∇b, each hidden layer's ∇b and ∇W,
// the loss sum.
std::vector<torch::Tensor> outputs(const MlpTailArgs& t) {
  std::vector<torch::Tensor> v = {t.out.weight_grad, t.out.bias_grad};
  for (const auto& l : t.hidden) v.push_back(l.bias_grad), v.push_back(l.weight_grad);
  if (t.loss_sum.defined()) v.push_back(t.loss_sum);
  return v;
}

// max(|got − want| − bound) in float64, the bound n·2^-24·Σ|terms| of a float32 sum of n terms (any order)
// plus 2^-23·(|want| + |start|) for the last fma or add onto it (2^-52 and 2^-51 in float64).
double excess(const torch::Tensor& got, const torch::Tensor& want, const torch::Tensor& abs_terms, int64_t n,
              const torch::Tensor& start, torch::Dtype dt) {
  const double u = dt == torch::kFloat64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const auto g = got.to(torch::kFloat64).reshape(want.sizes());
  auto bound = static_cast<double>(n) * u * abs_terms + 2 * u * (want.abs() + start.abs());
  return ((g - want).abs() - bound).max().item<double>();
}

}  // namespace mlp_tail_test
namespace mlt = mlp_tail_test;

// The reference against the exact sums (float64 of the inputs): within n·2^-24·Σ|a||b| plus one rounding
// of the epilogue's fma or add, for every case, overwriting with and without the prior's precisions,
// accumulating; the nll and the loss sum likewise.
TEST(MlpTail, ReferenceWithinRoundingOfTheSums) {
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (const auto& c : mlt::cases())
      for (int mode = 0; mode < 3; ++mode) {  // overwrite, overwrite with priors, accumulate
        SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64, mode " : " float32, mode ") + std::to_string(mode));
        const bool priors = mode == 1, accumulate = mode == 2;
        MlpTailArgs t = mlt::make(c, dt, priors, accumulate, true, 11 + mode);
        const MlpTailArgs start = mlt::copy_to(t, torch::kCPU);
        ASSERT_TRUE(kernels::mlp_tail_applies(t));
        const auto nll = kernels::mlp_tail_reference(t);
        const auto d = [](const torch::Tensor& x) { return x.to(torch::kFloat64); };
        const auto a = d(t.g_out), h = d(t.h_last);
        // each sum, its Σ|terms| and what the epilogue adds it to (λ·θ, the start, or nothing)
        const auto onto = [&](const torch::Tensor& grad0, const torch::Tensor& theta, const torch::Tensor& lambda) {
          if (priors) return d(lambda) * d(theta);
          return accumulate ? d(grad0) : torch::zeros_like(d(grad0));
        };
        const auto w_start = onto(start.out.weight_grad, start.out.weight, start.out.weight_lambda);
        EXPECT_LE(mlt::excess(t.out.weight_grad, a.t().matmul(h) + w_start, a.abs().t().matmul(h.abs()), c.n, w_start, dt), 0);
        const auto b_start = onto(start.out.bias_grad, start.out.bias, start.out.bias_lambda);
        EXPECT_LE(mlt::excess(t.out.bias_grad, a.sum(0) + b_start, a.abs().sum(0), c.n, b_start, dt), 0);
        for (size_t l = 0; l < c.hidden.size(); ++l) {
          const auto& L = t.hidden[l];
          const auto& L0 = start.hidden[l];
          const auto g = d(t.g_hidden[l]);
          const auto s = onto(L0.bias_grad, L0.bias, L0.bias_lambda);
          EXPECT_LE(mlt::excess(L.bias_grad, g.sum(0) + s, g.abs().sum(0), c.n, s, dt), 0) << "hidden " << l;
          // ∇W_l: one fma with the prior (one rounding; want's own two in float64 where dt is float64,
          // within 2u of |∇W_l| + |λ_W W_l| where they cancel), untouched without
          if (priors) {
            const auto prior = d(L0.weight_lambda) * d(L0.weight);
            const auto want = d(L0.weight_grad) + prior;
            EXPECT_LE(mlt::excess(L.weight_grad, want, prior.abs() + d(L0.weight_grad).abs(), 2, want, dt), 0)
                << "hidden " << l;
          } else {
            EXPECT_TRUE(torch::equal(L.weight_grad, L0.weight_grad)) << "hidden " << l;
          }
        }
        const auto r = d(t.row_nll);
        EXPECT_LE(mlt::excess(nll, r.sum(), r.abs().sum(), c.n, torch::zeros({}, torch::kFloat64), dt), 0);
        const double want_loss = 1.5 + 0.25 * nll.item<double>();
        EXPECT_NEAR(t.loss_sum.item<double>(), want_loss, 1e-15 * std::abs(want_loss));
      }
}

// Golden values of the kernel's order (float32's spacing at 1e8 is 8, so 1e8 + 1 = 1e8):
// - rows 0 and 64 (row group 0: rows ≡ 0 mod 64) hold 1e8 and −1e8, row 1 (group 1) holds 1: the groups'
//   sums are 0 and 1, the column's sum exactly 1; in row order 1e8 + 1 loses the 1 and the sum is 0;
// - rows 0, 8 and 9 (groups 0, 8, 9) hold 1, 1e8 and −1e8: groups 8 and 9 are one super-group (groups
//   8–15), whose sum is 0, so the column's sum is 1; adding the 64 groups in one chain (or the rows in
//   order) gives 1 + 1e8 = 1e8, then 0.
TEST(MlpTail, ReferenceSumsEachRowGroupThenTheGroups) {
  const auto o = torch::TensorOptions().dtype(torch::kFloat32);
  for (const auto& rows : std::vector<std::vector<std::pair<int, float>>>{{{0, 1e8f}, {1, 1.0f}, {64, -1e8f}},
                                                                          {{0, 1.0f}, {8, 1e8f}, {9, -1e8f}}}) {
    SCOPED_TRACE("rows " + std::to_string(rows[0].first) + ", " + std::to_string(rows[1].first) + ", " +
                 std::to_string(rows[2].first));
    MlpTailArgs t = mlt::make(mlt::Case{"golden", 70, 1, 1, {{1, 1}}}, torch::kFloat32, false, false, false, 3);
    auto g = torch::zeros({70, 1}, o);
    for (const auto& [r, v] : rows) g[r][0] = v;
    t.g_hidden[0] = g;
    t.g_out = g.clone(), t.h_last = torch::ones({70, 1}, o);
    kernels::mlp_tail_reference(t);
    EXPECT_EQ(t.hidden[0].bias_grad.item<float>(), 1.0f);  // Σ_i g_i: the hidden layer's ∇b
    EXPECT_EQ(t.out.bias_grad.item<float>(), 1.0f);        // the ones column: the output layer's ∇b
    EXPECT_EQ(t.out.weight_grad.item<float>(), 1.0f);      // Σ_i g_i·1: its ∇W
    float in_order = 0, groups_in_one_chain = 0;
    for (int i = 0; i < 70; ++i) in_order += g[i][0].item<float>();
    for (int q = 0; q < 64; ++q) {
      float p = 0;
      for (int r = q; r < 70; r += 64) p += g[r][0].item<float>();
      groups_in_one_chain += p;
    }
    EXPECT_EQ(in_order, 0.0f);  // why the order is part of the arithmetic
    if (rows[1].first == 8) {
      EXPECT_EQ(groups_in_one_chain, 0.0f);  // why the super-groups are
    }
  }
}

// ∇W_l given as partial sums (kernels.cuda_mlp_kparts): the parts added in part order, then λ_W W_l with one
// fma; exactly those float operations, with and without the prior's precisions.
TEST(MlpTail, ReferenceAddsTheWeightGradientsPartsInOrder) {
  for (bool priors : {false, true}) {
    SCOPED_TRACE(priors ? "priors" : "no priors");
    MlpTailArgs t = mlt::make(mlt::cases()[0], torch::kFloat32, priors, false, true, 5);
    const auto& W = t.hidden[0].weight;
    auto parts = torch::randn({4, W.size(0), W.size(1)}) * 1e3;
    t.weight_grad_parts = {parts};
    ASSERT_TRUE(kernels::mlp_tail_applies(t));
    kernels::mlp_tail_reference(t);
    auto want = parts[0].clone();
    for (int p = 1; p < 4; ++p) want += parts[p];  // float32 adds, in part order
    if (priors) {
      const auto lw = torch::full_like(W, t.hidden[0].weight_lambda.item<float>());
      auto flat = want.view(-1);
      const float* l = lw.data_ptr<float>();
      const float* w = W.data_ptr<float>();
      float* c = flat.data_ptr<float>();
      for (int64_t i = 0; i < flat.numel(); ++i) c[i] = std::fma(l[i], w[i], c[i]);
    }
    EXPECT_TRUE(torch::equal(t.hidden[0].weight_grad, want));
  }
  // what it takes: overwriting only, the layer's element count, its dtype
  MlpTailArgs t = mlt::make(mlt::cases()[0], torch::kFloat32, false, true, true, 5);
  t.weight_grad_parts = {torch::zeros({4, 100, 784})};
  EXPECT_FALSE(kernels::mlp_tail_applies(t));
  t = mlt::make(mlt::cases()[0], torch::kFloat32, false, false, true, 5);
  t.weight_grad_parts = {torch::zeros({4, 100, 783})};
  EXPECT_FALSE(kernels::mlp_tail_applies(t));
  t.weight_grad_parts = {torch::zeros({4, 100, 784}, torch::kFloat64)};
  EXPECT_FALSE(kernels::mlp_tail_applies(t));
}

// What it takes: the cases above (float32, float64; overwriting, accumulating); not more than 16 outputs,
// mismatched rows, mixed dtypes, precisions with accumulating, one precision of two, a stage beyond 48 KB.
TEST(MlpTail, AppliesWhereTheKernelTakesIt) {
  for (const auto& c : mlt::cases())
    for (auto dt : {torch::kFloat32, torch::kFloat64}) EXPECT_TRUE(kernels::mlp_tail_applies(mlt::make(c, dt, true, false, true, 1)));
  const mlt::Case h1 = mlt::cases()[0];
  auto bad = [&](auto&& change) {
    MlpTailArgs t = mlt::make(h1, torch::kFloat32, false, false, false, 2);
    change(t);
    EXPECT_FALSE(kernels::mlp_tail_applies(t));
    EXPECT_THROW(kernels::mlp_tail_reference(t), std::invalid_argument);
  };
  bad([](MlpTailArgs& t) { t = mlt::make(mlt::Case{"wide", 8, 17, 4, {}}, torch::kFloat32, false, false, false, 2); });
  bad([](MlpTailArgs& t) { t.h_last = t.h_last.narrow(0, 0, 499).contiguous(); });
  bad([](MlpTailArgs& t) { t.g_hidden[0] = t.g_hidden[0].to(torch::kFloat64); });
  bad([](MlpTailArgs& t) { t.h_last = t.h_last.t().contiguous().t(); });  // not contiguous
  bad([](MlpTailArgs& t) {
    t.out.weight_lambda = torch::ones({});
    t.out.bias_lambda = torch::ones({});
    t.accumulate = true;
  });
  bad([](MlpTailArgs& t) { t.hidden[0].weight_lambda = torch::ones({}); });
  bad([](MlpTailArgs& t) { t.row_nll = t.row_nll.narrow(0, 0, 10); });
  bad([](MlpTailArgs& t) { t.loss_sum = torch::zeros({}); });  // float32: the trainer's sum is float64
  // g_L's stage: 2,000 rows × 10 float64 = 160 KB
  bad([](MlpTailArgs& t) { t = mlt::make(mlt::Case{"long", 2000, 10, 4, {}}, torch::kFloat64, false, false, false, 2); });
}

// On a GPU: the kernel against the reference bit for bit, every case, dtype and mode, the loss sum too;
// twice the same bits; and a captured launch replayed equals the eager one.
TEST(MlpTail, CudaEqualsReferenceBitForBit) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (const auto& c : mlt::cases())
      for (int mode = 0; mode < 5; ++mode) {  // 3, 4: modes 0, 1 with each hidden ∇W_l as 3 partial sums
        SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64, mode " : " float32, mode ") + std::to_string(mode));
        MlpTailArgs cpu = mlt::make(c, dt, mode % 3 == 1, mode == 2, true, 21 + mode);
        if (mode >= 3)
          for (const auto& L : cpu.hidden)
            cpu.weight_grad_parts.push_back(torch::randn({3, L.weight.size(0), L.weight.size(1)}, torch::TensorOptions().dtype(dt)));
        MlpTailArgs gpu = mlt::copy_to(cpu, dev);
        const MlpTailArgs again = mlt::copy_to(cpu, dev);
        const auto want = kernels::mlp_tail_reference(cpu);
        const auto got = kernels::mlp_tail_cuda(gpu);
        ASSERT_TRUE(got.defined());
        EXPECT_TRUE(torch::equal(got.cpu(), want)) << got.item<double>() << " against " << want.item<double>();
        const auto w = mlt::outputs(cpu), g = mlt::outputs(gpu);
        for (size_t i = 0; i < w.size(); ++i) EXPECT_TRUE(torch::equal(g[i].cpu(), w[i])) << "output " << i;
        // captured, then replayed once (the launch reads its inputs when it runs)
        MlpTailArgs cap = mlt::copy_to(again, dev);
        ASSERT_TRUE(test_util::capture_and_replay([&] { return kernels::mlp_tail_cuda(cap); }).defined());
        const auto r = mlt::outputs(cap);
        for (size_t i = 0; i < w.size(); ++i) EXPECT_TRUE(torch::equal(r[i].cpu(), w[i])) << "replayed, output " << i;
      }
  // where the reference declines, the kernel launches nothing
  MlpTailArgs wide = mlt::copy_to(mlt::make(mlt::Case{"wide", 8, 17, 4, {}}, torch::kFloat32, false, false, false, 2), dev);
  EXPECT_FALSE(kernels::mlp_tail_cuda(wide).defined());
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}
