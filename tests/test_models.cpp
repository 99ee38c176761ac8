#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "compat.h"
#include "core/kernel_settings.h"
#include "core/option_map.h"
#include "models/activation_backward.h"
#include "models/cnn.h"
#include "models/factory.h"
#include "models/linear.h"
#include "models/mlp.h"
#include "models/relu_pool.h"
#include "models/softmax_xent.h"
#include "kernels/cuda/softmax_xent_row.h"
#if defined(SGMCMC_WITH_CUDA)
#include "kernels/cuda/softmax_xent_cuda.h"
#include "cuda_kernel_checks.h"
#endif

using namespace sgmcmc;

namespace {
Dataset image_dataset(int64_t n = 6) {
  Dataset d;
  d.task = Task::kClassification;
  d.num_classes = 3;
  d.dims = {{"channels", 1}, {"height", 16}, {"width", 16}, {"features", 256}};
  d.train = Batch{torch::rand({n, 1, 16, 16}), torch::tensor({0, 1, 2, 0, 1, 2}, torch::kInt64).slice(0, 0, n)};
  return d;
}
}  // namespace

TEST(Models, MlpShapesGroupsAndNll) {
  OptionMap o("model");
  o.set("name", "mlp");
  o.set("hidden", "7,5");
  o.set("activation", "tanh");
  auto d = image_dataset();
  auto m = make_model(o, d, 3);
  EXPECT_EQ(m->task(), Task::kClassification);
  auto p = m->predict(d.train.inputs);
  EXPECT_EQ(p.sizes(), (std::vector<int64_t>{6, 3}));
  EXPECT_TRUE(torch::allclose(p.sum(1), torch::ones({6}), 1e-5, 1e-6));
  // Each weight matrix and bias vector is its own prior group (App. H.1): 3 layers -> 6 groups.
  EXPECT_EQ(m->prior_groups().size(), 6u);
  // nll = Σ −log p(y|x).
  auto manual = -p.log().gather(1, d.train.targets.unsqueeze(1)).sum();
  EXPECT_NEAR(m->nll(d.train).item<double>(), manual.item<double>(), 1e-4);
  // Same seed, same initialisation; another seed, another one.
  auto m2 = make_model(o, d, 3), m3 = make_model(o, d, 4);
  EXPECT_TRUE(torch::equal(m->parameters()[0], m2->parameters()[0]));
  EXPECT_FALSE(torch::equal(m->parameters()[0], m3->parameters()[0]));
  // Fan-in init bound 1/sqrt(256) for the first layer.
  EXPECT_LE(m->parameters()[0].abs().max().item<double>(), 1 / 16.0);
}

TEST(Models, MlpGaussianLikelihood) {
  Dataset d;
  d.task = Task::kRegression;
  d.dims = {{"features", 2}};
  d.train = Batch{torch::randn({5, 2}), torch::randn({5})};
  OptionMap o("model");
  o.set("name", "mlp");
  o.set("hidden", "4");
  o.set("noise_precision", "2.5");
  auto m = make_model(o, d, 1);
  EXPECT_EQ(m->task(), Task::kRegression);
  auto f = m->predict(d.train.inputs);
  EXPECT_EQ(f.sizes(), (std::vector<int64_t>{5}));
  // nll = Σ τ(y−f)²/2 − n/2 log τ + n/2 log 2π.
  double sse = (f - d.train.targets).pow(2).sum().item<double>();
  double expected = 2.5 * sse / 2 - 2.5 * std::log(2.5) + 2.5 * std::log(2 * M_PI);
  EXPECT_NEAR(m->nll(d.train).item<double>(), expected, 1e-4);
  EXPECT_NEAR(m->likelihood_hyperparameters().at("tau"), 2.5, 1e-6);
}

