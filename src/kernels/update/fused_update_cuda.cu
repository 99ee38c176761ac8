// CUDA launcher of the fused updates (built with -DSGMCMC_CUDA=ON against LibTorch 2.x).
// One thread per Philox block of 4 elements, grid-stride; the per-element body is the CPU loop's
// (fused_elementwise.h). With every pointer 16-byte aligned (kVec), a whole block goes through
// registers with one 16-byte load and store per array (fused_block4); the tail block, and misaligned
// views, take the element loop. The key and offset come from the CUDA generator's Philox state through
// PhiloxCudaState, which a CUDA graph capture records as a pointer to the live offset, so a replayed
// graph draws fresh noise each time. fused_update_from's launch (a replayed step) reads the key and
// offset from its step parameters instead, which the host drew from the generator (cuda_noise_stream):
// the same numbers as an eager step's, and no generator state for the graph to refresh before a replay.
//
// Tested on an H100 (PyTorch 2.11 / CUDA 13): Fused.CudaEqualsReferenceWithSameNoise passes. The
// element loop alone moves 61 % (SGLD) to 52 % (Santa) of the copy bandwidth over 100M parameters:
// each warp instruction touches every fourth word of 512 bytes. With the kVec path (fused_block4)
// SGLD / SGHMC / Santa move 96 / 96 / 95 % of the copy bandwidth (H100; docs/performance.md).
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraphsUtils.cuh>  // at::cuda::philox::unpack, in 1.13 and 2.x
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <tuple>
#include <vector>

#include "kernels/update/fused_elementwise.h"
#include "kernels/cuda/launch_cuda.h"

namespace sgmcmc::kernels {

namespace {

// `kp`, when not null, points to the step's coefficients in device memory (fused_update_from: a
// captured launch keeps its arguments, so the scalars of a replayed step must be read when it runs);
// otherwise `kv` holds them.
// `np`, when not null, points to the step's noise stream in device memory (fused_update_from: the host
// drew it from the generator, cuda_noise_stream); otherwise the generator's Philox state is `philox`.
template <FusedRule R, typename T, bool kVec>
__global__ void fused_kernel(T* th, T* s0, T* s1, T* s2, T* s3, const T* gr, int64_t n, FusedCoefs<T> kv,
                             const FusedCoefs<T>* kp, const NoiseStream* np, at::PhiloxCudaState philox) {
  const FusedCoefs<T> k = kp ? *kp : kv;
  uint64_t key, offset;
  if (np) {
    key = np->key, offset = np->offset;
  } else {
    const auto seeds = at::cuda::philox::unpack(philox);
    key = std::get<0>(seeds), offset = std::get<1>(seeds);
  }
  const int64_t blocks = (n + 3) / 4;
  for (int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; b < blocks;
       b += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const Normal4 z = philox_normal4(key, offset, static_cast<uint64_t>(b));
    const int64_t i = 4 * b;
    const float zs[4] = {z.a, z.b, z.c, z.d};
    if (kVec && i + 3 < n) {
      fused_block4<R, T>(th, s0, s1, s2, s3, gr, i, zs, k);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (i + j < n) fused_element<R, T>(th, s0, s1, s2, s3, gr, i + j, zs[j], k);
    }
  }
}

template <typename T>
void launch(FusedRule rule, torch::Tensor& theta, const std::vector<torch::Tensor>& state, const torch::Tensor& grad,
            const FusedScalars& s, const void* step_params, const at::PhiloxCudaState& philox, int64_t grid,
            int threads, cudaStream_t stream) {
  const auto k = make_coefs<T>(rule, s);
  // StepParams<T> starts with its FusedCoefs<T> (fused_elementwise.h).
  const auto* kp = step_params ? &static_cast<const StepParams<T>*>(step_params)->k : nullptr;
  const auto* np = step_params ? &static_cast<const StepParams<T>*>(step_params)->noise : nullptr;
  const int64_t n = theta.numel();
  T* th = theta.data_ptr<T>();
  T* sp[4] = {nullptr, nullptr, nullptr, nullptr};
  for (size_t j = 0; j < state.size(); ++j) sp[j] = state[j].data_ptr<T>();
  const T* gr = grad.defined() ? grad.data_ptr<T>() : nullptr;
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = aligned(th) && aligned(sp[0]) && aligned(sp[1]) && aligned(sp[2]) && aligned(sp[3]) && aligned(gr);
#define SGMCMC_FUSED_LAUNCH(R)                                                                                   \
  case R:                                                                                                        \
    launch_kernel(vec ? fused_kernel<R, T, true> : fused_kernel<R, T, false>, dim3(static_cast<unsigned>(grid)),  \
                  dim3(threads), 0, stream, th, sp[0], sp[1], sp[2], sp[3], gr, n, k, kp, np, philox);          \
    break;
  switch (rule) {
    SGMCMC_FUSED_LAUNCH(FusedRule::kNoise)
    SGMCMC_FUSED_LAUNCH(FusedRule::kSgld)
    SGMCMC_FUSED_LAUNCH(FusedRule::kPsgld)
    SGMCMC_FUSED_LAUNCH(FusedRule::kSghmcEuler)
    SGMCMC_FUSED_LAUNCH(FusedRule::kSghmcSsi)
    SGMCMC_FUSED_LAUNCH(FusedRule::kMsgnhtEuler)
    SGMCMC_FUSED_LAUNCH(FusedRule::kMsgnhtSsi)
    SGMCMC_FUSED_LAUNCH(FusedRule::kSantaEuler)
    SGMCMC_FUSED_LAUNCH(FusedRule::kSantaSsi)
  }
#undef SGMCMC_FUSED_LAUNCH
}

}  // namespace

// The offset only has to differ between calls (it is the high half of our counter); a call advances
// it by its Philox blocks, rounded up to a multiple of 4 as PyTorch's own kernels do.
static uint64_t philox_increment(int64_t numel) { return static_cast<uint64_t>((((numel + 3) / 4 + 3) / 4) * 4); }

NoiseStream cuda_noise_stream(at::Generator& generator, int64_t numel) {
  auto* gen = at::check_generator<at::CUDAGeneratorImpl>(generator);
  std::lock_guard<std::mutex> lock(gen->mutex_);
  const auto [seed, offset] = gen->philox_engine_inputs(philox_increment(numel));
  return {seed, offset};
}

void fused_update_cuda(FusedRule rule, torch::Tensor& theta, const std::vector<torch::Tensor>& state,
                       const torch::Tensor& grad, const FusedScalars& s, at::Generator* generator,
                       const void* step_params) {
  const c10::cuda::CUDAGuard guard(theta.device());
  const int64_t n = theta.numel();
  const int64_t blocks = (n + 3) / 4;
  const int threads = 256;
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t grid = std::min<int64_t>((blocks + threads - 1) / threads, static_cast<int64_t>(sms) * 32);
  at::PhiloxCudaState philox;
  if (step_params == nullptr) {  // fused_update_from's launch reads the stream the host wrote instead
    auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
        generator ? c10::optional<at::Generator>(*generator) : c10::optional<at::Generator>(),
        at::cuda::detail::getDefaultCUDAGenerator());
    std::lock_guard<std::mutex> lock(gen->mutex_);
    philox = gen->philox_cuda_state(philox_increment(n));
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (theta.scalar_type() == torch::kFloat64) {
    launch<double>(rule, theta, state, grad, s, step_params, philox, grid, threads, stream);
  } else {
    launch<float>(rule, theta, state, grad, s, step_params, philox, grid, threads, stream);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace sgmcmc::kernels
