// kernels/cuda_mlp/mlp_fused.h: the CPU reference against the MLP's own backward (which tests/test_models.cpp
// checks against autograd), and on a GPU the fused CUDA pass against the reference and against ATen's
// CUDA path.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include "compat.h"
#include "core/kernel_settings.h"
#include "kernels/cuda_mlp/gemm_lt.h"
#include "core/remove_tree.h"
#include "kernels/cuda_mlp/gemm_lt_cache.h"
#include "kernels/cuda_mlp/mlp_fused.h"
#include "models/mlp.h"
#include "models/mlp_chains.h"

using namespace sgmcmc;

namespace {

// kernels.cuda_gemm_cache: auto keeps cublaslt's choices under $XDG_CACHE_HOME: this program's go to a
// directory of its own, removed at the end, not into the home directory of whoever runs the tests.
class CacheHome : public testing::Environment {
 public:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("sgmcmc_test_mlp_fused_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir_);
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  void TearDown() override { sgmcmc::remove_tree(dir_); }

 private:
  std::string dir_;
};
testing::Environment* const cache_home = testing::AddGlobalTestEnvironment(new CacheHome);

#if defined(SGMCMC_WITH_CUDA)
// The cuBLASLt tests' conditions: a GPU and a build that found cuBLASLt.
bool skip_without_cublaslt() { return !compat::cuda_available() || !kernels::gemm_lt_built(); }

// TF32 off for a test (ATen's cuBLAS flag, which gemm_lt follows), then as it was.
struct NoTf32 {
  const bool saved = at::globalContext().allowTF32CuBLAS();
  NoTf32() { at::globalContext().setAllowTF32CuBLAS(false); }
  ~NoTf32() { at::globalContext().setAllowTF32CuBLAS(saved); }
  NoTf32(const NoTf32&) = delete;
  NoTf32& operator=(const NoTf32&) = delete;
};
#endif

struct Case {
  std::string name;
  int64_t n, inputs;
  std::vector<int64_t> hidden;
  int64_t outputs;
  std::string activation;
};

// App. H.1's and FNN-800's shapes, and odd ones: rows, widths and depths that fill no tile, no hidden
// layer, a single row.
std::vector<Case> cases(bool small_only) {
  std::vector<Case> c = {{"odd tanh", 37, 33, {17, 5}, 3, "tanh"},
                         {"no hidden layer", 29, 20, {}, 4, "sigmoid"},
                         {"one row, relu", 1, 9, {6, 7, 8}, 2, "relu"},
                         {"H.1-like sigmoid", 64, 50, {24}, 10, "sigmoid"}};
  if (!small_only) {
    c.push_back({"App. H.1", 500, 784, {100}, 10, "sigmoid"});
    c.push_back({"FNN-800", 100, 784, {800, 800}, 10, "relu"});
  }
  return c;
}

// A model of the case's shape (Mlp, or MlpChains with `chains`), its parameters drawn from `seed`, and a
// batch of `rows` rows on `dev` in `dt`.
template <typename M>
struct BuiltOf {
  std::shared_ptr<M> model;
  Batch batch;  // with chains: chains · n rows, chain-major
};

template <typename M, typename... ChainsArg>
BuiltOf<M> build_model(const Case& c, int64_t rows, torch::Dtype dt, torch::Device dev, uint64_t seed, ChainsArg... chains) {
  MlpOptions o;
  o.inputs = c.inputs;
  o.hidden = c.hidden;
  o.outputs = c.outputs;
  o.activation = c.activation;
  auto gen = compat::make_generator(torch::kCPU, seed);
  auto m = std::make_shared<M>(o, chains..., gen);
  m->to(dt);
  m->to(dev);
  auto x = torch::rand({rows, c.inputs}, gen).to(dt) * 2;
  auto y = torch::randint(0, c.outputs, {rows}, gen, torch::kInt64);
  return {m, Batch{x.to(dev), y.to(dev)}};
}

BuiltOf<Mlp> build(const Case& c, torch::Dtype dt, torch::Device dev, uint64_t seed) {
  return build_model<Mlp>(c, c.n, dt, dev, seed);
}

std::vector<kernels::MlpLayerTensors> layer_tensors(torch::nn::Module& m) {
  std::vector<kernels::MlpLayerTensors> ls;
  auto p = m.parameters();  // fc1.weight, fc1.bias, fc2.weight, ...
  for (size_t i = 0; i + 1 < p.size(); i += 2)
    ls.push_back({p[i].detach(), p[i + 1].detach(), p[i].mutable_grad(), p[i + 1].mutable_grad()});
  return ls;
}

double max_rel(const torch::Tensor& got, const torch::Tensor& want) {
  const auto w = want.to(torch::kCPU, torch::kFloat64), g = got.to(torch::kCPU, torch::kFloat64);
  return (g - w).abs().max().item<double>() / std::max(1.0, w.abs().max().item<double>());
}

// Float rounding of sums over up to ~800 terms: float32 1e-5 of the largest magnitude (a sum of k
// products in either order differs by ≲ k·ε·max ≈ 800 · 6e-8 = 5e-5 at worst, ~√k·ε typically),
// float64 1e-12.
double tolerance(torch::Dtype dt) { return dt == torch::kFloat64 ? 1e-12 : 2e-5; }

#if defined(SGMCMC_WITH_CUDA)
// kernels.cuda_mlp_gemm's text for a choice (the config's own spelling)
std::string gemm_name(KernelSettings::MlpGemm gemm) {
  KernelSettings k;
  k.cuda_mlp_gemm = gemm;
  return k.to_map().at("cuda_mlp_gemm");
}

// The fused pass on the GPU model `m` against the reference on its CPU copy `mc` (the same parameters), from
// the same random .grad, overwriting and accumulating (one scratch: its buffers regrow, its counters stay at
// 0); overwriting twice gives the same bits (fixed summation order, counters reset).
void expect_fused_equals_reference(torch::nn::Module& m, const Batch& batch, torch::nn::Module& mc,
                                   const Batch& batch_cpu, kernels::Activation act, torch::Dtype dt, int64_t chains) {
  const torch::Device dev = batch.inputs.device();
  kernels::MlpFusedScratch scratch;
  using Gemm = KernelSettings::MlpGemm;
  const size_t layers = layer_tensors(mc).size();
  // the tiled kernel, the pipelined one and the cuBLAS route (up to 4 layers, one chain or several; the
  // tiled kernel without a hidden layer) on cuBLAS and cuBLASLt, and the route's last launch as column
  // blocks (kernels.cuda_mlp_tail: columns, kernels/cuda_mlp/mlp_tail.h), and the product into the head as k-parts
  // the head adds (kernels.cuda_mlp_kparts; a width no multiple of them takes the plain product), and the
  // last hidden layer with the head in one launch (kernels.cuda_mlp_forward: fused, kernels/cuda_mlp/mlp_forward_head.h;
  // with kparts too, which it then replaces for that product), and the hidden layers' ∇W_l as the pass's
  // tiled launches (kernels.cuda_mlp_wgrad: fused, kernels/cuda_mlp/weight_grad.h; with kparts, which it then replaces
  // for ∇W_l)
  struct Variant {
    Gemm gemm;
    bool tail = false;
    int kparts = 0;
    bool forward = false;  // kernels.cuda_mlp_forward: fused (the last hidden layer and the head in one launch)
    bool wgrad = false;    // kernels.cuda_mlp_wgrad: fused (the hidden layers' ∇W_l as the pass's tiled launches)
  };
  for (auto [gemm, tail, kparts, forward, wgrad] :
       {Variant{Gemm::kTiled}, Variant{Gemm::kPipelined}, Variant{Gemm::kCublas}, Variant{Gemm::kCublasLt},
        Variant{Gemm::kCublas, true}, Variant{Gemm::kCublasLt, true}, Variant{Gemm::kCublasLt, false, 4},
        Variant{Gemm::kCublasLt, true, 8}, Variant{Gemm::kCublasLt, false, 0, true}, Variant{Gemm::kCublas, true, 4, true},
        Variant{Gemm::kCublasLt, false, 0, false, true}, Variant{Gemm::kCublasLt, true, 4, true, true},
        Variant{Gemm::kCublas, false, 0, true, true}})
    for (bool overwrite : {true, false}) {
      SCOPED_TRACE(gemm_name(gemm) + (tail ? ", tail columns" : "") +
                   (kparts > 0 ? ", kparts " + std::to_string(kparts) : "") + (forward ? ", forward fused" : "") +
                   (wgrad ? ", wgrad fused" : ""));
      KernelSettings k;
      k.cuda_mlp = KernelSettings::Choice::kFused;  // every shape and chains (auto leaves FNN-800 and chains to ATen)
      k.cuda_mlp_gemm = gemm;
      k.cuda_mlp_tail = tail ? KernelSettings::MlpTail::kColumns : KernelSettings::MlpTail::kGemm;
      k.cuda_mlp_kparts = kparts;
      k.cuda_mlp_forward = forward ? KernelSettings::MlpLaunch::kFused : KernelSettings::MlpLaunch::kAuto;
      k.cuda_mlp_wgrad = wgrad ? KernelSettings::MlpLaunch::kFused : KernelSettings::MlpLaunch::kAuto;
      ScopedKernelSettings scoped(k);
      auto params = m.parameters(), cpu = mc.parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        cpu[i].mutable_grad() = torch::randn(cpu[i].sizes(), cpu[i].options());
        params[i].mutable_grad() = cpu[i].grad().to(dev);
      }
      auto want_nll = kernels::mlp_backward_reference(batch_cpu.inputs, batch_cpu.targets, layer_tensors(mc), act, 7.0,
                                                      overwrite, chains);
      auto got_nll = kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(m), act, 7.0,
                                                      overwrite, scratch, chains);
      ASSERT_TRUE(got_nll.defined());
      // the forward-and-head launch where it applies: the cuBLAS route (a hidden layer), one chain
      const bool route = gemm != Gemm::kTiled && gemm != Gemm::kPipelined && layers >= 2 && layers <= 4;
      EXPECT_EQ(scratch.forward_head_applied, forward && route && chains == 1);
      EXPECT_EQ(scratch.forward_applied, forward && route && chains == 1 ? static_cast<int>(layers) - 1 : 0);
      EXPECT_EQ(scratch.wgrad_applied, wgrad && route && chains == 1 ? static_cast<int>(layers) - 1 : 0);
      EXPECT_LE(max_rel(got_nll, want_nll), tolerance(dt)) << "nll, overwrite " << overwrite;
      for (size_t i = 0; i < params.size(); ++i)
        EXPECT_LE(max_rel(params[i].grad(), cpu[i].grad()), tolerance(dt))
            << "parameter " << i << ", overwrite " << overwrite;
      if (overwrite) {
        std::vector<torch::Tensor> first;
        for (auto& p : params) first.push_back(p.grad().clone());
        auto again = kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(m), act, 7.0, true,
                                                      scratch, chains);
        EXPECT_TRUE(torch::equal(again, got_nll));
        for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i].grad(), first[i])) << i;
      }
    }
}
#endif
}  // namespace

