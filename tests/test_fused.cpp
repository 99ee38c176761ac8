// Fused updates (kernels/update/fused_update.h), their noise (kernels/update/philox.h) and flat parameter groups
// (samplers/flat_params.h): golden values for Philox, accuracy of the float math, the noise's
// distribution, fused == reference update with the same noise (every rule, float32 and float64),
// fused == reference sampler trajectories, and flat-buffer bookkeeping.
#include <cstring>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "compat.h"
#include "core/option_map.h"
#include "kernels/update/fused_elementwise.h"
#include "kernels/update/fused_update.h"
#include "kernels/update/philox.h"
#include "kernels/update/philox_fill.h"
#include "kernels/update/update_rules.h"
#include "samplers/flat_params.h"
#include "samplers/registry.h"
#include "kernel_cases.h"
#include "sampler_test_util.h"

using namespace sgmcmc;
using kernels::FusedRule;
using kernels::FusedScalars;
using kernels::NoiseStream;
using fused_cases::Case;
using fused_cases::cases;
using fused_cases::make_state;
using fused_cases::test_scalars;

namespace {

// Random123's known-answer vectors for philox4x32_10 (kat_vectors: zero, all-ones, π digits).
TEST(Philox, KnownAnswers) {
  auto r = kernels::philox4x32_10({0, 0, 0, 0}, 0, 0);
  EXPECT_EQ(r.x, 0x6627e8d5u);
  EXPECT_EQ(r.y, 0xe169c58du);
  EXPECT_EQ(r.z, 0xbc57ac4cu);
  EXPECT_EQ(r.w, 0x9b00dbd8u);
  r = kernels::philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(r.x, 0x408f276du);
  EXPECT_EQ(r.y, 0x41c83b0eu);
  EXPECT_EQ(r.z, 0xa20bc7c6u);
  EXPECT_EQ(r.w, 0x6d5451fdu);
  r = kernels::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(r.x, 0xd16cfe09u);
  EXPECT_EQ(r.y, 0x94fdccebu);
  EXPECT_EQ(r.z, 0x5001e420u);
  EXPECT_EQ(r.w, 0x24126ea1u);
}

// The branch-free float log, sincos and exp against double-precision std:: functions. Bounds: a few
// float ulps (ε = 6e-8): measured 7.8e-8 relative for log over [2⁻³³, 1], 9.1e-8 absolute for
// sin/cos(2πt) over a 2⁻²⁴ grid of [0, 1], 8.0e-8 relative for exp over [−87, 88].
TEST(Philox, FloatMathAccuracy) {
  double max_rel = 0;
  for (double t = -33; t <= 0; t += 1e-4) {
    const float x = static_cast<float>(std::exp2(t));
    const double exact = std::log(static_cast<double>(x));
    if (exact == 0) {
      EXPECT_EQ(kernels::fast_logf(x), 0.0f);
      continue;
    }
    max_rel = std::max(max_rel, std::fabs(kernels::fast_logf(x) - exact) / std::fabs(exact));
  }
  EXPECT_LT(max_rel, 2e-7);
  double max_abs = 0;
  for (int64_t i = 0; i <= (1 << 22); ++i) {
    const float t = static_cast<float>(i) / (1 << 22);
    float s, c;
    kernels::sincos_2pi(t, &s, &c);
    const double a = 2 * M_PI * static_cast<double>(t);
    max_abs = std::max({max_abs, std::fabs(s - std::sin(a)), std::fabs(c - std::cos(a))});
  }
  EXPECT_LT(max_abs, 2e-7);
  // exp (the mSGNHT-S and Santa decays on the CPU): measured 8.0e-8 relative over [−87, 88]
  double max_rel_exp = 0;
  for (double x = -87; x <= 88; x += 1e-3) {
    const float xf = static_cast<float>(x);
    const double exact = std::exp(static_cast<double>(xf));
    max_rel_exp = std::max(max_rel_exp, std::fabs(kernels::fast_expf(xf) - exact) / exact);
  }
  EXPECT_LT(max_rel_exp, 2e-7);
  EXPECT_EQ(kernels::fast_expf(0.0f), 1.0f);
}

// Moments, tails and independence of the noise, n = 2²⁰ normals per stream. Each bound is ~5
// standard errors of its statistic under N(0,1) iid, so a correct generator fails with
// probability < 1e-6 per check (and the seeds are fixed): mean 5/√n; variance 5·√(2/n);
// E z⁴ = 3 with sd √(96/n); P(|z| > 3) = 0.0026998 with sd √(p(1−p)/n); correlations 5/√n;
// Kolmogorov–Smirnov D < 1.95/√n (the 0.1 % critical value).
TEST(Philox, NoiseDistribution) {
  const int64_t n = 1 << 20;
  auto z = kernels::philox_normal(n, {12345, 0}, torch::kFloat64);
  const double sn = std::sqrt(static_cast<double>(n));
  EXPECT_NEAR(z.mean().item<double>(), 0.0, 5 / sn);
  EXPECT_NEAR(z.var().item<double>(), 1.0, 5 * std::sqrt(2.0) / sn);
  EXPECT_NEAR(z.pow(4).mean().item<double>(), 3.0, 5 * std::sqrt(96.0) / sn);
  const double p3 = 0.0026997960632601866;
  EXPECT_NEAR((z.abs() > 3).to(torch::kFloat64).mean().item<double>(), p3, 5 * std::sqrt(p3 * (1 - p3)) / sn);
  EXPECT_LT(z.abs().max().item<double>(), 6.9);  // |z| ≤ sqrt(−2 ln 2⁻³³)
  // lag-1 and lag-4 (the next Philox block) correlations, and across keys and offsets
  auto corr = [&](const torch::Tensor& a, const torch::Tensor& b) { return (a * b).mean().item<double>(); };
  EXPECT_NEAR(corr(z.narrow(0, 0, n - 1), z.narrow(0, 1, n - 1)), 0.0, 5 / sn);
  EXPECT_NEAR(corr(z.narrow(0, 0, n - 4), z.narrow(0, 4, n - 4)), 0.0, 5 / sn);
  EXPECT_NEAR(corr(z, kernels::philox_normal(n, {12346, 0}, torch::kFloat64)), 0.0, 5 / sn);
  EXPECT_NEAR(corr(z, kernels::philox_normal(n, {12345, 1}, torch::kFloat64)), 0.0, 5 / sn);
  // KS distance to Φ
  auto sorted = std::get<0>(z.sort());
  auto cdf = 0.5 * (1 + torch::erf(sorted / std::sqrt(2.0)));
  auto i = torch::arange(1, n + 1, torch::kFloat64) / static_cast<double>(n);
  const double d = std::max((i - cdf).max().item<double>(), (cdf - (i - 1.0 / n)).max().item<double>());
  EXPECT_LT(d, 1.95 / sn);
}

// Element i's noise depends only on (key, offset, i): not on the buffer length or thread count.
TEST(Philox, NoiseIsCounterBased) {
  auto a = kernels::philox_normal(100003, {7, 3}, torch::kFloat32);
  auto b = kernels::philox_normal(5001, {7, 3}, torch::kFloat32);
  EXPECT_TRUE(torch::equal(a.narrow(0, 0, 5001), b));
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  auto c = kernels::philox_normal(100003, {7, 3}, torch::kFloat32);
  torch::set_num_threads(std::max(2, threads));
  auto d = kernels::philox_normal(100003, {7, 3}, torch::kFloat32);
  torch::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(a, c));
  EXPECT_TRUE(torch::equal(a, d));
  // float64 output holds the same numbers
  EXPECT_TRUE(torch::equal(kernels::philox_normal(5001, {7, 3}, torch::kFloat64).to(torch::kFloat32), b));
}

