// kernels/cpu/matmul.h: out = act(a·b + bias) and out += a·b, through oneDNN (where built) and ATen,
// against a float64 reference. Tolerance: a float32 dot product of K terms errs by at most
// γ_K·Σ|a_ik||b_kj| with γ_K ≈ K·u (u = 2⁻²⁴; Higham, Accuracy and Stability, §3.1), whatever the
// order of summation or blocking a library chooses; the bias, the accumulated output and the
// activation (1-Lipschitz: sigmoid, tanh, relu) add a few u more. So each element is checked
// against (K + 2)·u·(|a||b| + |bias| + |c₀|) + 4u, a bound that no correct kernel exceeds and that a
// wrong transpose, bias or epilogue exceeds by orders of magnitude.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "compat.h"
#include "kernels/cpu/matmul.h"

using namespace sgmcmc;
using kernels::Activation;
using kernels::MatmulBackend;

namespace {

constexpr double kU = 5.9604644775390625e-8;  // 2⁻²⁴

struct BackendGuard {  // restores the process-wide backend
  MatmulBackend saved = kernels::matmul_backend();
  ~BackendGuard() { kernels::set_matmul_backend(saved); }
};

std::vector<MatmulBackend> backends() {
  std::vector<MatmulBackend> b{MatmulBackend::kAten};
  if (kernels::onednn_built()) b.push_back(MatmulBackend::kOnednn);
  return b;
}

torch::Tensor activate64(const torch::Tensor& z, Activation act) {
  switch (act) {
    case Activation::kSigmoid: return torch::sigmoid(z);
    case Activation::kRelu: return torch::relu(z);
    case Activation::kTanh: return torch::tanh(z);
    default: return z;
  }
}

// a [m, k] or its transpose's view, the same for b: every layout the models pass (x·wᵀ, gᵀ·h, g·w).
torch::Tensor operand(int64_t rows, int64_t cols, bool transposed, at::Generator& gen) {
  return transposed ? torch::randn({cols, rows}, gen).t() : torch::randn({rows, cols}, gen);
}

void expect_within(const torch::Tensor& got, const torch::Tensor& want, const torch::Tensor& bound,
                   const std::string& what) {
  const auto excess = ((got.to(torch::kFloat64) - want).abs() - bound).max().item<double>();
  EXPECT_LE(excess, 0.0) << what;
}

TEST(Matmul, OutEqualsReferenceForEveryLayoutBiasAndActivation) {
  BackendGuard guard;
  auto gen = compat::make_generator(torch::kCPU, 11);
  for (auto backend : backends()) {
    kernels::set_matmul_backend(backend);
    for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{500, 784, 100}, {37, 13, 5}, {1, 64, 3}}) {
      for (int layout = 0; layout < 4; ++layout) {
        auto a = operand(m, k, layout & 1, gen), b = operand(k, n, layout & 2, gen);
        for (bool with_bias : {false, true}) {
          for (auto act : {Activation::kNone, Activation::kSigmoid, Activation::kRelu, Activation::kTanh}) {
            const auto bias = with_bias ? torch::randn({n}, gen) : torch::Tensor();
            auto out = torch::full({m, n}, std::nan(""));
            kernels::matmul_out(out, a, b, bias, act);
            auto a64 = a.to(torch::kFloat64), b64 = b.to(torch::kFloat64);
            auto z = a64.mm(b64), mag = a64.abs().mm(b64.abs());
            if (with_bias) z = z + bias.to(torch::kFloat64), mag = mag + bias.to(torch::kFloat64).abs();
            expect_within(out, activate64(z, act), (k + 2) * kU * mag + 4 * kU,
                          kernels::matmul_backend_name() + " m" + std::to_string(m) + " layout " +
                              std::to_string(layout) + " bias " + std::to_string(with_bias) + " act " +
                              std::to_string(static_cast<int>(act)));
          }
        }
      }
    }
  }
}

// Batched products (the parallel chains): each batch entry against the float64 reference, for a
// contiguous a, a transposed-view b (W.transpose(1, 2)), an `a` whose batch stride is not the
// matrix's size (the chains' shared first layer: [n, C, out] viewed as [C, n, out]), with a bias per
// batch entry and an activation; and accumulation.
TEST(Matmul, BatchedEqualsReferencePerEntry) {
  BackendGuard guard;
  auto gen = compat::make_generator(torch::kCPU, 15);
  for (auto backend : backends()) {
    kernels::set_matmul_backend(backend);
    const int64_t B = 4, m = 30, k = 20, n = 7;
    for (int layout = 0; layout < 2; ++layout) {
      auto a = layout == 0 ? torch::randn({B, m, k}, gen) : torch::randn({m, B, k}, gen).transpose(0, 1);
      auto w = torch::randn({B, n, k}, gen), bias = torch::randn({B, n}, gen);
      auto out = torch::full({B, m, n}, std::nan(""));
      const auto calls = kernels::onednn_matmul_calls();
      kernels::matmul_out(out, a, w.transpose(1, 2), bias, Activation::kTanh);
      if (backend == MatmulBackend::kOnednn) EXPECT_EQ(kernels::onednn_matmul_calls(), calls + 1);
      auto acc = torch::randn({B, n, k}, gen), acc0 = acc.clone();
      auto g = torch::randn({B, m, n}, gen);
      kernels::matmul_acc_(acc, g.transpose(1, 2), a);
      for (int64_t c = 0; c < B; ++c) {
        auto a64 = a[c].to(torch::kFloat64), w64 = w[c].to(torch::kFloat64), b64 = bias[c].to(torch::kFloat64);
        expect_within(out[c], torch::tanh(a64.mm(w64.t()) + b64),
                      (k + 2) * kU * (a64.abs().mm(w64.abs().t()) + b64.abs()) + 4 * kU,
                      kernels::matmul_backend_name() + " batched layout " + std::to_string(layout));
        auto g64 = g[c].to(torch::kFloat64), c64 = acc0[c].to(torch::kFloat64);
        expect_within(acc[c], c64 + g64.t().mm(a64), (m + 2) * kU * (g64.abs().t().mm(a64.abs()) + c64.abs()) + 4 * kU,
                      kernels::matmul_backend_name() + " batched accumulate");
      }
    }
  }
}

