// The stand-alone CUDA kernels run from their own .cu sources on the CPU, through the emulator of
// tests/cuda_emu/cuda_emu.h, against their CPU references: the samplers' fused update (both launches: the
// generator's and the graph-safe one), the softmax + cross-entropy kernel, the minibatch gather and the BPMF
// gradient. The files
// that launch with <<<…>>> are included as the copies CMake rewrites (tests/cuda_emu/rewrite_launches.cmake).
// The device's SM count is set to 1 where a launcher sizes its grid by it, so the grid-stride loops run
// more than one pass.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuda_emu.h"
#include "cuda_kernel_checks.h"
#include "kernel_cases.h"
// every header the .cu files include, before the launch code's device check is redirected below
#include "core/kernel_settings.h"
#include "kernels/cuda/bpmf_cuda.h"
#include "kernels/update/fused_elementwise.h"
#include "kernels/update/fused_update.h"
#include "kernels/cpu/gather_rows.h"
#include "kernels/cuda/launch_cuda.h"
#include "kernels/cuda/softmax_xent_cuda.h"

// The launch code takes only CUDA tensors; the emulator's device memory is the CPU's.
#define is_cuda is_cpu
#include "kernels/cuda/bpmf_cuda.cu"  // the rewritten copies of these two
#include "kernels/cuda/softmax_xent_cuda.cu"
#include "kernels/update/fused_update_cuda.cu"
#include "kernels/cuda/gather_rows_cuda.cu"
#undef is_cuda

using namespace sgmcmc;
using kernels::FusedRule;

namespace {

// The emulated device's SM count for one scope (the launchers cap their grids by it).
class ScopedSms {
 public:
  explicit ScopedSms(int sms) : old_(cuda_emu::emu().prop.multiProcessorCount) {
    cuda_emu::emu().prop.multiProcessorCount = sms;
  }
  ~ScopedSms() { cuda_emu::emu().prop.multiProcessorCount = old_; }
  ScopedSms(const ScopedSms&) = delete;
  ScopedSms& operator=(const ScopedSms&) = delete;

 private:
  int old_;
};

// The fused update element by element on the host, with the per-element function and the noise the kernel
// uses (fused_element, philox_normal4): what the launch must compute, whatever its grid, its strides and its
// 16-byte path (fused_block4).
template <FusedRule R, typename T>
void element_loop(T* th, T* s0, T* s1, T* s2, T* s3, const T* gr, int64_t n, const kernels::FusedCoefs<T>& k,
                  kernels::NoiseStream ns) {
  for (int64_t i = 0; i < n; ++i) {
    const kernels::Normal4 z = kernels::philox_normal4(ns.key, ns.offset, static_cast<uint64_t>(i / 4));
    const float zs[4] = {z.a, z.b, z.c, z.d};
    kernels::fused_element<R, T>(th, s0, s1, s2, s3, gr, i, zs[i % 4], k);
  }
}

template <typename T>
void element_loop(FusedRule rule, torch::Tensor& theta, std::vector<torch::Tensor>& state, const torch::Tensor& grad,
                  const kernels::FusedScalars& s, kernels::NoiseStream ns) {
  T* sp[4] = {nullptr, nullptr, nullptr, nullptr};
  for (size_t j = 0; j < state.size(); ++j) sp[j] = state[j].data_ptr<T>();
  T* th = theta.data_ptr<T>();
  const T* gr = grad.defined() ? grad.data_ptr<T>() : nullptr;
  const auto k = kernels::make_coefs<T>(rule, s);
  const int64_t n = theta.numel();
#define SGMCMC_EMU_RULE(R)                                                  \
  case R:                                                                   \
    element_loop<R, T>(th, sp[0], sp[1], sp[2], sp[3], gr, n, k, ns); \
    break;
  switch (rule) {
    SGMCMC_EMU_RULE(FusedRule::kNoise)
    SGMCMC_EMU_RULE(FusedRule::kSgld)
    SGMCMC_EMU_RULE(FusedRule::kPsgld)
    SGMCMC_EMU_RULE(FusedRule::kSghmcEuler)
    SGMCMC_EMU_RULE(FusedRule::kSghmcSsi)
    SGMCMC_EMU_RULE(FusedRule::kMsgnhtEuler)
    SGMCMC_EMU_RULE(FusedRule::kMsgnhtSsi)
    SGMCMC_EMU_RULE(FusedRule::kSantaEuler)
    SGMCMC_EMU_RULE(FusedRule::kSantaSsi)
  }
#undef SGMCMC_EMU_RULE
}

// n elements of dtype dt; `shifted`: a view 1 element past the allocation's start (not 16-byte aligned)
torch::Tensor operand(const torch::Tensor& values, bool shifted) {
  if (!shifted) return values.clone();
  auto t = torch::empty({values.numel() + 1}, values.options()).narrow(0, 1, values.numel());
  t.copy_(values);
  return t;
}

std::vector<torch::Tensor> operands(const std::vector<torch::Tensor>& values, bool shifted) {
  std::vector<torch::Tensor> out;
  for (const auto& v : values) out.push_back(operand(v, shifted));
  return out;
}

uint64_t philox_offset(const at::Generator& g) { return g.get<at::CUDAGeneratorImpl>()->philox_offset_per_thread(); }

// A CUDA generator seeded as compat::make_generator seeds one.
at::Generator cuda_generator(uint64_t seed) {
  auto g = at::make_generator<at::CUDAGeneratorImpl>();
  g.set_current_seed(seed);
  return g;
}

}  // namespace