// The AVX-512 noise loop gives the portable loop's bits: the counter's low word wrapping inside a
// chain of eight blocks (the high word's carry), a non-zero offset's both words, 64-bit keys, and
// lengths that take the 32-block loop, the 16-block loop and the portable rest (1000 = 31·32 + 8;
// 80 = 2·32 + 16; 47 = 32 + 15; 23 = 16 + 7). Skipped on CPUs without AVX-512.
TEST(PhiloxFill, Avx512EqualsPortable) {
  if (!kernels::detail::philox_avx512_available()) GTEST_SKIP() << "no AVX-512 on this CPU or in this build";
  for (int64_t nblocks : {int64_t{1000}, int64_t{80}, int64_t{47}, int64_t{23}}) {
    std::vector<float> a(4 * nblocks), b(4 * nblocks), c(4 * nblocks);
    for (uint64_t first : {uint64_t{0}, uint64_t{0xfffffff5u}, uint64_t{0x1234567fffffffa0ull}})
      for (uint64_t key : {uint64_t{0}, uint64_t{0xfedcba9876543210ull}})
        for (uint64_t offset : {uint64_t{0}, uint64_t{0x0000000700000003ull}}) {
          kernels::detail::philox_fill_portable(a.data(), nblocks, first, key, offset);
          EXPECT_EQ(kernels::detail::philox_fill_avx512(b.data(), nblocks, first, key, offset), nblocks / 16 * 16);
          kernels::philox_fill(c.data(), nblocks, first, key, offset);
          EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(float) * 4 * (nblocks / 16 * 16)), 0)
              << "blocks " << nblocks << " first " << first << " key " << key << " offset " << offset;
          EXPECT_EQ(std::memcmp(a.data(), c.data(), sizeof(float) * 4 * nblocks), 0);
        }
  }
}