TEST(Matmul, AccumulateAddsIntoTheOutput) {
  BackendGuard guard;
  auto gen = compat::make_generator(torch::kCPU, 12);
  for (auto backend : backends()) {
    kernels::set_matmul_backend(backend);
    const int64_t m = 100, k = 500, n = 784;  // a weight gradient: gᵀ [100, 500] · x [500, 784]
    auto a = operand(m, k, true, gen), b = operand(k, n, false, gen);
    auto c0 = torch::randn({m, n}, gen);
    auto out = c0.clone();
    kernels::matmul_acc_(out, a, b);
    kernels::matmul_acc_(out, a, b);  // twice: the second must add to the first, not overwrite it
    auto a64 = a.to(torch::kFloat64), b64 = b.to(torch::kFloat64), c64 = c0.to(torch::kFloat64);
    const auto want = c64 + 2 * a64.mm(b64);
    const auto bound = 2 * (k + 2) * kU * (2 * a64.abs().mm(b64.abs()) + c64.abs()) + 4 * kU;
    expect_within(out, want, bound, kernels::matmul_backend_name());
  }
}

TEST(Matmul, AtenBackendIsAddmmBitForBit) {
  BackendGuard guard;
  kernels::set_matmul_backend(MatmulBackend::kAten);
  auto gen = compat::make_generator(torch::kCPU, 13);
  auto x = torch::randn({50, 30}, gen), w = torch::randn({20, 30}, gen), bias = torch::randn({20}, gen);
  auto out = torch::empty({50, 20});
  kernels::matmul_out(out, x, w.t(), bias, Activation::kSigmoid);
  EXPECT_TRUE(torch::equal(out, torch::sigmoid(torch::addmm(bias, x, w.t()))));
  auto grad = torch::randn({20, 30}, gen), want = grad.clone();
  auto g = torch::randn({50, 20}, gen);
  kernels::matmul_acc_(grad, g.t(), x);
  EXPECT_TRUE(torch::equal(grad, want.addmm_(g.t(), x)));
}

TEST(Matmul, Float32OnTheCpuRunsOnOnednnWhereBuilt) {
  if (!kernels::onednn_built()) GTEST_SKIP() << "built without oneDNN";
  BackendGuard guard;
  kernels::set_matmul_backend(MatmulBackend::kOnednn);
  auto x = torch::randn({8, 6}), w = torch::randn({4, 6});
  auto out = torch::empty({8, 4});
  const auto before = kernels::onednn_matmul_calls();
  kernels::matmul_out(out, x, w.t());
  kernels::matmul_acc_(out, x, w.t());
  EXPECT_EQ(kernels::onednn_matmul_calls(), before + 2);
  kernels::matmul_out(out, x.to(torch::kFloat64).to(torch::kFloat32).t().contiguous().t(), w.t());  // column-major a
  EXPECT_EQ(kernels::onednn_matmul_calls(), before + 3);
  auto x64 = x.to(torch::kFloat64), w64 = w.to(torch::kFloat64);
  auto out64 = torch::empty({8, 4}, torch::kFloat64);
  kernels::matmul_out(out64, x64, w64.t());
  EXPECT_EQ(kernels::onednn_matmul_calls(), before + 3);  // float64: ATen
}

TEST(Matmul, OtherDtypesTakeTheAtenPath) {
  auto gen = compat::make_generator(torch::kCPU, 14);
  auto x = torch::randn({8, 6}, gen).to(torch::kFloat64), w = torch::randn({4, 6}, gen).to(torch::kFloat64);
  auto bias = torch::randn({4}, gen).to(torch::kFloat64);
  auto out = torch::empty({8, 4}, torch::kFloat64);
  kernels::matmul_out(out, x, w.t(), bias, Activation::kTanh);
  EXPECT_TRUE(torch::equal(out, torch::tanh(torch::addmm(bias, x, w.t()))));
}

TEST(Matmul, BadShapesAndBackendsAreErrors) {
  auto out = torch::empty({3, 4});
  EXPECT_THROW(kernels::matmul_out(out, torch::zeros({3, 5}), torch::zeros({6, 4})), std::invalid_argument);
  EXPECT_THROW(kernels::matmul_out(out, torch::zeros({3, 5}), torch::zeros({5, 4}), torch::zeros({3})),
               std::invalid_argument);
  EXPECT_THROW(kernels::matmul_acc_(out, torch::zeros({2, 5}), torch::zeros({5, 4})), std::invalid_argument);
  auto out3 = torch::empty({2, 3, 4});
  EXPECT_THROW(kernels::matmul_out(out3, torch::zeros({3, 3, 5}), torch::zeros({3, 5, 4})), std::invalid_argument);
  EXPECT_THROW(kernels::matmul_out(out3, torch::zeros({2, 3, 5}), torch::zeros({2, 5, 4}), torch::zeros({4})),
               std::invalid_argument);
  EXPECT_THROW(kernels::activation_from_name("gelu"), std::invalid_argument);
  if (!kernels::onednn_built())
    EXPECT_THROW(kernels::set_matmul_backend(MatmulBackend::kOnednn), std::invalid_argument);
}

}  // namespace