// The samplers' fused update kernel (kernels/update/fused_update_cuda.cu), every rule and the noise alone, float32
// and float64, 16-byte aligned operands (the vector path, its tail block element by element) and shifted
// ones (the element loop), 40,003 elements over a grid of 32 blocks (one SM): bit for bit the host's
// element loop with the same stream; the generator's launch and the graph-safe launch (scalars and stream
// read from the step's buffer, the stream drawn by cuda_noise_stream) the same bits, the generator advanced
// as far by both; and the CPU's fused update from the same stream. The CPU draws its normals through
// philox_fill, whose transcendentals may differ from philox_normal4's in a float normal's last bit (in
// either dtype the normals are float32): the noise alone agrees to two float ulps (measured: 382 of the
// 40,003 normals differ, none by more than 2), every rule to 1e-6 absolute (two ulps of a normal below 8
// are 9.5e-7, times the rule's noise coefficient, at most 1; measured worst 1.1e-7 for the rules) plus
// 1e-5 relative in float32 (tests/test_fused.cpp's tolerance) and 1e-12 in float64.
TEST(CudaEmuKernels, FusedUpdateEqualsElementLoop) {
  const ScopedSms one_sm(1);
  const int64_t n = 40003;
  const uint64_t seed = 17;
  std::vector<fused_cases::Case> all = fused_cases::cases();
  all.insert(all.begin(), {FusedRule::kNoise, "noise", 0});
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    const bool f32 = dt == torch::kFloat32;
    for (const auto& c : all) {
      for (bool shifted : {false, true}) {
        const std::string what = std::string(c.name) + (f32 ? " f32" : " f64") + (shifted ? " shifted" : " aligned");
        SCOPED_TRACE(what);
        torch::manual_seed(5);
        const auto s = fused_cases::test_scalars(c.rule);
        const auto th0 = torch::randn({n}, dt), g0 = torch::randn({n}, dt);
        const auto st0 = fused_cases::make_state(c.rule, c.state, n, dt);
        // the generator's launch
        auto gen = cuda_generator(seed);
        auto th = operand(th0, shifted), g = operand(g0, shifted);
        auto st = operands(st0, shifted);
        const int64_t before = cuda_emu::emu().counts.launches;
        kernels::fused_update_cuda(c.rule, th, st, g, s, &gen, nullptr);
        EXPECT_EQ(cuda_emu::emu().counts.launches, before + 1);
        // the host's loop from the stream the launch drew
        auto drawn = cuda_generator(seed);
        const kernels::NoiseStream ns = kernels::cuda_noise_stream(drawn, n);
        EXPECT_EQ(philox_offset(gen), philox_offset(drawn));
        EXPECT_GE(philox_offset(gen), static_cast<uint64_t>((n + 3) / 4));
        auto th_loop = th0.clone(), g_loop = g0.clone();
        auto st_loop = operands(st0, false);
        if (f32) element_loop<float>(c.rule, th_loop, st_loop, g_loop, s, ns);
        else element_loop<double>(c.rule, th_loop, st_loop, g_loop, s, ns);
        EXPECT_TRUE(torch::equal(th, th_loop)) << "θ, worst " << cuda_kernel_checks::max_abs(th, th_loop);
        for (int j = 0; j < c.state; ++j) EXPECT_TRUE(torch::equal(st[j], st_loop[j])) << "state " << j;
        // the graph-safe launch from the step's buffer
        auto host = torch::zeros({kernels::step_params_bytes()}, torch::kUInt8);
        kernels::write_step_params(c.rule, s, ns, dt, host.data_ptr());
        auto th_buf = operand(th0, shifted);
        auto st_buf = operands(st0, shifted);
        kernels::fused_update_cuda(c.rule, th_buf, st_buf, g, kernels::FusedScalars{}, nullptr, host.data_ptr());
        EXPECT_TRUE(torch::equal(th_buf, th)) << "from the buffer";
        for (int j = 0; j < c.state; ++j) EXPECT_TRUE(torch::equal(st_buf[j], st[j])) << "from the buffer, state " << j;
        // the CPU's fused update from the same stream
        auto th_cpu = th0.clone();
        auto st_cpu = operands(st0, false);
        kernels::fused_update_from(c.rule, th_cpu, st_cpu, g0, host);
        const double rtol = f32 ? 1e-5 : 1e-12, atol = 1e-6;
        if (c.rule == FusedRule::kNoise) {  // the normals themselves: at most two float ulps apart
          const auto z = th_cpu.to(torch::kFloat32).to(torch::kFloat64);
          const auto ulp = torch::exp2(torch::floor(torch::log2(z.abs())) - 23);
          EXPECT_LE(((th.to(torch::kFloat64) - z).abs() / ulp).max().item<double>(), 2.0);
        }
        EXPECT_TRUE(torch::allclose(th, th_cpu, rtol, atol)) << "θ against the CPU, worst "
                                                             << cuda_kernel_checks::max_abs(th, th_cpu);
        for (int j = 0; j < c.state; ++j)
          EXPECT_TRUE(torch::allclose(st[j], st_cpu[j], rtol, atol)) << "state " << j << " against the CPU";
      }
    }
  }
  // no generator: the default one's state, advanced
  auto th = torch::zeros({n});
  const uint64_t before = philox_offset(at::cuda::detail::getDefaultCUDAGenerator());
  kernels::fused_update_cuda(FusedRule::kNoise, th, {}, torch::Tensor(), {}, nullptr, nullptr);
  EXPECT_GT(philox_offset(at::cuda::detail::getDefaultCUDAGenerator()), before);
  EXPECT_NEAR(th.mean().item<double>(), 0.0, 5.0 / std::sqrt(static_cast<double>(n)));
}