// ---------------------------------------------------------------------------------------------
// Fused kernel == reference rule (kernels/update/update_rules.h) with the same noise.
// Tolerance: the two compute the same expression in the same order in the same precision; they
// differ only where the compiler contracts a·b + c into an FMA on one side (ATen's vectorized
// kernels vs our loop), i.e. by one rounding of the operands: |Δ| ≤ a few ε·|terms|. We allow
// 1e-5 relative + 1e-6 absolute for float32 (ε = 6e-8, ~100 ulps) and 1e-12 / 1e-13 for float64.


void reference(FusedRule rule, torch::Tensor& th, std::vector<torch::Tensor>& st, const torch::Tensor& g,
               const torch::Tensor& z, const FusedScalars& s) {
  switch (rule) {
    case FusedRule::kSgld:
      rules::sgld_update(th, g, z, s.lr, s.temperature);
      break;
    case FusedRule::kPsgld:
      rules::psgld_update(th, st[0], g, z, s.lr, s.temperature, s.alpha, s.eps, s.first);
      break;
    case FusedRule::kSghmcEuler:
    case FusedRule::kSghmcSsi: {
      torch::Tensor bh;
      if (s.beta_hat > 0) bh = torch::full_like(th, s.beta_hat);
      if (rule == FusedRule::kSghmcSsi) {
        rules::sghmc_ssi_update(th, st[0], g, z, s.lr, s.alpha, s.temperature, bh);
      } else {
        rules::sghmc_euler_update(th, st[0], g, z, s.lr, s.alpha, s.temperature, bh);
      }
      break;
    }
    case FusedRule::kMsgnhtEuler:
      rules::msgnht_euler_update(th, st[0], st[1], g, z, s.lr, s.diffusion, s.temperature);
      break;
    case FusedRule::kMsgnhtSsi:
      rules::msgnht_ssi_update(th, st[0], st[1], g, z, s.lr, s.diffusion, s.temperature);
      break;
    case FusedRule::kSantaEuler:
    case FusedRule::kSantaSsi: {
      const auto ss = kernels::santa_scalars(s);
      const auto zz = s.exploring ? z : torch::zeros_like(z);
      if (rule == FusedRule::kSantaSsi) {
        rules::santa_ssi_update(th, st[0], st[1], st[2], st[3], g, zz, ss);
      } else {
        rules::santa_euler_update(th, st[0], st[1], st[2], st[3], g, zz, ss);
      }
      break;
    }
    default:
      FAIL() << "no reference";
  }
}


