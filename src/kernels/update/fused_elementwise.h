// The per-element bodies of the fused updates (kernels/update/fused_update.h), shared by the CPU loop
// (fused_update.cpp) and the CUDA kernel (fused_update_cuda.cu). Each body is the arithmetic of its
// reference in kernels/update/update_rules.cpp, in the same order, with the step's scalars folded into
// `FusedCoefs` once per call on the host.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/update/fused_update.h"
#include "kernels/update/philox.h"

namespace sgmcmc::kernels {

// Per-call coefficients, in the tensors' scalar type.
template <typename T>
struct FusedCoefs {
  T a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, i = 0;
  bool first = false, exploring = true, precond_term = false, alpha_fixed_point = false;
};

SGMCMC_HD float exp_hd(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  return fast_expf(x);  // vectorizable; within 2 ulp of std::exp (tests/test_fused.cpp)
#endif
}
SGMCMC_HD double exp_hd(double x) {
#if defined(__CUDA_ARCH__)
  return ::exp(x);
#else
  return std::exp(x);
#endif
}
SGMCMC_HD float log_hd(float x) {
#if defined(__CUDA_ARCH__)
  return logf(x);
#else
  return std::log(x);
#endif
}
SGMCMC_HD double log_hd(double x) {
#if defined(__CUDA_ARCH__)
  return ::log(x);
#else
  return std::log(x);
#endif
}

SGMCMC_HD float sqrt_hd(float x) { return sqrtf_hd(x); }
SGMCMC_HD double sqrt_hd(double x) {
#if defined(__CUDA_ARCH__)
  return ::sqrt(x);
#else
  return __builtin_sqrt(x);
#endif
}
SGMCMC_HD float asinh_hd(float x) {
#if defined(__CUDA_ARCH__)
  return asinhf(x);
#else
  return std::asinh(x);
#endif
}
SGMCMC_HD double asinh_hd(double x) {
#if defined(__CUDA_ARCH__)
  return ::asinh(x);
#else
  return std::asinh(x);
#endif
}

// What write_step_params stores (fused_update.h): the folded coefficients and the CPU noise stream.
template <typename T>
struct StepParams {
  FusedCoefs<T> k;
  NoiseStream noise;
};

// Host side: the scalars of FusedScalars folded per rule (see the comments in fused_element).
template <typename T>
FusedCoefs<T> make_coefs(FusedRule rule, const FusedScalars& s) {
  FusedCoefs<T> k;
  k.first = s.first;
  k.exploring = s.exploring;
  k.precond_term = s.precond_term;
  k.alpha_fixed_point = s.alpha_fixed_point;
  const double noise_sd_sgld = s.temperature > 0 ? std::sqrt(2.0 * s.lr * s.temperature) : 0.0;
  switch (rule) {
    case FusedRule::kNoise:
      break;
    case FusedRule::kSgld:
      k.a = static_cast<T>(-s.lr);
      k.b = static_cast<T>(noise_sd_sgld);
      break;
    case FusedRule::kPsgld:
      k.a = static_cast<T>(s.alpha);
      k.b = static_cast<T>(1.0 - s.alpha);
      k.c = static_cast<T>(s.eps);
      k.d = static_cast<T>(-s.lr);
      k.e = static_cast<T>(2.0 * s.lr * s.temperature);
      k.f = static_cast<T>(s.temperature > 0 ? 1 : 0);
      break;
    case FusedRule::kSghmcEuler:
    case FusedRule::kSghmcSsi: {
      const bool ssi = rule == FusedRule::kSghmcSsi;
      const double c = ssi ? std::sinh(s.alpha) : s.alpha;
      k.a = static_cast<T>(ssi ? std::exp(-s.alpha / 2) : 1.0 - s.alpha);
      k.b = static_cast<T>(-s.lr);
      k.c = static_cast<T>(s.temperature > 0 ? std::sqrt(std::max(0.0, 2.0 * s.lr * (c * s.temperature - s.beta_hat)))
                                             : 0.0);
      break;
    }
    case FusedRule::kMsgnhtEuler:
    case FusedRule::kMsgnhtSsi:
      k.a = static_cast<T>(-s.lr);                      // −h
      k.b = static_cast<T>(s.lr);                       // h
      k.c = static_cast<T>(s.temperature > 0 ? std::sqrt(2.0 * s.diffusion * s.lr * s.temperature) : 0.0);
      k.d = static_cast<T>(-s.temperature * s.lr);      // −T h
      k.e = static_cast<T>(-s.lr / 2);                  // −h/2
      break;
    case FusedRule::kSantaEuler:
    case FusedRule::kSantaSsi: {
      const double inv_n2 = 1.0 / (s.data_size * s.data_size);
      k.a = static_cast<T>(inv_n2);
      k.b = static_cast<T>(s.sigma);
      k.c = static_cast<T>((1.0 - s.sigma) * inv_n2);
      k.d = static_cast<T>(s.eps);
      k.e = static_cast<T>(-s.lr);                      // −η
      k.f = static_cast<T>(-s.lr / s.beta);             // −η/β
      k.g = static_cast<T>(2.0 * s.lr / s.beta);        // 2η/β
      k.h = static_cast<T>(1e-3 * std::sqrt(s.lr / s.beta));  // floor of |u| in the precond term
      k.i = static_cast<T>(s.noise_g2);                 // constant G₂ of the noise (0: g_prev)
      break;
    }
  }
  return k;
}

// The per-step flags as compile-time constants (fused_element's F): bit 0 first, bit 1 exploring,
// bit 2 precond_term; F = kRuntimeFlags reads them from FusedCoefs. The CPU loop instantiates the common
// cases so that their element loops have no branches (and, for Santa, no asinh call) and vectorize.
constexpr int kRuntimeFlags = -1;
constexpr int kFlagFirst = 1, kFlagExploring = 2, kFlagPrecond = 4;

// ∇Ũ of element i: gr[i], or with the prior folded in (kernels::PriorFold) gr[i] + λθ[i], two
// roundings. Read before θ[i] is written.
template <bool Fold, typename T>
SGMCMC_HD T grad_at(const T* gr, const T* th, int64_t i, T lambda) {
  if constexpr (Fold) {
    const T prior = lambda * th[i];
    return gr[i] + prior;
  } else {
    (void)th, (void)lambda;
    return gr[i];
  }
}

// One element. th: θ; s0..s3: state (rule order of fused_update.h); gr: ∇Ũ (Fold: the likelihood's
// part, λθ added here); z: N(0,1).
template <FusedRule R, typename T, int F = kRuntimeFlags, bool Fold = false>
SGMCMC_HD void fused_element(T* th, T* s0, T* s1, T* s2, T* s3, const T* gr, int64_t i, float zf,
                             const FusedCoefs<T>& k, T lambda = T(0)) {
  const T z = static_cast<T>(zf);
  const bool first = F == kRuntimeFlags ? k.first : (F & kFlagFirst) != 0;
  const bool exploring = F == kRuntimeFlags ? k.exploring : (F & kFlagExploring) != 0;
  const bool precond_term = F == kRuntimeFlags ? k.precond_term : (F & kFlagPrecond) != 0;
  (void)first, (void)exploring, (void)precond_term;
  if constexpr (R == FusedRule::kNoise) {
    th[i] = z;
  } else if constexpr (R == FusedRule::kSgld) {
    // θ.add_(g, −η); θ.add_(ξ, sqrt(2ηT))
    T t = th[i] + k.a * grad_at<Fold>(gr, th, i, lambda);
    th[i] = t + k.b * z;
  } else if constexpr (R == FusedRule::kPsgld) {
    // V ← αV + (1−α)g² (V ← g² first); G = 1/(sqrt V + eps); θ ← θ − ηGg + sqrt(2ηT G) ξ
    const T g = grad_at<Fold>(gr, th, i, lambda);
    const T v = first ? g * g : s0[i] * k.a + k.b * (g * g);
    s0[i] = v;
    const T G = T(1) / (sqrt_hd(v) + k.c);
    T t = th[i] + k.d * (G * g);
    if (k.f != T(0)) t = t + sqrt_hd(G * k.e) * z;
    th[i] = t;
  } else if constexpr (R == FusedRule::kSghmcEuler) {
    // v ← (1−α)v − ηg + sd ξ;  θ ← θ + v
    T v = s0[i] * k.a + k.b * grad_at<Fold>(gr, th, i, lambda);
    v = v + k.c * z;
    s0[i] = v;
    th[i] = th[i] + v;
  } else if constexpr (R == FusedRule::kSghmcSsi) {
    // v ← e^{−α/2}v − ηg + sd ξ;  v ← e^{−α/2}v;  θ ← θ + v
    T v = s0[i] * k.a + k.b * grad_at<Fold>(gr, th, i, lambda);
    v = (v + k.c * z) * k.a;
    s0[i] = v;
    th[i] = th[i] + v;
  } else if constexpr (R == FusedRule::kMsgnhtEuler) {
    // p ← p − hξp − hg + sd ζ;  ξ ← ξ + h p² − T h;  θ ← θ + h p
    T p = s0[i];
    const T xi = s1[i];
    p = p + k.a * (xi * p);
    p = p + k.a * grad_at<Fold>(gr, th, i, lambda);
    p = p + k.c * z;
    s0[i] = p;
    s1[i] = (xi + k.b * (p * p)) + k.d;
    th[i] = th[i] + k.b * p;
  } else if constexpr (R == FusedRule::kMsgnhtSsi) {
    // p ← e^{−hξ/2}(e^{−hξ/2}p − hg + sd ζ);  θ ← θ + h p;  ξ ← ξ + h p² − T h
    const T xi = s1[i];
    const T decay = exp_hd(xi * k.e);
    T p = s0[i] * decay + k.a * grad_at<Fold>(gr, th, i, lambda);
    p = (p + k.c * z) * decay;
    s0[i] = p;
    th[i] = th[i] + k.b * p;
    s1[i] = (xi + k.b * (p * p)) + k.d;
  } else if constexpr (R == FusedRule::kSantaEuler || R == FusedRule::kSantaSsi) {
    // s0 = u, s1 = α, s2 = v, s3 = g_prev (update_rules.h, santa_*_update)
    const T f = grad_at<Fold>(gr, th, i, lambda);
    const T v = first ? (f * f) * k.a : s2[i] * k.b + k.c * (f * f);
    s2[i] = v;
    const T g = T(1) / sqrt_hd(sqrt_hd(v) + k.d);
    const T gp = first ? g : s3[i];
    T u = s0[i];
    T alpha = first && k.alpha_fixed_point ? asinh_hd(g) : s1[i];  // SSI's fixed point sinh α = g
    T drive = T(0);
    if (exploring) {
      drive = sqrt_hd((k.i > T(0) ? k.i : gp) * k.g) * z;
      if (precond_term) {
        const T au = u < T(0) ? -u : u;
        const T mag = au > k.h ? au : k.h;
        const T denom = u >= T(0) ? mag : -mag;
        drive = drive + ((T(1) - gp / g) / denom) * (-k.f);
      }
    }
    if constexpr (R == FusedRule::kSantaEuler) {
      if (exploring) alpha = (alpha + u * u) + k.f;
      u = u * (T(1) - alpha) + k.e * (g * f);
      if (exploring) u = u + drive;
    } else {
      const T decay = exp_hd(alpha * T(-0.5));
      u = u * decay + k.e * (g * f);
      if (exploring) u = u + drive;
      u = u * decay;
    }
    th[i] = th[i] + g * u;
    if constexpr (R == FusedRule::kSantaSsi) {
      if (exploring) alpha = (alpha + u * u) + k.f;
    }
    s0[i] = u;
    s1[i] = alpha;
    s3[i] = g;
  }
}

// Four consecutive elements i … i+3 through registers: each array's four values are read once, the
// rule runs on the copies (fused_element on register arrays with constant indices: the same arithmetic,
// so the same bits) and θ and the state are written back once. The CUDA kernel calls it with 16-byte
// loads and stores, so that a warp reads and writes whole contiguous lines instead of four interleaved
// strided passes (pointers 16-byte aligned: the caller checks); the CPU tests it against fused_element.
// State arrays a rule does not have are null and neither read nor written.
template <typename T>
struct Quad {
  T v[4];
};

template <typename T>
SGMCMC_HD Quad<T> load_quad(const T* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    return {{q.x, q.y, q.z, q.w}};
  } else {
    const double2 a = reinterpret_cast<const double2*>(p)[0], b = reinterpret_cast<const double2*>(p)[1];
    return {{a.x, a.y, b.x, b.y}};
  }
#else
  return {{p[0], p[1], p[2], p[3]}};
#endif
}