TEST(Models, CnnShapes) {
  OptionMap o("model");
  o.set("name", "cnn");
  o.set("conv1", "4");
  o.set("conv2", "6");
  o.set("fc", "8");
  auto d = image_dataset();
  auto m = make_model(o, d, 1);
  auto p = m->predict(d.train.inputs);
  EXPECT_EQ(p.sizes(), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(m->prior_groups().size(), 8u);
  auto loss = m->nll(d.train);
  loss.backward();
  for (auto& q : m->parameters()) EXPECT_TRUE(q.grad().defined());
}

TEST(Models, FactoryErrors) {
  auto d = image_dataset();
  OptionMap o("model");
  o.set("name", "mpl");
  try {
    make_model(o, d, 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'mlp'"), std::string::npos) << e.what();
  }
  OptionMap o2("model");
  o2.set("name", "mlp");
  o2.set("activaton", "relu");
  try {
    make_model(o2, d, 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model.activaton: unknown key (did you mean 'activation'?)"), std::string::npos)
        << e.what();
  }
}

// Mlp::nll_backward (the hand-derived backward pass the trainer uses by default) against autograd,
// on .grad seeded as the trainer seeds it (λθ), for every activation and both likelihoods. float32:
// each gradient entry is a sum of n = 6 or 40 products accumulated in a different order (one GEMM into
// .grad against GEMM + add), so they agree to a few float32 ulps of the largest entry: 2e-6 relative
// (16 ulps) is the bound.
// models/activation_backward.h: out bit for bit ATen's sigmoid_backward / tanh_backward /
// threshold_backward, in place too; the bias gradient's column sums (float64 per task) within float
// rounding of out.sum(0): 2,000 rows (13 tasks) of 100, |out| ≤ 3 per entry, so 1e-6·2000·3 for float32.
TEST(Models, ActivationBackwardEqualsAtenAndSumsTheBias) {
  torch::manual_seed(4);
  using kernels::Activation;
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (auto act : {Activation::kSigmoid, Activation::kTanh, Activation::kRelu, Activation::kNone}) {
      const auto z = torch::randn({2000, 100}, torch::kFloat64).to(dt);
      const auto y = act == Activation::kSigmoid ? z.sigmoid() : act == Activation::kTanh ? z.tanh()
                     : act == Activation::kRelu  ? z.relu()    : z;
      const auto g = torch::randn({2000, 100}, torch::kFloat64).to(dt);
      torch::Tensor ref = act == Activation::kSigmoid ? at::sigmoid_backward(g, y)
                          : act == Activation::kTanh  ? at::tanh_backward(g, y)
                          : act == Activation::kRelu  ? at::threshold_backward(g, y, 0) : g.clone();
      auto out = torch::empty_like(g);
      auto b0 = torch::randn({100}, torch::kFloat64).to(dt);
      auto b = b0.clone();
      activation_backward_out(out, g, y, act, b);
      EXPECT_TRUE(torch::equal(out, ref)) << static_cast<int>(act);
      const double tol = dt == torch::kFloat32 ? 1e-6 * 2000 * 3 : 1e-12;
      EXPECT_LT((b.to(torch::kFloat64) - b0.to(torch::kFloat64) - ref.to(torch::kFloat64).sum(0)).abs().max().item<double>(), tol);
      auto inplace = g.clone();
      activation_backward_out(inplace, inplace, y, act);
      EXPECT_TRUE(torch::equal(inplace, ref));
    }
}

// models/softmax_xent.h against log_softmax + nll_loss (Sum) and autograd's ∂/∂f of scale·nll, and the
// column sum added into a bias gradient: float64 (to 1e-12: fast_expf is not used there) and float32
// (fast_expf's ~1 ulp and the float sums of a row: 1e-6 relative to the largest entry); 5,000 rows
// span two tasks. A label outside [0, k) throws. Non-contiguous logits take the ATen ops (CUDA's path).
TEST(Models, SoftmaxXentEqualsLogSoftmaxNll) {
  for (auto dt : {torch::kFloat64, torch::kFloat32}) {
    torch::manual_seed(3);
    const int64_t n = 5000, k = 10;
    const double scale = 12.5;
    auto f = (torch::randn({n, k}, torch::kFloat64) * 4).to(dt);
    auto y = torch::randint(0, k, {n}, torch::kInt64);
    auto fr = f.to(torch::kFloat64).requires_grad_(true);
    auto nll_ref = torch::nll_loss(torch::log_softmax(fr, 1), y, {}, at::Reduction::Sum);
    (nll_ref * scale).backward();
    auto g_ref = fr.grad();
    auto b0 = torch::randn({k}, torch::kFloat64);
    auto b = b0.to(dt).clone();  // .to(float64) would be b0 itself
    auto g = torch::empty_like(f);
    auto nll = softmax_xent_backward(f, y, scale, g, b);
    const double tol = dt == torch::kFloat64 ? 1e-12 : 1e-6;
    EXPECT_EQ(nll.scalar_type(), dt);
    EXPECT_NEAR(nll.item<double>(), nll_ref.item<double>(), tol * nll_ref.item<double>());
    EXPECT_LT((g.to(torch::kFloat64) - g_ref).abs().max().item<double>(), tol * scale);
    EXPECT_LT((b.to(torch::kFloat64) - (b0 + g_ref.sum(0))).abs().max().item<double>(), tol * scale * n / 100);
    auto bad = y.clone();
    bad[17] = k;
    EXPECT_THROW(softmax_xent_backward(f, bad, scale, g, torch::Tensor()), std::invalid_argument);
    // the ATen ops (the path of CUDA tensors), here taken by non-contiguous logits
    auto ft = f.t().contiguous().t();
    auto b2 = b0.to(dt).clone();
    auto g2 = torch::empty_like(f);
    auto nll2 = softmax_xent_backward(ft, y, scale, g2, b2);
    EXPECT_NEAR(nll2.item<double>(), nll_ref.item<double>(), tol * nll_ref.item<double>());
    EXPECT_LT((g2.to(torch::kFloat64) - g_ref).abs().max().item<double>(), tol * scale);
    EXPECT_LT((b2.to(torch::kFloat64) - (b0 + g_ref.sum(0))).abs().max().item<double>(), tol * scale * n / 100);
  }
}

// The CUDA kernel's row body (kernels/cuda/softmax_xent_row.h), run here on the host, against autograd on
// log_softmax + nll_loss in float64, for k = 2, 10 and 100 with every label position, logits ~10·N(0, 1)
// and a logit of 100 first and last in a row (e^100 overflows float32: the max shift must see every entry). Tolerances: float64 1e-12,
// float32 2e-6, relative to the scale for the gradient and to 1 + the row's largest |f| for the nll.
TEST(Models, SoftmaxXentRowEqualsAutograd) {
  torch::manual_seed(5);
  for (const int64_t k : {2, 10, 100}) {
    const int64_t n = 3 * k;
    const double scale = 7.5;
    auto f64 = torch::randn({n, k}, torch::kFloat64) * 10;
    f64[0][0] = 100;  // e^100 overflows float32: only the max shift keeps these rows finite
    f64[1][k - 1] = 100;
    auto y = torch::arange(n, torch::kInt64).remainder(k);
    auto fr = f64.clone().requires_grad_(true);
    auto nll_rows = -torch::log_softmax(fr, 1).gather(1, y.unsqueeze(1)).squeeze(1);
    (nll_rows.sum() * scale).backward();
    auto g_ref = fr.grad();
    for (auto dt : {torch::kFloat64, torch::kFloat32}) {
      const double tol = dt == torch::kFloat64 ? 1e-12 : 2e-6;
      auto f = f64.to(dt).contiguous();
      auto g = torch::full({n, k}, std::nan(""), dt);  // poisoned: every entry must be written
      for (int64_t i = 0; i < n; ++i) {
        double nll = 0;
        if (dt == torch::kFloat64)
          nll = kernels::softmax_xent_row<double>(f.data_ptr<double>() + i * k, y[i].item<int64_t>(), k, scale,
                                                   g.data_ptr<double>() + i * k);
        else
          nll = kernels::softmax_xent_row<float>(f.data_ptr<float>() + i * k, y[i].item<int64_t>(), k,
                                                  static_cast<float>(scale), g.data_ptr<float>() + i * k);
        // m + log Σ − f_y cancels: the error is that of the row's largest |f|
        const double amax = f64[i].abs().max().item<double>();
        EXPECT_NEAR(nll, nll_rows[i].item<double>(), tol * (1 + amax)) << k << " " << i;
      }
      EXPECT_LT((g.to(torch::kFloat64) - g_ref).abs().max().item<double>(), tol * scale) << k;
    }
  }
}

// The CUDA kernel itself (on a GPU only): against the ATen ops on the same CUDA tensors.
TEST(Models, SoftmaxXentCudaKernelEqualsAten) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  cuda_kernel_checks::softmax_xent_equals_aten(torch::Device(torch::kCUDA), 5000);
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}

// models/linear.h against torch::nn::functional::linear and the activation: output and the gradients of
// x, W and b (float32 rounding: K = 37 products per element, tolerance 1e-5 relative to the largest).
TEST(Models, FusedLinearEqualsLinearAndActivation) {
  auto gen = compat::make_generator(torch::kCPU, 21);
  using kernels::Activation;
  for (auto act : {Activation::kNone, Activation::kSigmoid, Activation::kRelu, Activation::kTanh}) {
    auto x = torch::randn({23, 37}, gen).requires_grad_(), w = torch::randn({11, 37}, gen).requires_grad_();
    auto b = torch::randn({11}, gen).requires_grad_();
    auto gy = torch::randn({23, 11}, gen);
    auto z = torch::nn::functional::linear(x, w, b);
    auto want = act == Activation::kSigmoid ? torch::sigmoid(z)
                : act == Activation::kRelu  ? torch::relu(z)
                : act == Activation::kTanh  ? torch::tanh(z)
                                            : z;
    auto want_grads = torch::autograd::grad({want}, {x, w, b}, {gy});
    auto got = linear(x, w, b, act);
    auto got_grads = torch::autograd::grad({got}, {x, w, b}, {gy});
    auto close = [](const torch::Tensor& a, const torch::Tensor& e) {
      return (a - e).abs().max().item<double>() <= 1e-5 * std::max(1.0, e.abs().max().item<double>());
    };
    EXPECT_TRUE(close(got, want)) << static_cast<int>(act);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(close(got_grads[i], want_grads[i])) << static_cast<int>(act) << " " << i;
    torch::NoGradGuard no_grad;  // evaluation: no autograd node, the same values
    auto eval = linear(x, w, b, act);
    EXPECT_FALSE(eval.requires_grad());
    EXPECT_TRUE(close(eval, want.detach()));
  }
  {  // without a bias
    auto x = torch::randn({5, 4}, gen).requires_grad_(), w = torch::randn({3, 4}, gen).requires_grad_();
    auto y = linear(x, w, torch::Tensor(), Activation::kTanh);
    EXPECT_LE((y - torch::tanh(x.mm(w.t()))).abs().max().item<double>(), 1e-6);
    y.sum().backward();
    EXPECT_TRUE(w.grad().defined());
  }
  // Batched (the parallel chains): chain c's slice equals the 2-D layer of chain c, values and gradients.
  auto x = torch::randn({3, 23, 37}, gen).requires_grad_(), w = torch::randn({3, 11, 37}, gen).requires_grad_();
  auto b = torch::randn({3, 11}, gen).requires_grad_();
  auto gy = torch::randn({3, 23, 11}, gen);
  auto y = linear(x, w, b, Activation::kSigmoid);
  auto grads = torch::autograd::grad({y}, {x, w, b}, {gy});
  for (int64_t c = 0; c < 3; ++c) {
    auto xc = x[c].detach().requires_grad_(), wc = w[c].detach().requires_grad_(), bc = b[c].detach().requires_grad_();
    auto yc = torch::sigmoid(torch::nn::functional::linear(xc, wc, bc));
    auto gc = torch::autograd::grad({yc}, {xc, wc, bc}, {gy[c]});
    EXPECT_LE((y[c] - yc).abs().max().item<double>(), 1e-5) << c;
    for (int i = 0; i < 3; ++i)
      EXPECT_LE((grads[i][c] - gc[i]).abs().max().item<double>(), 1e-5 * std::max(1.0, gc[i].abs().max().item<double>()))
          << c << " " << i;
  }
}

// models/relu_pool.h against ATen's relu + max_pool2d: bit for bit, values and input gradients, even and
// odd map sizes, ties (a quantized input: many equal maxima, the first one must win), negative windows
// and a NaN.
// Both CPU paths: the AVX-512 loop where the CPU has it (float32) and the portable loop
// (kernels.pool: portable); 40 wide for rows of more than sixteen windows.
TEST(Models, ReluMaxPoolEqualsAtenBitForBit) {
  auto gen = compat::make_generator(torch::kCPU, 22);
  for (const char* path : {"default", "portable"}) {
    KernelSettings k;
    k.pool_portable = std::string(path) == "portable";
    ScopedKernelSettings scope(k);
    for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
      for (auto shape : {std::vector<int64_t>{3, 4, 24, 24}, {2, 5, 7, 9}, {1, 1, 2, 2}, {1, 3, 6, 41}}) {
        auto x0 = torch::randn(shape, gen).to(dtype);
        x0 = (x0 * 2).round() / 2;  // ties
        x0.view(-1)[5 % x0.numel()] = std::nan("");
        auto gy = torch::randn({shape[0], shape[1], shape[2] / 2, shape[3] / 2}, gen).to(dtype);
        auto x = x0.clone().requires_grad_(), xr = x0.clone().requires_grad_();
        auto got = relu_max_pool2x2(x), want = torch::max_pool2d(torch::relu(xr), 2);
        got.backward(gy);
        want.backward(gy);
        EXPECT_TRUE(torch::equal(got.nan_to_num(-7), want.nan_to_num(-7))) << path << " " << shape[3];
        EXPECT_TRUE(torch::equal(x.grad().nan_to_num(-7), xr.grad().nan_to_num(-7))) << path << " " << shape[3];
        torch::NoGradGuard no_grad;
        EXPECT_TRUE(torch::equal(relu_max_pool2x2(x0).nan_to_num(-7), want.detach().nan_to_num(-7)));
      }
    }
  }
}

// models/cnn_backward.cpp against autograd on nll(): the nll and every parameter's gradient added into
// a seeded .grad, in float64 (1e-10 of the largest entry: the two orders of the same sums) and in
// float32 (oneDNN and ATen round differently: 2e-5 of the largest entry, ~2·K·u for the K ≤ 500
// products per entry). 20×20 images (maps 16 → 8 → 4 → 2). Without a .grad the model declines.
TEST(Models, CnnBackwardEqualsAutograd) {
  for (auto dt : {torch::kFloat64, torch::kFloat32}) {
    Dataset d;
    d.task = Task::kClassification;
    d.num_classes = 3;
    d.dims = {{"channels", 1}, {"height", 20}, {"width", 20}, {"features", 400}};
    d.train = Batch{torch::rand({9, 1, 20, 20}, compat::make_generator(torch::kCPU, 8)).to(dt),
                    torch::tensor({0, 1, 2, 0, 1, 2, 2, 1, 0}, torch::kInt64)};
    OptionMap o("model");
    o.set("name", "cnn");
    o.set("conv1", "4");
    o.set("conv2", "6");
    o.set("fc", "8");
    auto m = make_model(o, d, 11);
    m->to(dt);
    const double scale = 37.0;
    auto seed = [&] {
      for (auto& p : m->parameters()) p.mutable_grad() = 0.5 * p.detach();
    };
    seed();
    auto nll = m->nll(d.train);
    nll.backward(torch::full({}, scale, nll.options()));
    std::vector<torch::Tensor> want;
    for (auto& p : m->parameters()) want.push_back(p.grad().clone());
    seed();
    auto got = m->nll_backward(d.train, scale);
    ASSERT_TRUE(got.defined());
    const double rel = dt == torch::kFloat64 ? 1e-10 : 2e-5;
    EXPECT_NEAR(got.item<double>(), nll.item<double>(), rel * std::abs(nll.item<double>()));
    auto params = m->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_LE((params[i].grad() - want[i]).abs().max().item<double>(), rel * want[i].abs().max().item<double>())
          << i;
    params[0].mutable_grad() = torch::Tensor();
    EXPECT_FALSE(m->nll_backward(d.train, scale).defined());
  }
}

TEST(Models, MlpBackwardEqualsAutograd) {
  Dataset reg;
  reg.task = Task::kRegression;
  reg.dims = {{"features", 3}};
  reg.train = Batch{torch::randn({40, 3}, compat::make_generator(torch::kCPU, 5)),
                    torch::randn({40}, compat::make_generator(torch::kCPU, 6))};
  for (const std::string act : {"sigmoid", "relu", "tanh"}) {
    for (bool classification : {true, false}) {
      OptionMap o("model");
      o.set("name", "mlp");
      o.set("hidden", classification ? "7,5" : "9");
      o.set("activation", act);
      if (!classification) o.set("noise_precision", "2.5");
      const Dataset d = classification ? image_dataset() : reg;
      auto m = make_model(o, d, 3);
      const double scale = 123.0;
      auto seed = [&] {
        for (auto& p : m->parameters()) p.mutable_grad() = 0.5 * p.detach();
      };
      seed();
      auto nll = m->nll(d.train);
      nll.backward(torch::full({}, scale));
      std::vector<torch::Tensor> want;
      for (auto& p : m->parameters()) want.push_back(p.grad().clone());
      seed();
      auto got = m->nll_backward(d.train, scale);
      ASSERT_TRUE(got.defined());
      EXPECT_FALSE(got.requires_grad());
      EXPECT_NEAR(got.item<double>(), nll.item<double>(), 1e-6 * std::abs(nll.item<double>())) << act;
      auto params = m->parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        const double tol = 2e-6 * want[i].abs().max().item<double>();
        EXPECT_LE((params[i].grad() - want[i]).abs().max().item<double>(), tol)
            << act << (classification ? " categorical " : " gaussian ") << i;
      }
      // Without a .grad to add into, the model declines and the trainer uses autograd.
      params[0].mutable_grad() = torch::Tensor();
      EXPECT_FALSE(m->nll_backward(d.train, scale).defined());
    }
  }
}

