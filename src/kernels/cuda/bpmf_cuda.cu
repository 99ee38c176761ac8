// The BPMF gradient kernel of kernels/cuda/bpmf_cuda.h.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/macros/Macros.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda/bpmf_cuda.h"

namespace sgmcmc::kernels {

namespace {

constexpr int kWarp = 32;
constexpr int kBpmfThreads = 256;  // 8 ratings at a time per block

struct BpmfArgs {
  const int64_t* uv;
  const float *y, *U, *V, *a, *b, *mu, *tau;
  float *gU, *gV, *ga, *gb;
  int64_t n, users, items, d;
  float scale;
  double* sse;  // Σ r², accumulated
};

__global__ void bpmf_backward_kernel(BpmfArgs p) {
  __shared__ double block_sse[kBpmfThreads / kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const float tau_scale = p.scale * *p.tau, mu = *p.mu;
  double sse = 0;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kBpmfThreads / kWarp);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * (kBpmfThreads / kWarp) + warp; i < p.n; i += warps) {
    const int64_t u = p.uv[2 * i], v = p.uv[2 * i + 1];
    CUDA_KERNEL_ASSERT(u >= 0 && u < p.users && v >= 0 && v < p.items);
    const float* Uu = p.U + u * p.d;
    const float* Vv = p.V + v * p.d;
    float dot = 0;
    for (int64_t k = lane; k < p.d; k += kWarp) dot += Uu[k] * Vv[k];
    for (int off = kWarp / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
    const float r = p.y[i] - (dot + p.a[u] + p.b[v] + mu);  // every lane has the whole sum
    const float e = -tau_scale * r;
    for (int64_t k = lane; k < p.d; k += kWarp) {
      atomicAdd(p.gU + u * p.d + k, e * Vv[k]);
      atomicAdd(p.gV + v * p.d + k, e * Uu[k]);
    }
    if (lane == 0) {
      atomicAdd(p.ga + u, e);
      atomicAdd(p.gb + v, e);
      sse += static_cast<double>(r) * r;
    }
  }
  if (lane == 0) block_sse[warp] = sse;
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = 0;
    for (int w = 0; w < kBpmfThreads / kWarp; ++w) s += block_sse[w];
    atomicAdd(p.sse, s);
  }
}

// nll = τ/2 Σ r² − (n/2) log τ + (n/2) log 2π
__global__ void bpmf_nll_kernel(const double* sse, const float* tau, double n, float* nll) {
  const double t = *tau;
  const double half_log_2pi = 0.91893853320467274178;
  *nll = static_cast<float>(0.5 * t * *sse - 0.5 * n * log(t) + n * half_log_2pi);
}

}  // namespace

torch::Tensor bpmf_backward_cuda(const torch::Tensor& uv, const torch::Tensor& y, const torch::Tensor& U,
                                 const torch::Tensor& V, const torch::Tensor& a, const torch::Tensor& b,
                                 torch::Tensor& gU, torch::Tensor& gV, torch::Tensor& ga, torch::Tensor& gb,
                                 const torch::Tensor& mu, const torch::Tensor& tau, double scale) {
  const c10::cuda::CUDAGuard guard(U.device());
  const int64_t n = uv.size(0);
  auto sse = at::zeros({1}, U.options().dtype(torch::kFloat64));
  auto nll = at::empty({}, U.options());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (n > 0) {
    const BpmfArgs args{uv.data_ptr<int64_t>(), y.data_ptr<float>(), U.data_ptr<float>(), V.data_ptr<float>(),
                        a.data_ptr<float>(),    b.data_ptr<float>(), mu.data_ptr<float>(), tau.data_ptr<float>(),
                        gU.data_ptr<float>(),   gV.data_ptr<float>(), ga.data_ptr<float>(), gb.data_ptr<float>(),
                        n,                      U.size(0),           V.size(0),            U.size(1),
                        static_cast<float>(scale), sse.data_ptr<double>()};
    const int64_t per_block = kBpmfThreads / kWarp;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const int64_t grid = std::min<int64_t>((n + per_block - 1) / per_block, static_cast<int64_t>(sms) * 16);
    bpmf_backward_kernel<<<grid, kBpmfThreads, 0, stream>>>(args);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  bpmf_nll_kernel<<<1, 1, 0, stream>>>(sse.data_ptr<double>(), tau.data_ptr<float>(), static_cast<double>(n),
                                       nll.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return nll;
}

}  // namespace sgmcmc::kernels