// The reference's gradients and nll are the MLP's own backward's (overwriting and accumulating).
TEST(MlpFused, ReferenceEqualsTheMlpBackward) {
  for (auto dt : {torch::kFloat64, torch::kFloat32}) {
    for (const auto& c : cases(false)) {
      if (c.name == "FNN-800" && dt == torch::kFloat64) continue;  // the plain loops take seconds
      SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64" : " float32"));
      auto [m, batch] = build(c, dt, torch::kCPU, 3);
      for (bool overwrite : {true, false}) {
        auto params = m->parameters();
        std::vector<torch::Tensor> start;
        for (auto& p : params) start.push_back(torch::randn(p.sizes(), p.options()));
        for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = start[i].clone();
        auto want_nll = overwrite ? m->nll_backward_overwrite(batch, 7.0) : m->nll_backward(batch, 7.0);
        ASSERT_TRUE(want_nll.defined());
        std::vector<torch::Tensor> want;
        for (auto& p : params) want.push_back(p.grad().clone());
        for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad().copy_(start[i]);
        auto got_nll = kernels::mlp_backward_reference(batch.inputs, batch.targets, layer_tensors(*m),
                                                       kernels::activation_from_name(c.activation), 7.0, overwrite);
        EXPECT_LE(max_rel(got_nll, want_nll), tolerance(dt)) << "nll, overwrite " << overwrite;
        for (size_t i = 0; i < params.size(); ++i)
          EXPECT_LE(max_rel(params[i].grad(), want[i]), tolerance(dt)) << "parameter " << i << ", overwrite " << overwrite;
      }
    }
  }
}