// The softmax + cross-entropy kernel against log_softmax and nll_loss (tests/cuda_kernel_checks.h), with
// its bias gradient by ATen's column sum, 700 rows: three blocks, the last partly idle; in every order. A
// label outside [0, k) is the kernel's assertion.
TEST(CudaEmuKernels, SoftmaxXentEqualsAten) {
  for (const auto& [name, settings] : cuda_emu::orders()) {
    SCOPED_TRACE(name);
    const cuda_emu::ScopedSettings order(settings);
    cuda_kernel_checks::softmax_xent_equals_aten(torch::kCPU, 700);
  }
  auto f = torch::randn({4, 3});
  auto g = torch::empty({4, 3});
  const auto y = torch::tensor({0, 2, 3, 1}, torch::kInt64);
  try {
    kernels::softmax_xent_backward_cuda(f, y, 1.0, g, torch::Tensor());
    ADD_FAILURE() << "a label of 3 among 3 classes passed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("yi >= 0 && yi < k"), std::string::npos) << e.what();
  }
}

// The images' and labels' gather (kernels/cpu/gather_rows.h) equals index_select bit for bit
// (tests/cuda_kernel_checks.h): 16-byte rows and word rows, narrow rows several to a block, outputs reused.
TEST(CudaEmuKernels, GatherPairEqualsIndexSelect) {
  for (const auto& [name, settings] : cuda_emu::orders()) {
    SCOPED_TRACE(name);
    const cuda_emu::ScopedSettings order(settings);
    cuda_kernel_checks::gather_pair_equals_index_select(torch::kCPU, 400);
  }
  auto x = torch::rand({10, 4});
  auto y = torch::zeros({10}, torch::kInt64);
  torch::Tensor xo, yo;
  try {
    kernels::gather_rows_pair_cuda(xo, x, yo, y, torch::tensor({3, 10}, torch::kInt64));
    ADD_FAILURE() << "row 10 of 10 gathered";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("src >= 0 && src < rows"), std::string::npos) << e.what();
  }
}

