#include "kernels/update/fused_update.h"

#include <ATen/record_function.h>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/update/fused_elementwise.h"
#include "kernels/update/philox_fill.h"

namespace sgmcmc::kernels {

#if defined(SGMCMC_WITH_CUDA)
// fused_update_cuda.cu
// `step_params`: a device pointer to the StepParams<T> the kernel reads instead of folding `s` and drawing
// from `generator` (graph-safe); null: `s` and the generator's Philox state.
void fused_update_cuda(FusedRule rule, torch::Tensor& theta, const std::vector<torch::Tensor>& state,
                       const torch::Tensor& grad, const FusedScalars& s, at::Generator* generator,
                       const void* step_params);
#endif

namespace {

// Elements per tile: the tile's noise is generated into a stack buffer (L1-resident), then the
// update runs over the tile; both loops are simple enough for the compiler to vectorize.
constexpr int64_t kTile = 1024;
constexpr int64_t kTileBlocks = kTile / 4;

// Compiled for the baseline ISA, AVX2 and x86-64-v4, chosen at load time (the baseline is SSE2: four
// floats per instruction). The file is compiled with -ffp-contract=off, so no clone fuses a product
// and a sum into an FMA: every clone computes the baseline's roundings, and the update's bits do not
// depend on the CPU.
template <FusedRule R, typename T, int F, bool Fold>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("default", "arch=haswell", "arch=x86-64-v4")))
#endif
void tile_loop(T* __restrict th, T* __restrict s0, T* __restrict s1, T* __restrict s2, T* __restrict s3,
               const T* __restrict gr, int64_t len, const float* z, const FusedCoefs<T>& kc, T lambda) {
  for (int64_t i = 0; i < len; ++i) fused_element<R, T, F, Fold>(th, s0, s1, s2, s3, gr, i, z[i], kc, lambda);
}

constexpr bool is_santa(FusedRule r) { return r == FusedRule::kSantaEuler || r == FusedRule::kSantaSsi; }
constexpr bool has_step_flags(FusedRule r) { return is_santa(r) || r == FusedRule::kPsgld; }

// The element loop of one stretch of a tile, with the step's flags as compile-time constants in the
// common cases (after the first step, no precond term): no branches in the loop, so it vectorizes.
// Fold: the stretch lies in one segment of a prior fold with precision `lambda`.
template <FusedRule R, typename T, bool Fold>
void stretch(T* th, T* s0, T* s1, T* s2, T* s3, const T* gr, int64_t len, const float* z, const FusedCoefs<T>& kc,
             T lambda) {
  if constexpr (has_step_flags(R)) {
    if (!kc.first && !kc.precond_term) {
      if (kc.exploring) tile_loop<R, T, kFlagExploring, Fold>(th, s0, s1, s2, s3, gr, len, z, kc, lambda);
      else tile_loop<R, T, 0, Fold>(th, s0, s1, s2, s3, gr, len, z, kc, lambda);
      return;
    }
  }
  tile_loop<R, T, kRuntimeFlags, Fold>(th, s0, s1, s2, s3, gr, len, z, kc, lambda);
}

// Elements [begin, begin + len) of the buffer (one tile; z its noise): stretches inside a segment of
// `fold` with that segment's λ folded in, the others as they are.
template <FusedRule R, typename T>
void tile(T* th, T* s0, T* s1, T* s2, T* s3, const T* gr, int64_t begin, int64_t len, const float* z,
          const FusedCoefs<T>& kc, const PriorFold* fold) {
  const auto run = [&](int64_t lo, int64_t hi, const PriorFoldSegment* seg) {  // [lo, hi) of the buffer
    if (hi <= lo) return;
    const auto at = [lo](T* p) { return p ? p + lo : nullptr; };
    const T* g = gr ? gr + lo : nullptr;
    const float* zs = z + (lo - begin);
    if (seg) stretch<R, T, true>(th + lo, at(s0), at(s1), at(s2), at(s3), g, hi - lo, zs, kc, static_cast<T>(seg->lambda));
    else stretch<R, T, false>(th + lo, at(s0), at(s1), at(s2), at(s3), g, hi - lo, zs, kc, T(0));
  };
  const int64_t end = begin + len;
  if (!fold || !gr) return run(begin, end, nullptr);
  auto k = std::upper_bound(fold->begin(), fold->end(), begin,
                            [](int64_t b, const PriorFoldSegment& s) { return b < s.begin; });
  if (k != fold->begin()) --k;  // the last segment starting at or before `begin`
  int64_t done = begin;
  for (; k != fold->end() && k->begin < end; ++k) {
    const int64_t lo = std::max(done, k->begin), hi = std::min(end, k->begin + k->n);
    if (hi <= lo) continue;
    run(done, lo, nullptr);
    run(lo, hi, &*k);
    done = hi;
  }
  run(done, end, nullptr);
}