TEST(MlpFused, ReferenceRejectsBadLabelsAndShapes) {
  auto [m, batch] = build(cases(true)[0], torch::kFloat32, torch::kCPU, 4);
  for (auto& p : m->parameters()) p.mutable_grad() = torch::zeros_like(p);
  auto y = batch.targets.clone();
  y[3] = 3;  // 3 classes
  EXPECT_THROW(kernels::mlp_backward_reference(batch.inputs, y, layer_tensors(*m), kernels::Activation::kTanh, 1.0, true),
               std::invalid_argument);
  EXPECT_THROW(kernels::mlp_backward_reference(batch.inputs.slice(1, 0, 32).contiguous(), batch.targets,
                                               layer_tensors(*m), kernels::Activation::kTanh, 1.0, true),
               std::invalid_argument);
}

// On a GPU: the fused pass against the reference (float32 and float64, overwriting and accumulating,
// both GEMM tile edges),
// bit for bit deterministic from one call to the next, and the MLP's step with kernels.cuda_mlp: fused
// against ATen's CUDA path.
TEST(MlpFused, CudaEqualsReference) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    for (const auto& c : cases(false)) {
      if (c.name == "FNN-800" && dt == torch::kFloat64) continue;
      SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64" : " float32"));
      auto [m, batch] = build(c, dt, dev, 5);
      auto [mc, batch_cpu] = build(c, dt, torch::kCPU, 5);
      const auto act = kernels::activation_from_name(c.activation);
      expect_fused_equals_reference(*m, batch, *mc, batch_cpu, act, dt, 1);
      {  // the trainer's loss sum: weight · nll added by the last kernel, every call; a float32 sum declined
        KernelSettings k;
        k.cuda_mlp = KernelSettings::Choice::kFused;
        ScopedKernelSettings scoped(k);
        kernels::MlpFusedScratch scratch;
        scratch.loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(dev));
        scratch.loss_weight = 0.25;
        const auto n1 = kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(*m), act, 7.0, true, scratch);
        const auto n2 = kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(*m), act, 7.0, false, scratch);
        ASSERT_TRUE(n1.defined() && n2.defined());
        const double want = 0.25 * (n1.item<double>() + n2.item<double>());
        EXPECT_NEAR(scratch.loss_sum.item<double>(), want, 1e-12 * std::abs(want));
        scratch.loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(dev));
        EXPECT_FALSE(kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(*m), act, 7.0, true, scratch)
                         .defined());
      }
      // through the model, against ATen's CUDA path
      auto params = m->parameters();
      std::vector<torch::Tensor> aten;
      torch::Tensor aten_nll;
      for (bool fused : {false, true}) {
        KernelSettings k;
        k.cuda_mlp = fused ? KernelSettings::Choice::kFused : KernelSettings::Choice::kAten;
        ScopedKernelSettings scoped(k);
        for (auto& p : params) p.mutable_grad() = torch::full_like(p, 123.0);
        auto nll = m->nll_backward_overwrite(batch, 7.0);
        ASSERT_TRUE(nll.defined());
        if (!fused) {
          aten_nll = nll;
          for (auto& p : params) aten.push_back(p.grad().clone());
          continue;
        }
        EXPECT_LE(max_rel(nll, aten_nll), tolerance(dt));
        for (size_t i = 0; i < params.size(); ++i) EXPECT_LE(max_rel(params[i].grad(), aten[i]), tolerance(dt)) << i;
      }
    }
  }
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}

// kernels.cuda_mlp: auto (the default) takes the fused pass for layers of up to FNN-800's 800 × 800
// weights, where it measured faster than ATen, and leaves wider ones (784 × 1,000 here) to ATen; aten
// never takes it.
TEST(MlpFused, AutoTakesLayersUpToFnn800s) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const auto all = cases(false);
  for (const auto& c : {all[4], all[5], Case{"FNN-1000", 50, 784, {1000}, 10, "relu"}}) {
    auto [m, batch] = build(c, torch::kFloat32, torch::kCUDA, 6);
    for (auto& p : m->parameters()) p.mutable_grad() = torch::zeros_like(p);
    kernels::MlpFusedScratch scratch;
    const auto act = kernels::activation_from_name(c.activation);
    EXPECT_EQ(kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(*m), act, 1.0, true, scratch)
                  .defined(),
              c.name != "FNN-1000")
        << c.name;
  }
  KernelSettings k;
  k.cuda_mlp = KernelSettings::Choice::kAten;
  ScopedKernelSettings scoped(k);
  EXPECT_FALSE(kernels::mlp_fused_cuda_enabled());
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}

namespace {
// Each layer's tensors with a precision λ per weight and bias (0-dim, on `dev`).
std::vector<kernels::MlpLayerTensors> with_precisions(Mlp& m, torch::Device dev) {
  auto ls = layer_tensors(m);
  double lambda = 0.7;
  for (auto& l : ls) {
    l.weight_lambda = torch::full({}, lambda, l.weight.options().device(dev));
    l.bias_lambda = torch::full({}, 2.5 * lambda, l.weight.options().device(dev));
    lambda *= 1.9;
  }
  return ls;
}
}  // namespace

