// The kernels of kernels/activation_cuda.h.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/activation_cuda.h"
#include "kernels/activation_hd.h"

#include "core/kernel_settings.h"

namespace sgmcmc::kernels {

namespace {

template <typename T>
__global__ void bias_activation_kernel(T* out, const T* bias, int64_t n, int64_t k, Activation act) {
  const int64_t total = n * k;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    T x = out[i];
    if (bias != nullptr) x = x + bias[i % k];
    out[i] = activate_hd(act, x);
  }
}

constexpr int kCols = 32;  // columns per block (threadIdx.x: coalesced along a row)
constexpr int kRows = 8;   // row strides per block (threadIdx.y)

// out = g ⊙ act'(y) over a block's 32 columns, every row (out null: nothing written, the column sums
// of g alone); bias_grad[j] += the column's sum: each
// thread sums its rows (i ≡ threadIdx.y mod 8) in order, then thread y = 0 adds the eight partial
// sums in order of y.
template <typename T>
__global__ void activation_backward_kernel(T* out, const T* g, const T* y, T* bias_grad, int64_t n, int64_t k,
                                           Activation act) {
  __shared__ T partial[kRows][kCols + 1];
  const int64_t j = blockIdx.x * static_cast<int64_t>(kCols) + threadIdx.x;
  T acc = T(0);
  if (j < k) {
    for (int64_t i = threadIdx.y; i < n; i += kRows) {
      const int64_t at = i * k + j;
      const T d = derivative_times_hd(act, g[at], y != nullptr ? y[at] : T(0));
      if (out != nullptr) out[at] = d;
      acc += d;
    }
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < k && bias_grad != nullptr) {
    T s = partial[0][threadIdx.x];
    for (int r = 1; r < kRows; ++r) s += partial[r][threadIdx.x];
    bias_grad[j] += s;
  }
}

void check_matrix(const torch::Tensor& t, const torch::Tensor& like, const char* what) {
  if (!t.defined() || !t.is_cuda() || t.dim() != 2 || !t.is_contiguous() || t.sizes() != like.sizes() ||
      t.scalar_type() != like.scalar_type() || t.device() != like.device())
    throw std::invalid_argument(std::string("activation kernels: ") + what +
                                " must be a contiguous CUDA matrix of out's shape, dtype and device");
}

void check_vector(const torch::Tensor& t, const torch::Tensor& like, const char* what) {
  if (t.defined() && (!t.is_cuda() || !t.is_contiguous() || t.numel() != like.size(1) ||
                      t.scalar_type() != like.scalar_type() || t.device() != like.device()))
    throw std::invalid_argument(std::string("activation kernels: ") + what + " must be a contiguous CUDA [" +
                                std::to_string(like.size(1)) + "] of the matrix's dtype and device");
}

}  // namespace

bool activation_cuda_enabled() {
  return kernel_settings().cuda_act_fused;
}

void bias_activation_cuda(torch::Tensor& out, const torch::Tensor& bias, Activation act) {
  if (!out.is_cuda() || out.dim() != 2 || !out.is_contiguous() ||
      (out.scalar_type() != torch::kFloat32 && out.scalar_type() != torch::kFloat64))
    throw std::invalid_argument("bias_activation_cuda: out must be a contiguous float32/float64 CUDA matrix");
  check_vector(bias, out, "the bias");
  const int64_t n = out.size(0), k = out.size(1);
  if (n * k == 0) return;
  const c10::cuda::CUDAGuard guard(out.device());
  const int threads = 256;
  const int64_t grid = std::min<int64_t>((n * k + threads - 1) / threads, 65535);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (out.scalar_type() == torch::kFloat64) {
    bias_activation_kernel<double><<<grid, threads, 0, stream>>>(
        out.data_ptr<double>(), bias.defined() ? bias.data_ptr<double>() : nullptr, n, k, act);
  } else {
    bias_activation_kernel<float><<<grid, threads, 0, stream>>>(
        out.data_ptr<float>(), bias.defined() ? bias.data_ptr<float>() : nullptr, n, k, act);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void activation_backward_cuda(torch::Tensor& out, const torch::Tensor& g, const torch::Tensor& y, Activation act,
                              const torch::Tensor& bias_grad) {
  if (!g.is_cuda() || g.dim() != 2 || !g.is_contiguous() ||
      (g.scalar_type() != torch::kFloat32 && g.scalar_type() != torch::kFloat64))
    throw std::invalid_argument("activation_backward_cuda: g must be a contiguous float32/float64 CUDA matrix");
  check_matrix(out, g, "out");
  if (act != Activation::kNone) check_matrix(y, g, "y");
  check_vector(bias_grad, g, "bias_grad");
  const int64_t n = g.size(0), k = g.size(1);
  if (k == 0) return;
  const c10::cuda::CUDAGuard guard(g.device());
  const dim3 block(kCols, kRows);
  const dim3 grid(static_cast<unsigned>((k + kCols - 1) / kCols));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const bool with_y = act != Activation::kNone;
  const bool write = with_y || !out.is_same(g);  // none, in place: g is already the result
  if (g.scalar_type() == torch::kFloat64) {
    activation_backward_kernel<double><<<grid, block, 0, stream>>>(
        write ? out.data_ptr<double>() : nullptr, g.data_ptr<double>(), with_y ? y.data_ptr<double>() : nullptr,
        bias_grad.defined() ? bias_grad.data_ptr<double>() : nullptr, n, k, act);
  } else {
    activation_backward_kernel<float><<<grid, block, 0, stream>>>(
        write ? out.data_ptr<float>() : nullptr, g.data_ptr<float>(), with_y ? y.data_ptr<float>() : nullptr,
        bias_grad.defined() ? bias_grad.data_ptr<float>() : nullptr, n, k, act);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace sgmcmc::kernels