TEST(Fused, EqualsReferenceWithSameNoise) {
  torch::manual_seed(3);
  const int64_t n = 10007;  // not a multiple of 4 or of the tile
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    const bool f32 = dt == torch::kFloat32;
    const double rtol = f32 ? 1e-5 : 1e-12, atol = f32 ? 1e-6 : 1e-13;
    for (const auto& c : cases()) {
      // variants: first step / later step; SGHMC with β̂; Santa refinement and precond term;
      // Santa's constant-G₂ noise (the authors' code)
      for (int variant = 0; variant < 4; ++variant) {
        FusedScalars s;
        s.lr = 1e-3;
        s.temperature = variant == 2 ? 0.5 : 1.0;
        s.alpha = c.rule == FusedRule::kPsgld ? 0.99 : 0.1;
        s.beta_hat = variant == 1 ? 0.02 : 0.0;
        s.diffusion = 0.3;
        s.eps = c.rule == FusedRule::kPsgld ? 1e-5 : 1e-3;
        s.sigma = 0.99;
        s.data_size = 50;
        s.beta = 2.0;
        s.first = variant == 0;
        s.exploring = variant != 1;
        s.precond_term = variant == 2;
        s.noise_g2 = variant == 3 ? 0.7 : 0.0;
        s.alpha_fixed_point = variant == 0;  // first step: α ← asinh(g)
        const NoiseStream ns{0x9e3779b97f4a7c15ull + static_cast<uint64_t>(variant), 11};
        auto th = torch::randn({n}, dt);
        auto g = torch::randn({n}, dt) * 2;
        auto st = make_state(c.rule, c.state, n, dt);
        auto th_ref = th.clone();
        const auto th0 = th.clone();
        std::vector<torch::Tensor> st_ref;
        for (auto& t : st) st_ref.push_back(t.clone());
        auto th_buf = th.clone();
        std::vector<torch::Tensor> st_buf;
        for (auto& t : st) st_buf.push_back(t.clone());
        auto z = kernels::philox_normal(n, ns, dt);
        reference(c.rule, th_ref, st_ref, g, z, s);
        kernels::fused_update(c.rule, th, st, g, s, ns);
        const std::string what = std::string(c.name) + (f32 ? " f32" : " f64") + " variant " + std::to_string(variant);
        // The same step with its scalars and stream read from a step-parameter buffer (the graph-safe
        // launch): the same loop on the same numbers, so bit for bit. The buffer first holds another
        // step's scalars, then is rewritten: the launch reads what it holds when it runs.
        auto buf = torch::zeros({kernels::step_params_bytes()}, torch::kUInt8);
        FusedScalars other = s;
        other.lr = 0.5;
        kernels::write_step_params(c.rule, other, {1, 2}, dt, buf.data_ptr());
        kernels::write_step_params(c.rule, s, ns, dt, buf.data_ptr());
        kernels::fused_update_from(c.rule, th_buf, st_buf, g, buf);
        EXPECT_TRUE(torch::equal(th_buf, th)) << what << ": from the buffer, θ differs";
        for (int j = 0; j < c.state; ++j) EXPECT_TRUE(torch::equal(st_buf[j], st[j])) << what << ": from the buffer, state " << j;
        EXPECT_TRUE(torch::allclose(th, th_ref, rtol, atol))
            << what << ": θ max |Δ| " << (th - th_ref).abs().max().item<double>();
        for (int j = 0; j < c.state; ++j)
          EXPECT_TRUE(torch::allclose(st[j], st_ref[j], rtol, atol))
              << what << ": state " << j << " max |Δ| " << (st[j] - st_ref[j]).abs().max().item<double>();
        EXPECT_FALSE(torch::allclose(th, th0)) << what << ": θ did not move";
      }
    }
  }
}

// On CUDA (skipped without it): the kernel against the reference rules on the device, the noise
// taken from the same generator state (philox_normal advances it exactly as the kernel does).
// The prior folded into the update (kernels::PriorFold): the kernel reads g + λθ over the
// segments and g elsewhere, which must be the update on that gradient formed beforehand (ATen: θ·λ,
// then the sum; the kernel's two roundings in the same order), bit for bit, for every rule, both
// dtypes, first and later steps. Segments start and end inside tiles and inside 4-element noise
// blocks, one is a single element, and the gaps read g as it is.
TEST(Fused, PriorFoldEqualsFoldedGradient) {
  torch::manual_seed(5);
  const int64_t n = 10007;
  const kernels::PriorFold fold = {{3, 1497, 0.7}, {1500, 1, 2.0}, {2001, 5999, 1e-3}, {9000, 1007, 5.0}};
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    for (const auto& c : cases()) {
      for (int variant = 0; variant < 2; ++variant) {
        FusedScalars s = test_scalars(c.rule);
        s.first = variant == 0;
        s.exploring = true;
        const NoiseStream ns{0x51ed27u + static_cast<uint64_t>(variant), 3};
        auto th = torch::randn({n}, dt);
        auto g = torch::randn({n}, dt);
        auto st = make_state(c.rule, c.state, n, dt);
        auto th_ref = th.clone();
        std::vector<torch::Tensor> st_ref;
        for (auto& t : st) st_ref.push_back(t.clone());
        auto g_full = g.clone();
        for (const auto& seg : fold)
          g_full.narrow(0, seg.begin, seg.n).add_(th.narrow(0, seg.begin, seg.n).mul(seg.lambda));
        kernels::fused_update(c.rule, th_ref, st_ref, g_full, s, ns);
        kernels::fused_update(c.rule, th, st, g, s, ns, nullptr, &fold);
        const std::string what = std::string(c.name) + (dt == torch::kFloat32 ? " f32" : " f64") + " variant " +
                                 std::to_string(variant);
        EXPECT_TRUE(torch::equal(th, th_ref)) << what << ": θ max |Δ| " << (th - th_ref).abs().max().item<double>();
        for (int j = 0; j < c.state; ++j) EXPECT_TRUE(torch::equal(st[j], st_ref[j])) << what << ": state " << j;
      }
    }
  }
  // malformed folds: unsorted or overlapping segments, a segment past θ's end
  auto th = torch::zeros({8});
  const auto g = torch::zeros({8});
  for (const kernels::PriorFold& bad : {kernels::PriorFold{{4, 2, 1.0}, {0, 2, 1.0}}, kernels::PriorFold{{0, 5, 1.0}, {4, 2, 1.0}},
                                        kernels::PriorFold{{6, 3, 1.0}}})
    EXPECT_THROW(kernels::fused_update(FusedRule::kSgld, th, {}, g, {}, {}, nullptr, &bad), std::invalid_argument);
}