// With precisions, the reference writes λθ + ∇: what seeding .grad with λθ and accumulating the MLP's own
// backward into it gives (the trainer's path without the fold). The model's seeded pass exists on CUDA only.
TEST(MlpFused, ReferenceWithPrecisionsEqualsSeedThenAccumulate) {
  for (auto dt : {torch::kFloat64, torch::kFloat32}) {
    for (const auto& c : cases(true)) {
      SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64" : " float32"));
      auto [m, batch] = build(c, dt, torch::kCPU, 7);
      auto params = m->parameters();
      for (auto& p : params) p.mutable_grad() = torch::zeros_like(p);
      auto ls = with_precisions(*m, torch::kCPU);
      for (size_t i = 0; i < params.size(); ++i) {
        const auto& l = ls[i / 2];
        params[i].mutable_grad().copy_(params[i].detach() * (i % 2 == 0 ? l.weight_lambda : l.bias_lambda));
      }
      auto want_nll = m->nll_backward(batch, 7.0);
      std::vector<torch::Tensor> want;
      for (auto& p : params) want.push_back(p.grad().clone());
      for (auto& p : params) p.mutable_grad().fill_(123.0);
      auto got_nll = kernels::mlp_backward_reference(batch.inputs, batch.targets, ls,
                                                     kernels::activation_from_name(c.activation), 7.0, true);
      EXPECT_LE(max_rel(got_nll, want_nll), tolerance(dt));
      for (size_t i = 0; i < params.size(); ++i) EXPECT_LE(max_rel(params[i].grad(), want[i]), tolerance(dt)) << i;
      EXPECT_THROW(kernels::mlp_backward_reference(batch.inputs, batch.targets, ls,
                                                   kernels::activation_from_name(c.activation), 7.0, false),
                   std::invalid_argument);
      EXPECT_FALSE(m->nll_backward_seeded(batch, 7.0, {}).defined());
    }
  }
}

// On a GPU: the λ epilogue against the reference, and the model's seeded pass (kernels.cuda_mlp_prior:
// fused) against seeding λθ and accumulating ATen's path.
TEST(MlpFused, CudaWithPrecisionsEqualsReference) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  // the tiled kernel's λ epilogue, and the cuBLAS route's (∇W_l by cuBLAS, then λ_W W_l added alone), its
  // last launch also as column blocks (kernels.cuda_mlp_tail)
  for (auto gemm : {KernelSettings::MlpGemm::kTiled, KernelSettings::MlpGemm::kCublas, KernelSettings::MlpGemm::kCublasLt})
  for (bool columns : {false, true})
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    if (columns && gemm == KernelSettings::MlpGemm::kTiled) continue;  // the route's only
    KernelSettings k;
    k.cuda_mlp = KernelSettings::Choice::kFused;
    k.cuda_mlp_prior_fused = true;
    k.cuda_mlp_gemm = gemm;
    k.cuda_mlp_tail = columns ? KernelSettings::MlpTail::kColumns : KernelSettings::MlpTail::kGemm;
    ScopedKernelSettings scoped(k);
    auto all = cases(false);
    all.pop_back();  // not FNN-800: the reference's plain loops are slow and the λ path is the same
    for (const auto& c : all) {
      SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64, " : " float32, ") + gemm_name(gemm) +
                   (columns ? ", tail columns" : ""));
      auto [m, batch] = build(c, dt, dev, 8);
      auto [mc, batch_cpu] = build(c, dt, torch::kCPU, 8);
      const auto act = kernels::activation_from_name(c.activation);
      for (auto& p : mc->parameters()) p.mutable_grad() = torch::zeros_like(p);
      for (auto& p : m->parameters()) p.mutable_grad() = torch::full_like(p, 123.0);
      auto want_nll = kernels::mlp_backward_reference(batch_cpu.inputs, batch_cpu.targets,
                                                      with_precisions(*mc, torch::kCPU), act, 7.0, true);
      kernels::MlpFusedScratch scratch;
      auto got_nll = kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, with_precisions(*m, dev), act, 7.0,
                                                      true, scratch);
      ASSERT_TRUE(got_nll.defined());
      EXPECT_LE(max_rel(got_nll, want_nll), tolerance(dt));
      auto params = m->parameters(), cpu = mc->parameters();
      for (size_t i = 0; i < params.size(); ++i) EXPECT_LE(max_rel(params[i].grad(), cpu[i].grad()), tolerance(dt)) << i;
      // through the model: seeds as the trainer passes them, against λθ then ATen's accumulating path
      // the seeds name the parameters themselves (the model finds each λ by tensor identity), not the
      // detached views layer_tensors holds
      const auto ls = with_precisions(*m, dev);
      std::vector<PriorSeed> seeds;
      for (size_t i = 0; i < params.size(); ++i)
        seeds.push_back({params[i], i % 2 == 0 ? ls[i / 2].weight_lambda : ls[i / 2].bias_lambda});
      for (auto& p : params) p.mutable_grad() = torch::full_like(p, 123.0);
      auto seeded_nll = m->nll_backward_seeded(batch, 7.0, seeds);
      ASSERT_TRUE(seeded_nll.defined());
      std::vector<torch::Tensor> seeded;
      for (auto& p : params) seeded.push_back(p.grad().clone());
      KernelSettings aten;
      aten.cuda_mlp = KernelSettings::Choice::kAten;
      ScopedKernelSettings scoped_aten(aten);
      for (size_t i = 0; i < params.size(); ++i)
        params[i].mutable_grad() = params[i].detach() * (i % 2 == 0 ? ls[i / 2].weight_lambda : ls[i / 2].bias_lambda);
      auto aten_nll = m->nll_backward(batch, 7.0);
      EXPECT_FALSE(m->nll_backward_seeded(batch, 7.0, seeds).defined());  // cuda_mlp: aten
      EXPECT_LE(max_rel(seeded_nll, aten_nll), tolerance(dt));
      for (size_t i = 0; i < params.size(); ++i) EXPECT_LE(max_rel(seeded[i], params[i].grad()), tolerance(dt)) << i;
    }
  }
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}