// BPMF's gradient kernel (kernels/cuda/bpmf_cuda.h) against autograd on its equations in float64:
//   r = y − (U_u·V_v + a_u + b_v + μ),  nll = τ/2 Σ r² − (n/2) log τ + (n/2) log 2π,
// the gradients of scale · nll added into seeded .grads. 3,000 ratings of 60 users × 45 items (users and
// items repeat, so the atomics add into the same rows from many warps), d = 40 (a lane's two dimensions)
// and d = 6 (idle lanes), 16 blocks (one SM): the grid-stride loop runs 23 or 24 passes; every order. Tolerances
// as on the GPU (tests/test_bpmf.cpp): the nll to 1e-6 relative, the gradients to 1e-5 of their largest
// entry (float32 sums of ~100 terms a row in the order the warps run).
TEST(CudaEmuKernels, BpmfBackwardEqualsAutograd) {
  const ScopedSms one_sm(1);
  const double scale = 33.0;
  for (int64_t d : {40, 6}) {
    for (const auto& [name, settings] : cuda_emu::orders()) {
      SCOPED_TRACE(name + ", d = " + std::to_string(d));
      const cuda_emu::ScopedSettings order(settings);
      torch::manual_seed(10 + d);
      const int64_t users = 60, items = 45, n = 3000;
      auto uv = torch::stack({torch::randint(0, users, {n}, torch::kInt64), torch::randint(0, items, {n}, torch::kInt64)}, 1);
      auto y = torch::rand({n}) * 4 + 1;
      auto U = torch::randn({users, d}) * 0.5, V = torch::randn({items, d}) * 0.5;
      auto a = torch::randn({users}) * 0.5, b = torch::randn({items}) * 0.5;
      auto mu = torch::full({}, 3.2f), tau = torch::full({}, 1.7f);
      std::vector<torch::Tensor> params{U, V, a, b};
      std::vector<torch::Tensor> want, grads;
      for (auto& p : params) {
        auto p64 = p.to(torch::kFloat64).requires_grad_(true);
        want.push_back(p64);
        grads.push_back(0.5 * p);  // seeded, as a prior's gradient would be
      }
      const auto u = uv.select(1, 0), v = uv.select(1, 1);
      const double t = tau.item<double>();
      auto r = y.to(torch::kFloat64) -
               ((want[0].index_select(0, u) * want[1].index_select(0, v)).sum(1) + want[2].index_select(0, u) +
                want[3].index_select(0, v) + mu.item<double>());
      auto nll = 0.5 * t * r.pow(2).sum() - 0.5 * n * std::log(t) + n * 0.5 * std::log(2 * M_PI);
      (nll * scale).backward();
      auto got = kernels::bpmf_backward_cuda(uv, y, U, V, a, b, grads[0], grads[1], grads[2], grads[3], mu, tau, scale);
      EXPECT_NEAR(got.item<double>(), nll.item<double>(), 1e-6 * std::abs(nll.item<double>()));
      for (size_t i = 0; i < params.size(); ++i) {
        const auto expected = want[i].grad() + 0.5 * params[i].to(torch::kFloat64);
        EXPECT_LE(cuda_kernel_checks::max_abs(grads[i], expected), 1e-5 * expected.abs().max().item<double>()) << i;
      }
    }
  }
  // no ratings: the nll of none is 0, nothing added; a rating outside the tables is the kernel's assertion
  auto U = torch::zeros({2, 3}), V = torch::zeros({2, 3}), a = torch::zeros({2}), b = torch::zeros({2});
  auto gU = torch::zeros({2, 3}), gV = torch::zeros({2, 3}), ga = torch::zeros({2}), gb = torch::zeros({2});
  auto mu = torch::zeros({}), tau = torch::ones({});
  auto none = kernels::bpmf_backward_cuda(torch::zeros({0, 2}, torch::kInt64), torch::zeros({0}), U, V, a, b, gU, gV,
                                          ga, gb, mu, tau, 1.0);
  EXPECT_EQ(none.item<double>(), 0.0);
  EXPECT_EQ(gU.abs().sum().item<double>(), 0.0);
  try {
    kernels::bpmf_backward_cuda(torch::tensor({{0, 1}, {1, 2}}, torch::kInt64), torch::ones({2}), U, V, a, b, gU, gV, ga,
                                gb, mu, tau, 1.0);
    ADD_FAILURE() << "item 2 of 2 passed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("v < p.items"), std::string::npos) << e.what();
  }
}