TEST(Fused, CudaEqualsReferenceWithSameNoise) {
  if (!compat::cuda_available() || !kernels::fused_supported(torch::zeros({1}, torch::Device(torch::kCUDA))))
    GTEST_SKIP() << "needs CUDA and a build with -DSGMCMC_CUDA=ON";
  const torch::Device dev(torch::kCUDA);
  const int64_t n = 1 << 20 | 3;
  for (const auto& c : cases()) {
    FusedScalars s = test_scalars(c.rule);
    auto gen = compat::make_generator(dev, 17);
    const auto gen_state = compat::generator_state(gen);
    auto th = torch::randn({n}, torch::kFloat32).to(dev);
    auto g = torch::randn({n}, torch::kFloat32).to(dev);
    std::vector<torch::Tensor> st;
    for (auto& t : make_state(c.rule, c.state, n, torch::kFloat32)) st.push_back(t.to(dev));
    auto th_ref = th.clone();
    std::vector<torch::Tensor> st_ref;
    for (auto& t : st) st_ref.push_back(t.clone());
    auto z = kernels::philox_normal(n, {}, torch::TensorOptions().dtype(torch::kFloat32).device(dev), &gen);
    reference(c.rule, th_ref, st_ref, g, z, s);
    compat::set_generator_state(gen, gen_state);
    auto th_buf = th.clone();
    std::vector<torch::Tensor> st_buf;
    for (auto& t : st) st_buf.push_back(t.clone());
    kernels::fused_update(c.rule, th, st, g, s, {}, &gen);
    // the graph-safe launch (scalars and the noise's key and offset read from a device buffer, the latter
    // drawn on the host from the same generator state): bit for bit, and the generator advanced as far
    compat::set_generator_state(gen, gen_state);
    auto host = torch::zeros({kernels::step_params_bytes()}, torch::kUInt8);
    kernels::NoiseStream noise;
#if defined(SGMCMC_WITH_CUDA)
    noise = kernels::cuda_noise_stream(gen, n);
#endif
    const auto after_eager = compat::generator_state(gen);
    kernels::write_step_params(c.rule, s, noise, torch::kFloat32, host.data_ptr());
    kernels::fused_update_from(c.rule, th_buf, st_buf, g, host.to(dev));
    EXPECT_TRUE(torch::equal(compat::generator_state(gen), after_eager)) << c.name << ": the launch drew nothing more";
    EXPECT_TRUE(torch::equal(th_buf, th)) << c.name << ": from the buffer";
    for (int j = 0; j < c.state; ++j) EXPECT_TRUE(torch::equal(st_buf[j], st[j])) << c.name << ": from the buffer, state " << j;
    EXPECT_TRUE(torch::allclose(th, th_ref, 1e-5, 1e-6)) << c.name << " max |Δ| " << (th - th_ref).abs().max().item<double>();
    for (int j = 0; j < c.state; ++j) EXPECT_TRUE(torch::allclose(st[j], st_ref[j], 1e-5, 1e-6)) << c.name << " state " << j;
    // the noise is standard normal on the device too
    EXPECT_NEAR(z.mean().item<double>(), 0.0, 5.0 / 1024);
    EXPECT_NEAR(z.var().item<double>(), 1.0, 5.0 * std::sqrt(2.0) / 1024);
  }
}