namespace {

BuiltOf<MlpChains> build_chains(const Case& c, int64_t chains, torch::Dtype dt, torch::Device dev, uint64_t seed) {
  return build_model<MlpChains>(c, chains * c.n, dt, dev, seed, chains);
}

// `chains` chains sharing one minibatch of the case's n rows (train.chain_minibatch: shared).
BuiltOf<MlpChains> build_shared(const Case& c, int64_t chains, torch::Dtype dt, torch::Device dev, uint64_t seed) {
  auto built = build_model<MlpChains>(c, c.n, dt, dev, seed, chains);
  EXPECT_TRUE(built.model->share_minibatch(true));
  return built;
}

// ∇θ(scale · nll) by autograd on the chained model, added into .grad as it stands.
torch::Tensor autograd_backward(MlpChains& m, const Batch& batch, double scale) {
  auto nll = m.nll(batch);
  (nll * scale).backward();
  return nll.detach();
}

#if defined(SGMCMC_WITH_CUDA)
// MlpChains::nll_backward on the GPU against autograd on ATen's CUDA ops: with kernels.cuda_mlp: auto it
// takes the pass where `auto_takes`, with `fused` it must, and then agrees with autograd.
void expect_model_pass_equals_autograd(MlpChains& m, const Batch& batch, torch::Dtype dt, bool auto_takes) {
  auto params = m.parameters();
  for (auto& p : params) p.mutable_grad() = torch::zeros_like(p);
  const auto aten_nll = autograd_backward(m, batch, 7.0);
  std::vector<torch::Tensor> aten;
  for (auto& p : params) aten.push_back(p.grad().clone());
  for (auto& p : params) p.mutable_grad() = torch::zeros_like(p);
  {
    ScopedKernelSettings scoped{KernelSettings{}};
    EXPECT_EQ(m.nll_backward(batch, 7.0).defined(), auto_takes);
    for (auto& p : params) p.mutable_grad().zero_();
  }
  KernelSettings k;
  k.cuda_mlp = KernelSettings::Choice::kFused;
  ScopedKernelSettings scoped(k);
  auto nll = m.nll_backward(batch, 7.0);
  ASSERT_TRUE(nll.defined());
  EXPECT_LE(max_rel(nll, aten_nll), tolerance(dt));
  for (size_t i = 0; i < params.size(); ++i) EXPECT_LE(max_rel(params[i].grad(), aten[i]), tolerance(dt)) << i;
}
#endif

}  // namespace

// Chains: the reference runs each chain's rows (shared: all of x's) through its own slice of the stacked
// layers; its nll and gradients (added to .grad, or overwriting it) are what autograd gives on MlpChains.
TEST(MlpFused, ChainsReferenceEqualsAutogradOfTheChainedMlp) {
  for (auto dt : {torch::kFloat64, torch::kFloat32}) {
    for (const auto& c : cases(true))
    for (auto [chains, shared] : {std::pair<int64_t, bool>{1, false}, {3, false}, {3, true}}) {  // one chain: layers stacked [1, out, in]
      SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64, " : " float32, ") + std::to_string(chains) + " chains" +
                   (shared ? ", shared minibatch" : ""));
      auto [m, batch] = shared ? build_shared(c, chains, dt, torch::kCPU, 11) : build_chains(c, chains, dt, torch::kCPU, 11);
      for (bool overwrite : {true, false}) {
        auto params = m->parameters();
        std::vector<torch::Tensor> start;
        for (auto& p : params) start.push_back(overwrite ? torch::zeros_like(p) : torch::randn(p.sizes(), p.options()));
        for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = start[i].clone();
        const auto want_nll = autograd_backward(*m, batch, 7.0);
        std::vector<torch::Tensor> want;
        for (auto& p : params) want.push_back(p.grad().clone());
        for (size_t i = 0; i < params.size(); ++i)
          params[i].mutable_grad() = overwrite ? torch::full_like(params[i], 123.0) : start[i].clone();
        auto got_nll = kernels::mlp_backward_reference(batch.inputs, batch.targets, layer_tensors(*m),
                                                       kernels::activation_from_name(c.activation), 7.0, overwrite,
                                                       chains, shared);
        EXPECT_LE(max_rel(got_nll, want_nll), tolerance(dt)) << "nll, overwrite " << overwrite;
        for (size_t i = 0; i < params.size(); ++i)
          EXPECT_LE(max_rel(params[i].grad(), want[i]), tolerance(dt)) << "parameter " << i << ", overwrite " << overwrite;
      }
    }
  }
  // without CUDA the chained model has no pass of its own: the trainer's autograd
  auto [m, batch] = build_chains(cases(true)[0], 2, torch::kFloat32, torch::kCPU, 1);
  for (auto& p : m->parameters()) p.mutable_grad() = torch::zeros_like(p);
  EXPECT_FALSE(m->nll_backward(batch, 1.0).defined());
}

// On a GPU: the chains' fused pass against the reference (every chain through its own layers; C = 1
// and C = 5, both tile edges), twice the same bits, and through MlpChains::nll_backward against
// autograd on ATen's CUDA ops. kernels.cuda_mlp: auto leaves chains to ATen (measured slower).
TEST(MlpFused, CudaChainsEqualsReference) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    for (const auto& c : cases(false)) {
      if (c.name == "FNN-800") continue;
      for (int64_t chains : {1, 5}) {
        SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64, " : " float32, ") + std::to_string(chains) + " chains");
        auto [m, batch] = build_chains(c, chains, dt, dev, 13);
        auto [mc, batch_cpu] = build_chains(c, chains, dt, torch::kCPU, 13);
        const auto act = kernels::activation_from_name(c.activation);
        expect_fused_equals_reference(*m, batch, *mc, batch_cpu, act, dt, chains);
        // auto: several chains stay with ATen; one chain of these small layers takes the pass
        expect_model_pass_equals_autograd(*m, batch, dt, chains == 1);
      }
    }
  }
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}