template <FusedRule R, typename T>
void cpu_loop(T* th, T* s0, T* s1, T* s2, T* s3, const T* gr, int64_t n, const FusedCoefs<T>& k,
              NoiseStream ns, const PriorFold* fold) {
  const int64_t tiles = (n + kTile - 1) / kTile;
  // Grain: ~64k elements per task, so small buffers stay on the calling thread.
  at::parallel_for(0, tiles, 64, [&](int64_t t0, int64_t t1) {
    alignas(64) float z[kTile];
    // Local copies, and __restrict on the buffers: the coefficients cannot alias the stores, so they
    // stay in registers and the element loop vectorizes (the buffers are distinct tensors).
    const FusedCoefs<T> kc = k;
    // Santa's refinement reads no noise: the tile's normals are not generated (zeros instead; the
    // stream is keyed per step, so the draws of later steps do not change).
    const bool noise = !is_santa(R) || kc.exploring;
    if (!noise) std::fill(z, z + kTile, 0.0f);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t begin = t * kTile;
      const int64_t len = std::min(kTile, n - begin);
      if (noise) philox_fill(z, (len + 3) / 4, static_cast<uint64_t>(begin / 4), ns.key, ns.offset);
      tile<R, T>(th, s0, s1, s2, s3, gr, begin, len, z, kc, fold);
    }
  });
}

size_t state_count(FusedRule rule) {
  switch (rule) {
    case FusedRule::kNoise:
    case FusedRule::kSgld:
      return 0;
    case FusedRule::kPsgld:
    case FusedRule::kSghmcEuler:
    case FusedRule::kSghmcSsi:
      return 1;
    case FusedRule::kMsgnhtEuler:
    case FusedRule::kMsgnhtSsi:
      return 2;
    case FusedRule::kSantaEuler:
    case FusedRule::kSantaSsi:
      return 4;
  }
  return 0;
}

template <typename T>
void cpu_dispatch(FusedRule rule, torch::Tensor& theta, const std::vector<torch::Tensor>& st,
                  const torch::Tensor& grad, const FusedCoefs<T>& k, NoiseStream ns, const PriorFold* fold) {
  T* th = theta.data_ptr<T>();
  T* sp[4] = {nullptr, nullptr, nullptr, nullptr};
  for (size_t j = 0; j < st.size(); ++j) sp[j] = st[j].data_ptr<T>();
  const T* gr = grad.defined() ? grad.data_ptr<T>() : nullptr;
  const int64_t n = theta.numel();
#define SGMCMC_FUSED_CASE(R) \
  case R:                    \
    cpu_loop<R, T>(th, sp[0], sp[1], sp[2], sp[3], gr, n, k, ns, fold); \
    break;
  switch (rule) {
    SGMCMC_FUSED_CASE(FusedRule::kNoise)
    SGMCMC_FUSED_CASE(FusedRule::kSgld)
    SGMCMC_FUSED_CASE(FusedRule::kPsgld)
    SGMCMC_FUSED_CASE(FusedRule::kSghmcEuler)
    SGMCMC_FUSED_CASE(FusedRule::kSghmcSsi)
    SGMCMC_FUSED_CASE(FusedRule::kMsgnhtEuler)
    SGMCMC_FUSED_CASE(FusedRule::kMsgnhtSsi)
    SGMCMC_FUSED_CASE(FusedRule::kSantaEuler)
    SGMCMC_FUSED_CASE(FusedRule::kSantaSsi)
  }
#undef SGMCMC_FUSED_CASE
}

void check_operand(const char* fn, const torch::Tensor& t, const torch::Tensor& theta, const char* what) {
  if (!t.defined() || !t.is_contiguous() || t.numel() != theta.numel() || t.scalar_type() != theta.scalar_type() ||
      t.device() != theta.device())
    throw std::invalid_argument(std::string(fn) + ": " + what +
                                " must be a contiguous tensor with θ's size, dtype and device");
}

void check_call(const char* fn, FusedRule rule, const torch::Tensor& theta, const std::vector<torch::Tensor>& state,
                const torch::Tensor& grad) {
  if (state.size() != state_count(rule))
    throw std::invalid_argument(std::string(fn) + ": rule " + std::to_string(static_cast<int>(rule)) + " takes " +
                                std::to_string(state_count(rule)) + " state tensors, got " +
                                std::to_string(state.size()));
  if (!theta.defined() || !theta.is_contiguous() || !fused_supported(theta))
    throw std::invalid_argument(std::string(fn) + ": θ must be a contiguous float32/float64 tensor on a supported device");
  for (const auto& t : state) check_operand(fn, t, theta, "a state tensor");
  if (rule != FusedRule::kNoise) check_operand(fn, grad, theta, "the gradient");
}

}  // namespace