template <typename T>
SGMCMC_HD void store_quad(T* p, const Quad<T>& q) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(q.v[0], q.v[1], q.v[2], q.v[3]);
  } else {
    reinterpret_cast<double2*>(p)[0] = make_double2(q.v[0], q.v[1]);
    reinterpret_cast<double2*>(p)[1] = make_double2(q.v[2], q.v[3]);
  }
#else
  for (int j = 0; j < 4; ++j) p[j] = q.v[j];
#endif
}

template <FusedRule R, typename T>
SGMCMC_HD void fused_block4(T* th, T* s0, T* s1, T* s2, T* s3, const T* gr, int64_t i, const float (&z)[4],
                            const FusedCoefs<T>& k) {
  Quad<T> t{}, a{}, b{}, c{}, d{}, g{};
  if constexpr (R != FusedRule::kNoise) t = load_quad(th + i);  // kNoise only writes θ
  if (s0) a = load_quad(s0 + i);
  if (s1) b = load_quad(s1 + i);
  if (s2) c = load_quad(s2 + i);
  if (s3) d = load_quad(s3 + i);
  if (gr) g = load_quad(gr + i);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < 4; ++j) fused_element<R, T>(t.v, a.v, b.v, c.v, d.v, g.v, j, z[j], k);
  store_quad(th + i, t);
  if (s0) store_quad(s0 + i, a);
  if (s1) store_quad(s1 + i, b);
  if (s2) store_quad(s2 + i, c);
  if (s3) store_quad(s3 + i, d);
}

}  // namespace sgmcmc::kernels