// One minibatch for every chain: the reference over x's n rows equals, bit for bit, the reference over
// the chains' own minibatches when every chain's rows are those same n (x repeated C times).
TEST(MlpFused, SharedChainsReferenceEqualsOwnOnRepeatedRows) {
  for (const auto& c : cases(true)) {
    SCOPED_TRACE(c.name);
    const int64_t chains = 3;
    auto [m, batch] = build_shared(c, chains, torch::kFloat64, torch::kCPU, 17);
    const auto act = kernels::activation_from_name(c.activation);
    for (bool overwrite : {true, false}) {
      auto params = m->parameters();
      std::vector<torch::Tensor> start;
      for (auto& p : params) start.push_back(torch::randn(p.sizes(), p.options()));
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = start[i].clone();
      auto own_nll = kernels::mlp_backward_reference(batch.inputs.repeat({chains, 1}), batch.targets.repeat({chains}),
                                                     layer_tensors(*m), act, 7.0, overwrite, chains);
      std::vector<torch::Tensor> own;
      for (auto& p : params) own.push_back(p.grad().clone());
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad().copy_(start[i]);
      auto shared_nll = kernels::mlp_backward_reference(batch.inputs, batch.targets, layer_tensors(*m), act, 7.0,
                                                        overwrite, chains, /*shared=*/true);
      EXPECT_TRUE(torch::equal(shared_nll, own_nll)) << "overwrite " << overwrite;
      for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i].grad(), own[i])) << i;
    }
  }
  auto [m, batch] = build_shared(cases(true)[0], 2, torch::kFloat32, torch::kCPU, 1);
  EXPECT_THROW(kernels::mlp_backward_reference(batch.inputs, batch.targets.narrow(0, 0, 5), layer_tensors(*m),
                                               kernels::Activation::kTanh, 1.0, true, 2, true),
               std::invalid_argument);
}

// On a GPU: the shared minibatch's pass (one hidden layer, the cuBLAS route: the pre-activations and
// g_1 as [n, C·h], both large products one GEMM over the chains) against the reference, for each route
// product kind, overwriting and adding, twice the same bits; the declines (the tiled and pipelined kernels,
// two hidden layers, auto's
// kernels.cuda_mlp); and through MlpChains::nll_backward against autograd on ATen's CUDA ops.
TEST(MlpFused, CudaSharedChainsEqualsReference) {
#if defined(SGMCMC_WITH_CUDA)
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  NoTf32 no_tf32;
  const torch::Device dev(torch::kCUDA);
  using Gemm = KernelSettings::MlpGemm;
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    for (const auto& c : cases(false)) {
      if (c.hidden.size() != 1) continue;  // H.1-like and App. H.1
      for (int64_t chains : {2, 5}) {
        SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64, " : " float32, ") + std::to_string(chains) + " chains");
        auto [m, batch] = build_shared(c, chains, dt, dev, 23);
        auto [mc, batch_cpu] = build_shared(c, chains, dt, torch::kCPU, 23);
        const auto act = kernels::activation_from_name(c.activation);
        kernels::MlpFusedScratch scratch;
        auto params = m->parameters(), cpu = mc->parameters();
        for (bool overwrite : {true, false}) {
          // the reference once per overwrite, from one random .grad; every variant starts from the same
          std::vector<torch::Tensor> start, want;
          for (auto& p : cpu) start.push_back(torch::randn(p.sizes(), p.options()));
          for (size_t i = 0; i < cpu.size(); ++i) cpu[i].mutable_grad() = start[i].clone();
          auto want_nll = kernels::mlp_backward_reference(batch_cpu.inputs, batch_cpu.targets, layer_tensors(*mc), act,
                                                          7.0, overwrite, chains, true);
          for (auto& p : cpu) want.push_back(p.grad().clone());
          for (Gemm gemm : {Gemm::kAuto, Gemm::kCublas, Gemm::kCublasLt}) {
            SCOPED_TRACE(gemm_name(gemm) + ", overwrite " + std::to_string(overwrite));
            KernelSettings k;
            k.cuda_mlp = KernelSettings::Choice::kFused;
            k.cuda_mlp_gemm = gemm;
            ScopedKernelSettings scoped(k);
            for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = start[i].to(dev);
            auto got_nll = kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(*m), act, 7.0,
                                                            overwrite, scratch, chains, true);
            ASSERT_TRUE(got_nll.defined());
            EXPECT_LE(max_rel(got_nll, want_nll), tolerance(dt)) << "nll";
            for (size_t i = 0; i < params.size(); ++i)
              EXPECT_LE(max_rel(params[i].grad(), want[i]), tolerance(dt)) << "parameter " << i;
            if (overwrite) {
              std::vector<torch::Tensor> first;
              for (auto& p : params) first.push_back(p.grad().clone());
              auto again = kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(*m), act, 7.0,
                                                            true, scratch, chains, true);
              EXPECT_TRUE(torch::equal(again, got_nll));
              for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i].grad(), first[i])) << i;
            }
          }
        }
        for (Gemm gemm : {Gemm::kTiled, Gemm::kPipelined}) {
          KernelSettings k;
          k.cuda_mlp = KernelSettings::Choice::kFused;
          k.cuda_mlp_gemm = gemm;
          ScopedKernelSettings scoped(k);
          EXPECT_FALSE(kernels::mlp_backward_fused_cuda(batch.inputs, batch.targets, layer_tensors(*m), act, 7.0, true,
                                                        scratch, chains, true)
                           .defined())
              << gemm_name(gemm);
        }
        expect_model_pass_equals_autograd(*m, batch, dt, false);  // auto leaves chains to ATen
      }
    }
  }
  // two hidden layers: declined
  auto [m2, batch2] = build_shared(cases(true)[0], 3, torch::kFloat32, dev, 29);
  for (auto& p : m2->parameters()) p.mutable_grad() = torch::zeros_like(p);
  KernelSettings k;
  k.cuda_mlp = KernelSettings::Choice::kFused;
  ScopedKernelSettings scoped(k);
  EXPECT_FALSE(m2->nll_backward(batch2, 1.0).defined());
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}