// nll_backward_overwrite (the prior folded into the sampler's update) writes what zeroing
// the gradients and accumulating into them writes, whatever .grad held before: bit for bit (the
// weights' GEMM without its sum epilogue computes 0 + Σ as Σ, a convolution's gradient is copied
// rather than added to zero; the biases are zeroed, then summed in the same order). MLP (categorical
// and Gaussian) and CNN.
TEST(Models, BackwardOverwriteEqualsZeroThenAccumulate) {
  Dataset reg;
  reg.task = Task::kRegression;
  reg.dims = {{"features", 3}};
  reg.train = Batch{torch::randn({40, 3}, compat::make_generator(torch::kCPU, 7)),
                    torch::randn({40}, compat::make_generator(torch::kCPU, 8))};
  Dataset img;
  img.task = Task::kClassification;
  img.num_classes = 3;
  img.dims = {{"channels", 1}, {"height", 20}, {"width", 20}, {"features", 400}};
  img.train = Batch{torch::rand({9, 1, 20, 20}, compat::make_generator(torch::kCPU, 9)),
                    torch::tensor({0, 1, 2, 0, 1, 2, 2, 1, 0}, torch::kInt64)};
  for (const std::string which : {"mlp categorical", "mlp gaussian", "cnn"}) {
    OptionMap o("model");
    Dataset d;
    if (which == "cnn") {
      o.set("name", "cnn");
      o.set("conv1", "4");
      o.set("conv2", "6");
      o.set("fc", "8");
      d = img;
    } else {
      o.set("name", "mlp");
      o.set("hidden", which == "mlp categorical" ? "7,5" : "9");
      d = which == "mlp categorical" ? image_dataset() : reg;
    }
    auto m = make_model(o, d, 3);
    EXPECT_TRUE(m->overwrites_grad());
    auto params = m->parameters();
    for (auto& p : params) p.mutable_grad() = torch::zeros_like(p);
    auto want_nll = m->nll_backward(d.train, 77.0);
    std::vector<torch::Tensor> want;
    for (auto& p : params) want.push_back(p.grad().clone());
    for (auto& p : params) p.mutable_grad().fill_(123.0);  // stale values the pass must not keep
    auto got_nll = m->nll_backward_overwrite(d.train, 77.0);
    ASSERT_TRUE(got_nll.defined()) << which;
    EXPECT_TRUE(torch::equal(got_nll, want_nll)) << which;
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i].grad(), want[i])) << which << " " << i;
  }
}