TEST(Fused, RejectsMismatchedOperands) {
  auto th = torch::zeros({8});
  auto g = torch::zeros({8});
  EXPECT_THROW(kernels::fused_update(FusedRule::kSghmcEuler, th, {}, g, {}, {}), std::invalid_argument);
  EXPECT_THROW(kernels::fused_update(FusedRule::kSgld, th, {}, torch::zeros({7}), {}, {}), std::invalid_argument);
  EXPECT_THROW(kernels::fused_update(FusedRule::kSgld, th, {}, torch::zeros({8}, torch::kFloat64), {}, {}),
               std::invalid_argument);
  auto strided = torch::zeros({16}).slice(0, 0, 16, 2);
  EXPECT_THROW(kernels::fused_update(FusedRule::kSgld, strided, {}, g, {}, {}), std::invalid_argument);
  // step-parameter buffers: uint8, large enough, on θ's device
  EXPECT_THROW(kernels::fused_update_from(FusedRule::kSgld, th, {}, g, torch::zeros({kernels::step_params_bytes()})),
               std::invalid_argument);
  EXPECT_THROW(kernels::fused_update_from(FusedRule::kSgld, th, {}, g,
                                          torch::zeros({kernels::step_params_bytes() - 1}, torch::kUInt8)),
               std::invalid_argument);
  EXPECT_THROW(kernels::fused_update_from(FusedRule::kSgld, th, {}, g, torch::Tensor()), std::invalid_argument);
  auto half = torch::zeros({8}, torch::kFloat16);
  EXPECT_FALSE(kernels::fused_supported(half));
}

// ---------------------------------------------------------------------------------------------
// Flat groups.

TEST(FlatGroup, ParametersBecomeViewsAndAutogradAccumulatesIntoTheBuffer) {
  torch::manual_seed(1);
  torch::nn::Linear lin(5, 3);
  auto params = lin->parameters();
  const auto w0 = params[0].detach().clone(), b0 = params[1].detach().clone();
  FlatGroup fg(params);
  EXPECT_EQ(fg.numel(), 18);
  EXPECT_TRUE(torch::equal(lin->weight.detach(), w0));  // values kept
  EXPECT_TRUE(torch::equal(lin->bias.detach(), b0));
  EXPECT_EQ(lin->weight.data_ptr(), fg.data().data_ptr());
  EXPECT_EQ(static_cast<float*>(lin->bias.data_ptr()), fg.data().data_ptr<float>() + 15);
  auto x = torch::randn({4, 5});
  lin->forward(x).sum().backward();
  // dL/dW = Σ_rows x, dL/db = 4
  EXPECT_TRUE(torch::allclose(fg.grad().narrow(0, 0, 15).view({3, 5}), x.sum(0).expand({3, 5})));
  EXPECT_TRUE(torch::allclose(fg.grad().narrow(0, 15, 3), torch::full({3}, 4.0f)));
  EXPECT_EQ(lin->weight.grad().data_ptr(), fg.grad().data_ptr());
  // a second backward accumulates in place
  lin->forward(x).sum().backward();
  EXPECT_TRUE(torch::allclose(fg.grad().narrow(0, 15, 3), torch::full({3}, 8.0f)));
  EXPECT_FALSE(fg.rebind());
}

TEST(FlatGroup, RebindRestoresReplacedStorageAndGradients) {
  torch::nn::Linear lin(4, 2);
  auto params = lin->parameters();
  FlatGroup fg(params);
  {
    torch::NoGradGuard ng;
    lin->weight.set_(torch::full({2, 4}, 3.0f));  // what InputArchive::read does
  }
  lin->bias.mutable_grad() = torch::full({2}, 5.0f);
  EXPECT_TRUE(fg.rebind());
  EXPECT_EQ(lin->weight.data_ptr(), fg.data().data_ptr());
  EXPECT_TRUE(torch::equal(fg.data().narrow(0, 0, 8), torch::full({8}, 3.0f)));
  EXPECT_TRUE(torch::equal(fg.grad().narrow(0, 8, 2), torch::full({2}, 5.0f)));
  EXPECT_FALSE(fg.rebind());
}

// A parameter whose storage was replaced by one of another size cannot go back into the buffer.
TEST(FlatGroup, RebindRejectsAResizedParameter) {
  torch::nn::Linear lin(4, 2);
  FlatGroup fg(lin->parameters());
  {
    torch::NoGradGuard ng;
    lin->weight.set_(torch::zeros({3, 4}));
  }
  EXPECT_THROW(fg.rebind(), std::logic_error);
}