#if defined(SGMCMC_WITH_CUDA)
namespace {
// A float32 product's error against float64: the max over the elements of |c − (c0 +) a·b| − bound, with
// bound = (k·2^-24 + 2^-20)·Σ_k |a_ik||b_kj| (k roundings of the sum, in any order or split, plus slack),
// plus 2^-23·(|c0| + |result|) for the accumulating add; a·b and the bound in float64 (2-D or per chain).
double bound_excess(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c0, const torch::Tensor& c,
                    bool accumulate) {
  const auto a64 = a.to(torch::kFloat64), b64 = b.to(torch::kFloat64), c064 = c0.to(torch::kFloat64);
  auto want = a64.matmul(b64);
  const double k = static_cast<double>(a.size(-1));
  auto bound = (k * std::ldexp(1.0, -24) + std::ldexp(1.0, -20)) * a64.abs().matmul(b64.abs());
  if (accumulate) {
    want += c064;
    bound += std::ldexp(1.0, -23) * (c064.abs() + want.abs());
  }
  return ((c.to(torch::kFloat64) - want).abs() - bound).max().item<double>();
}

// App. H.1's two products for 3 chains at once (row × column-major, column × row-major), overwriting and
// accumulating, through `product`, against each chain's float64 product within bound_excess's bound.
void expect_chains_within_bound(
    const torch::TensorOptions& opts,
    const std::function<bool(const torch::Tensor&, const torch::Tensor&, torch::Tensor&, bool)>& product) {
  const auto xs = torch::randn({3, 500, 784}, opts), ws = torch::randn({3, 100, 784}, opts),
             gs = torch::randn({3, 500, 100}, opts);
  for (const auto& [a, b] : std::vector<std::pair<torch::Tensor, torch::Tensor>>{{xs, ws.transpose(1, 2)},
                                                                                 {gs.transpose(1, 2), xs}})
    for (bool accumulate : {false, true}) {
      SCOPED_TRACE(std::string("chains") + (accumulate ? ", accumulating" : ""));
      const auto c0 = torch::randn({3, a.size(1), b.size(2)}, opts);
      auto c = c0.clone();
      ASSERT_TRUE(product(a, b, c, accumulate));
      EXPECT_LE(bound_excess(a, b, c0, c, accumulate), 0.0);
    }
}
}  // namespace
#endif

// cuBLASLt products with the kernel chosen by measurement (kernels/cuda_mlp/gemm_lt.h) against float64, within
// float32's bound (bound_excess: TF32, ~2^-11 a product, is ~10× over it at k = 784), with TF32 off:
// App. H.1's two products (row × column-major, column × row-major), row × row and column × column,
// overwriting and accumulating, and the first two for 3 chains at once. A shape's second call repeats the
// first's bits (its choice is kept); a graph capture of a measured shape replays to the eager bits, and a
// shape first seen during capture is declined (measuring synchronises). The choice recorded per shape is
// at most cuBLASLt's first heuristic's time (that one is among the candidates).
TEST(GemmLt, CudaWithinItsBoundAndCapturable) {
#if defined(SGMCMC_WITH_CUDA)
  if (skip_without_cublaslt()) GTEST_SKIP() << "needs a GPU and a build with cuBLASLt (CUDA::cublasLt)";
  const torch::Device dev(torch::kCUDA);
  const NoTf32 no_tf32;
  KernelSettings off;
  off.cuda_gemm_cache = "off";  // every shape measured here, none remembered from another run
  ScopedKernelSettings scoped(off);
  torch::manual_seed(12);
  const auto opts = torch::TensorOptions().device(dev);
  const auto x = torch::randn({500, 784}, opts), w = torch::randn({100, 784}, opts), g = torch::randn({500, 100}, opts);
  const auto w_rows = torch::randn({784, 100}, opts), x_cols = torch::randn({784, 500}, opts);
  const std::vector<std::pair<torch::Tensor, torch::Tensor>> products = {
      {x, w.t()}, {g.t(), x}, {x, w_rows}, {x_cols.t(), w.t()}};
  for (size_t p = 0; p < products.size(); ++p)
    for (bool accumulate : {false, true}) {
      SCOPED_TRACE("product " + std::to_string(p) + (accumulate ? ", accumulating" : ""));
      const auto& [a, b] = products[p];
      const auto c0 = torch::randn({a.size(0), b.size(1)}, opts);
      auto c = c0.clone(), again = c0.clone();
      ASSERT_TRUE(kernels::gemm_lt(a, b, c, accumulate));
      EXPECT_LE(bound_excess(a, b, c0, c, accumulate), 0.0);
      ASSERT_TRUE(kernels::gemm_lt(a, b, again, accumulate));
      EXPECT_TRUE(torch::equal(again, c));
    }
  {  // an output whose leading dimension exceeds its width (a view of a wider matrix): the rest untouched
    auto wide = torch::zeros({500, 128}, opts);
    auto c = wide.narrow(1, 0, 100);
    ASSERT_TRUE(kernels::gemm_lt(x, w.t(), c, false));
    EXPECT_LE(bound_excess(x, w.t(), torch::zeros({500, 100}, opts), c, false), 0.0);
    EXPECT_TRUE(torch::equal(wide.narrow(1, 100, 28), torch::zeros({500, 28}, opts)));
  }
  // operands off the allocator's 512-byte alignment, as a parameter's view into the flat buffer can be: a
  // 16-byte offset must work (the heuristics are told each operand's alignment); at a 4-byte offset
  // cuBLASLt may have no kernel, and then the product is declined and c left as it was
  for (const int64_t offset : {4, 1}) {
    SCOPED_TRACE("offset of " + std::to_string(offset) + " floats");
    auto flat = torch::zeros({offset + 500 * 100}, opts);
    auto c = flat.narrow(0, offset, 500 * 100).view({500, 100});
    const auto x_flat = torch::randn({offset + 500 * 784}, opts);
    const auto xo = x_flat.narrow(0, offset, 500 * 784).view({500, 784});
    const bool done = kernels::gemm_lt(xo, w.t(), c, false);
    if (offset == 4) {
      ASSERT_TRUE(done);
    }
    if (done) {
      EXPECT_LE(bound_excess(xo, w.t(), torch::zeros({500, 100}, opts), c, false), 0.0);
    } else {
      EXPECT_TRUE(torch::equal(c, torch::zeros_like(c)));
    }
    EXPECT_TRUE(torch::equal(flat.narrow(0, 0, offset), torch::zeros({offset}, opts)));
  }
  expect_chains_within_bound(opts, kernels::gemm_lt);
  const auto choices = kernels::gemm_lt_choices();
  EXPECT_GE(choices.size(), products.size() * 2 + 4);
  for (const auto& ch : choices) {
    SCOPED_TRACE(ch.shape + ": " + ch.kernel);
    EXPECT_GE(ch.candidates, 1);
    EXPECT_GT(ch.us, 0.0);
    EXPECT_LE(ch.us, ch.heuristic_us);
  }
  // a capture on a side stream: the measured shape is captured and replays to its eager bits; a new shape
  // (k = 392) is declined there and its output left as it was
  {
    const auto& [a, b] = products[0];
    auto eager = torch::zeros({a.size(0), b.size(1)}, opts), captured = torch::zeros_like(eager);
    ASSERT_TRUE(kernels::gemm_lt(a, b, eager, false));
    const auto a_new = x.narrow(1, 0, 392), b_new = w.narrow(1, 0, 392).t();
    auto untouched = torch::zeros({500, 100}, opts);
    bool captured_ok = false, new_ok = true;
    at::cuda::CUDAGraph graph;
    const auto main = c10::cuda::getCurrentCUDAStream(), side = c10::cuda::getStreamFromPool();
    at::cuda::CUDAEvent queued, done;
    queued.record(main);
    queued.block(side);
    {
      const c10::cuda::CUDAStreamGuard guard(side);
      // the side stream's workspace comes with a first eager call on it
      ASSERT_TRUE(kernels::gemm_lt(a, b, captured, false));
      graph.capture_begin();
      captured_ok = kernels::gemm_lt(a, b, captured, false);
      new_ok = kernels::gemm_lt(a_new, b_new, untouched, false);
      graph.capture_end();
    }
    done.record(side);
    done.block(main);
    EXPECT_TRUE(captured_ok);
    EXPECT_FALSE(new_ok);
    captured.zero_();
    graph.replay();
    torch::cuda::synchronize();
    EXPECT_TRUE(torch::equal(captured, eager));
    EXPECT_TRUE(torch::equal(untouched, torch::zeros_like(untouched)));
  }
  // what it does not take: float64, a column-major output
  auto c64 = torch::zeros({500, 100}, opts.dtype(torch::kFloat64));
  EXPECT_FALSE(kernels::gemm_lt(x.to(torch::kFloat64), w.t().to(torch::kFloat64), c64, false));
  auto c_cols = torch::zeros({100, 500}, opts).t();
  EXPECT_FALSE(kernels::gemm_lt(x, w.t(), c_cols, false));
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}