void check_prior_fold(const PriorFold& fold, int64_t numel, const char* who) {
  int64_t end = 0;
  for (const auto& s : fold) {
    if (s.begin < end || s.n < 0 || s.begin + s.n > numel || !std::isfinite(s.lambda))
      throw std::invalid_argument(std::string(who) +
                                  ": prior fold segments must be sorted, disjoint, inside θ, with a finite λ");
    end = s.begin + s.n;
  }
}

bool fused_supported(const torch::Tensor& t) {
  if (t.scalar_type() != torch::kFloat32 && t.scalar_type() != torch::kFloat64) return false;
  if (t.device().is_cpu()) return true;
#if defined(SGMCMC_WITH_CUDA)
  return t.device().is_cuda();
#else
  return false;
#endif
}

void fused_update(FusedRule rule, torch::Tensor& theta, const std::vector<torch::Tensor>& state,
                  const torch::Tensor& grad, const FusedScalars& s, NoiseStream noise, at::Generator* generator,
                  const PriorFold* fold) {
  // Named in profiles (LibTorch's profiler sees ATen ops only otherwise); free when none is active.
  RECORD_FUNCTION("sgmcmc::fused_update", std::vector<c10::IValue>());
  const std::vector<torch::Tensor>& st = state;
  check_call("fused_update", rule, theta, st, grad);
  if (fold && fold->empty()) fold = nullptr;
  if (fold) {
    if (!theta.device().is_cpu()) throw std::invalid_argument("fused_update: a prior fold is implemented on the CPU only");
    check_prior_fold(*fold, theta.numel(), "fused_update");
  }
  if (theta.numel() == 0) return;
  if (theta.device().is_cuda()) {
#if defined(SGMCMC_WITH_CUDA)
    fused_update_cuda(rule, theta, st, grad, s, generator, nullptr);
    return;
#endif
  }
  if (theta.scalar_type() == torch::kFloat64) {
    cpu_dispatch<double>(rule, theta, st, grad, make_coefs<double>(rule, s), noise, fold);
  } else {
    cpu_dispatch<float>(rule, theta, st, grad, make_coefs<float>(rule, s), noise, fold);
  }
}

int64_t step_params_bytes() {
  return static_cast<int64_t>(std::max(sizeof(StepParams<float>), sizeof(StepParams<double>)));
}

void write_step_params(FusedRule rule, const FusedScalars& s, NoiseStream noise, torch::ScalarType dtype,
                       void* dst) {
  if (dtype == torch::kFloat64) {
    const StepParams<double> p{make_coefs<double>(rule, s), noise};
    std::memcpy(dst, &p, sizeof p);
  } else if (dtype == torch::kFloat32) {
    const StepParams<float> p{make_coefs<float>(rule, s), noise};
    std::memcpy(dst, &p, sizeof p);
  } else {
    throw std::invalid_argument("write_step_params: dtype must be float32 or float64");
  }
}

void fused_update_from(FusedRule rule, torch::Tensor& theta, const std::vector<torch::Tensor>& state,
                       const torch::Tensor& grad, const torch::Tensor& step_params) {
  if (!step_params.defined() || step_params.scalar_type() != torch::kUInt8 || !step_params.is_contiguous() ||
      step_params.numel() < step_params_bytes() || step_params.device() != theta.device())
    throw std::invalid_argument("fused_update_from: step_params must be a contiguous uint8 tensor of " +
                                std::to_string(step_params_bytes()) + " bytes on θ's device");
  RECORD_FUNCTION("sgmcmc::fused_update", std::vector<c10::IValue>());
  check_call("fused_update_from", rule, theta, state, grad);
  if (theta.numel() == 0) return;
  if (theta.device().is_cuda()) {
#if defined(SGMCMC_WITH_CUDA)
    fused_update_cuda(rule, theta, state, grad, FusedScalars{}, nullptr, step_params.data_ptr());
    return;
#endif
  }
  // The CPU reads the buffer now, which is when a (CPU) step runs.
  if (theta.scalar_type() == torch::kFloat64) {
    StepParams<double> p;
    std::memcpy(&p, step_params.data_ptr(), sizeof p);
    cpu_dispatch<double>(rule, theta, state, grad, p.k, p.noise, nullptr);
  } else {
    StepParams<float> p;
    std::memcpy(&p, step_params.data_ptr(), sizeof p);
    cpu_dispatch<float>(rule, theta, state, grad, p.k, p.noise, nullptr);
  }
}

torch::Tensor philox_normal(int64_t numel, NoiseStream stream, torch::TensorOptions options,
                            at::Generator* generator) {
  auto out = torch::empty({numel}, options.requires_grad(false));
  fused_update(FusedRule::kNoise, out, {}, torch::Tensor(), FusedScalars{}, stream, generator);
  return out;
}

}  // namespace sgmcmc::kernels