TEST(FlatGroup, IneligibleGroups) {
  auto a = torch::zeros({3});
  EXPECT_FALSE(FlatGroup::eligible({}));
  EXPECT_FALSE(FlatGroup::eligible({a, a}));  // listed twice
  EXPECT_FALSE(FlatGroup::eligible({a, torch::zeros({3}, torch::kFloat64)}));
  EXPECT_FALSE(FlatGroup::eligible({torch::zeros({3}, torch::kInt64)}));
  EXPECT_TRUE(FlatGroup::eligible({a, torch::zeros({2, 2})}));
}

// ---------------------------------------------------------------------------------------------
// Sampler level: the fused path and the per-parameter ATen path (set_fused(false)) draw the same
// noise and give the same trajectory. Two groups (lr_scale 1 and 0.5), three parameters of
// different shapes, a quadratic potential ∇Ũ = θ ⊙ c refreshed each step, 25 steps.
// Tolerance: per-step differences are rounding-level (see above); over 25 steps of a contracting
// (or weakly expanding) map they stay within ~25× that, well below 1e-4 relative for float32.

TEST(Fused, SamplerTrajectoriesMatchReferencePath) {
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    const double rtol = dt == torch::kFloat32 ? 1e-4 : 1e-10, atol = dt == torch::kFloat32 ? 1e-5 : 1e-11;
    for (const auto& [name, kv] : test::fused_sampler_configs()) {
      const auto opts = test::options(kv);
      auto fused = test::make_two_group_run(name, opts, true, dt);
      auto ref = test::make_two_group_run(name, opts, false, dt);
      ASSERT_TRUE(fused.sampler->flat()) << name;
      test::run_quadratic_steps(fused, 25);
      test::run_quadratic_steps(ref, 25);
      for (size_t k = 0; k < fused.params.size(); ++k) {
        EXPECT_TRUE(torch::allclose(fused.params[k], ref.params[k], rtol, atol))
            << name << " param " << k << " max |Δ| " << (fused.params[k] - ref.params[k]).abs().max().item<double>();
        EXPECT_TRUE(torch::isfinite(fused.params[k]).all().item<bool>()) << name;
      }
      // the chain moved (the test is not comparing two frozen states)
      auto start = test::make_two_group_run(name, opts, true, dt);
      EXPECT_FALSE(torch::allclose(fused.params[0], start.params[0], 1e-6, 1e-7)) << name;
      // state agrees too (through the samplers' diagnostics: thermostat / preconditioner means)
      for (const auto& [key, value] : fused.sampler->diagnostics())
        EXPECT_NEAR(value, ref.sampler->diagnostics().at(key), 1e-4 * (1 + std::fabs(value))) << name << " " << key;
    }
  }
}

// Switching paths mid-run keeps the random stream aligned: fused for 10 steps then reference for
// 10 equals reference for 20.
TEST(Fused, SwitchingPathsMidRunKeepsTheStream) {
  const auto opts = test::options({{"lr", "1e-3"}, {"alpha", "0.1"}});
  auto mixed = test::make_two_group_run("sghmc", opts, true, torch::kFloat64);
  auto ref = test::make_two_group_run("sghmc", opts, false, torch::kFloat64);
  test::run_quadratic_steps(mixed, 10);
  mixed.sampler->set_fused(false);
  test::run_quadratic_steps(mixed, 10);
  test::run_quadratic_steps(ref, 20);
  for (size_t k = 0; k < ref.params.size(); ++k)
    EXPECT_TRUE(torch::allclose(mixed.params[k], ref.params[k], 1e-10, 1e-11)) << k;
}

// The fused path updates the model's own parameters (they are views into the flat buffer), and a
// parameter whose storage is replaced between steps (as torch::load does) is picked up.
TEST(Fused, UpdatesModelParametersThroughViews) {
  torch::manual_seed(5);
  torch::nn::Linear lin(6, 4);
  OptionMap opts("test");
  opts.set("lr", "1e-2");
  auto sampler = make_sampler("sgld", {ParamGroup(lin->parameters())}, opts, compat::make_generator(torch::kCPU, 1));
  ASSERT_TRUE(sampler->flat());
  const auto before = lin->weight.detach().clone();
  sampler->zero_grad();
  lin->forward(torch::randn({8, 6})).pow(2).sum().backward();
  sampler->step();
  EXPECT_FALSE(torch::equal(lin->weight.detach(), before));
  {
    torch::NoGradGuard ng;
    lin->weight.set_(torch::zeros({4, 6}));
  }
  sampler->zero_grad();
  sampler->step();  // zero gradient: θ = 0 + sqrt(2η) ξ
  const double sd = lin->weight.detach().std().item<double>();
  EXPECT_GT(sd, 0.05);  // sqrt(2·0.01) = 0.141; 24 draws
  EXPECT_LT(sd, 0.3);
}

}  // namespace