// kernels.cuda_gemm_cache: a shape measured once is written to the file; after this process forgets its
// choices (as a new process starts without them) the shape is taken from the file without measuring,
// also when first met inside a CUDA-graph capture, and gives the measuring call's bits; the recorded
// choice says it came from the cache, and only the measuring call adds to gemm_lt_measure_seconds. With the
// cache off the same shape is declined in a capture.
TEST(GemmLt, CudaCacheKeepsChoicesAcrossProcesses) {
#if defined(SGMCMC_WITH_CUDA)
  if (skip_without_cublaslt()) GTEST_SKIP() << "needs a GPU and a build with cuBLASLt (CUDA::cublasLt)";
  const torch::Device dev(torch::kCUDA);
  const NoTf32 no_tf32;
  const auto dir = std::filesystem::temp_directory_path() / ("sgmcmc_gemm_lt_cache_gpu_" + std::to_string(::getpid()));
  sgmcmc::remove_tree(dir);
  KernelSettings k;
  k.cuda_gemm_cache = (dir / "choices.json").string();
  torch::manual_seed(13);
  const auto opts = torch::TensorOptions().device(dev);
  // a shape no other test meets (300 rows), so that this process has no choice for it yet
  const auto x = torch::randn({300, 784}, opts), w = torch::randn({100, 784}, opts);
  auto measured = torch::zeros({300, 100}, opts), cached = torch::zeros_like(measured);
  const auto find = [](const std::string& shape) {
    for (const auto& ch : kernels::gemm_lt_choices())
      if (ch.shape == shape) return ch;
    return kernels::GemmLtChoice{};
  };
  const std::string shape = "300×100×784, a row, b col";
  const auto side = c10::cuda::getStreamFromPool();
  at::cuda::CUDAEvent queued, done;
  queued.record(c10::cuda::getCurrentCUDAStream());
  queued.block(side);
  bool in_capture = false, declined = true;
  std::string kernel;
  {
    const c10::cuda::CUDAStreamGuard guard(side);
    {
      ScopedKernelSettings scoped(k);
      const double measuring_before = kernels::gemm_lt_measure_seconds();
      ASSERT_TRUE(kernels::gemm_lt(x, w.t(), measured, false));  // measured, and written
      const double measuring_after = kernels::gemm_lt_measure_seconds();
      EXPECT_GT(measuring_after, measuring_before);
      const auto first = find(shape);
      ASSERT_FALSE(first.kernel.empty());
      EXPECT_FALSE(first.cached);
      kernel = first.kernel;
      ASSERT_TRUE(std::filesystem::exists(dir / "choices.json"));
      kernels::gemm_lt_forget_choices();
      at::cuda::CUDAGraph graph;
      graph.capture_begin();
      in_capture = kernels::gemm_lt(x, w.t(), cached, false);  // remembered: no measurement needed
      graph.capture_end();
      graph.replay();
      const auto second = find(shape);
      EXPECT_TRUE(second.cached);
      EXPECT_EQ(kernels::gemm_lt_measure_seconds(), measuring_after);  // taken from the file, not measured
      EXPECT_EQ(second.kernel, kernel);
    }
    KernelSettings off = k;
    off.cuda_gemm_cache = "off";
    ScopedKernelSettings scoped(off);
    kernels::gemm_lt_forget_choices();
    auto untouched = torch::zeros({300, 100}, opts);
    at::cuda::CUDAGraph graph;
    graph.capture_begin();
    declined = !kernels::gemm_lt(x, w.t(), untouched, false);
    graph.capture_end();
  }
  done.record(side);
  done.block(c10::cuda::getCurrentCUDAStream());
  torch::cuda::synchronize();
  EXPECT_TRUE(in_capture);
  EXPECT_TRUE(torch::equal(cached, measured));
  EXPECT_TRUE(declined);
  const kernels::GemmLtCache file(k.cuda_gemm_cache);
  EXPECT_TRUE(file.on());
  sgmcmc::remove_tree(dir);
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}