// The MLP's own backward keeps its buffers and views between calls (models/mlp.h). A weight whose
// storage is replaced (as loading a checkpoint into it can), a batch of another size and other inputs
// of the same shape must be seen, not the kept ones. Tolerance as in MlpBackwardEqualsAutograd (the two sum the same
// products in different orders: float rounding).
TEST(Models, MlpBackwardFollowsNewWeightsAndBatchSizes) {
  OptionMap o("model");
  o.set("name", "mlp");
  o.set("hidden", "7,5");
  o.set("activation", "tanh");
  const Dataset d = image_dataset();
  auto m = make_model(o, d, 3);
  auto grads = [&](const Batch& b, bool own) {
    for (auto& p : m->parameters()) p.mutable_grad() = torch::zeros_like(p);
    if (own) EXPECT_TRUE(m->nll_backward(b, 2.0).defined());
    else m->nll(b).backward(torch::full({}, 2.0));
    std::vector<torch::Tensor> g;
    for (auto& p : m->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  auto expect_autograd = [&](const Batch& b, const char* what) {
    const auto want = grads(b, false);
    const auto got = grads(b, true);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_LE((got[i] - want[i]).abs().max().item<double>(), 2e-6 * want[i].abs().max().item<double>())
          << what << ", parameter " << i;
  };
  expect_autograd(d.train, "first call");
  auto named = m->named_parameters();
  for (const char* name : {"fc1.weight", "fc2.weight"}) {
    torch::NoGradGuard no_grad;
    auto w = named[name];
    w.set_(torch::randn(w.sizes(), compat::make_generator(torch::kCPU, 9)));
  }
  expect_autograd(d.train, "new weight storage");
  const Batch four{d.train.inputs.narrow(0, 0, 4), d.train.targets.narrow(0, 0, 4)};
  expect_autograd(four, "a batch of 4 after 6");
  expect_autograd(d.train, "6 again");
  const Batch other{torch::rand(d.train.inputs.sizes(), compat::make_generator(torch::kCPU, 11)), d.train.targets};
  expect_autograd(other, "other inputs of the same shape");
}