// The CUDA kernel's vectorized body (fused_block4: four elements through registers, one load and one
// store per array) against the element loop it replaces, bit for bit, for every rule, both dtypes and
// both first-step cases (Santa: exploring with the preconditioner term, and refining), run here on the
// CPU with the same header code; only its 16-byte loads and stores are CUDA-only.
namespace {

#define SGMCMC_EACH_RULE(X)                                                                       \
  X(kNoise) X(kSgld) X(kPsgld) X(kSghmcEuler) X(kSghmcSsi) X(kMsgnhtEuler) X(kMsgnhtSsi) X(kSantaEuler) \
  X(kSantaSsi)

template <typename T>
void dispatch_element(FusedRule r, T* th, T* s0, T* s1, T* s2, T* s3, const T* g, int64_t i, float z,
                      const kernels::FusedCoefs<T>& k) {
  switch (r) {
#define X(R) case FusedRule::R: kernels::fused_element<FusedRule::R, T>(th, s0, s1, s2, s3, g, i, z, k); break;
    SGMCMC_EACH_RULE(X)
#undef X
  }
}

template <typename T>
void dispatch_block4(FusedRule r, T* th, T* s0, T* s1, T* s2, T* s3, const T* g, int64_t i, const float (&z)[4],
                     const kernels::FusedCoefs<T>& k) {
  switch (r) {
#define X(R) case FusedRule::R: kernels::fused_block4<FusedRule::R, T>(th, s0, s1, s2, s3, g, i, z, k); break;
    SGMCMC_EACH_RULE(X)
#undef X
  }
}

template <typename T>
void block4_case(const Case& c, const FusedScalars& s, torch::Dtype dt) {
  const int64_t n = 4 * 257;
  auto th = torch::randn({n}, dt), g = torch::randn({n}, dt), z = torch::randn({n}, torch::kFloat32);
  auto st = make_state(c.rule, c.state, n, dt);
  auto th_b = th.clone();
  std::vector<torch::Tensor> st_b;
  for (auto& t : st) st_b.push_back(t.clone());
  const auto k = kernels::make_coefs<T>(c.rule, s);
  auto ptr = [](std::vector<torch::Tensor>& v, size_t j) { return j < v.size() ? v[j].data_ptr<T>() : nullptr; };
  const float* zp = z.data_ptr<float>();
  for (int64_t i = 0; i < n; i += 4) {
    const float zs[4] = {zp[i], zp[i + 1], zp[i + 2], zp[i + 3]};
    for (int j = 0; j < 4; ++j)
      dispatch_element(c.rule, th.data_ptr<T>(), ptr(st, 0), ptr(st, 1), ptr(st, 2), ptr(st, 3), g.data_ptr<T>(),
                       i + j, zs[j], k);
    dispatch_block4(c.rule, th_b.data_ptr<T>(), ptr(st_b, 0), ptr(st_b, 1), ptr(st_b, 2), ptr(st_b, 3),
                    g.data_ptr<T>(), i, zs, k);
  }
  EXPECT_TRUE(torch::equal(th, th_b)) << c.name;
  for (size_t j = 0; j < st.size(); ++j) EXPECT_TRUE(torch::equal(st[j], st_b[j])) << c.name << " state " << j;
}

}  // namespace

TEST(Fused, Block4EqualsElementLoop) {
  torch::manual_seed(11);
  for (const bool first : {false, true}) {
    for (const auto& c : cases()) {
      FusedScalars s = test_scalars(c.rule);
      s.first = first;
      s.precond_term = first;  // Santa: the exploration drive with and without its preconditioner term
      s.exploring = first || c.rule == FusedRule::kSantaSsi;
      s.alpha_fixed_point = first;
      block4_case<float>(c, s, torch::kFloat32);
      block4_case<double>(c, s, torch::kFloat64);
    }
  }
}
