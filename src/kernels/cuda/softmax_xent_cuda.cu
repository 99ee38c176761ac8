// The softmax + cross-entropy kernel of kernels/cuda/softmax_xent_cuda.h.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/macros/Macros.h>

#include <algorithm>

#include "kernels/cuda/softmax_xent_cuda.h"
#include "kernels/cuda/softmax_xent_row.h"

namespace sgmcmc::kernels {

namespace {

template <typename T>
__global__ void softmax_xent_kernel(const T* f, const int64_t* y, int64_t n, int64_t k, T scale, T* g, T* row_nll) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t yi = y[i];
    CUDA_KERNEL_ASSERT(yi >= 0 && yi < k);  // a label outside [0, k), as nll_loss asserts
    row_nll[i] = softmax_xent_row<T>(f + i * k, yi, k, scale, g + i * k);
  }
}

}  // namespace

torch::Tensor softmax_xent_backward_cuda(const torch::Tensor& logits, const torch::Tensor& targets, double scale,
                                         torch::Tensor& grad, const torch::Tensor& bias_grad) {
  const c10::cuda::CUDAGuard guard(logits.device());
  const int64_t n = logits.size(0), k = logits.size(1);
  auto row_nll = at::empty({n}, logits.options());
  if (n > 0) {
    const int threads = 256;
    const int64_t grid = std::min<int64_t>((n + threads - 1) / threads, 65535);
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    if (logits.scalar_type() == torch::kFloat64) {
      softmax_xent_kernel<double><<<grid, threads, 0, stream>>>(
          logits.data_ptr<double>(), targets.data_ptr<int64_t>(), n, k, scale, grad.data_ptr<double>(),
          row_nll.data_ptr<double>());
    } else {
      softmax_xent_kernel<float><<<grid, threads, 0, stream>>>(
          logits.data_ptr<float>(), targets.data_ptr<int64_t>(), n, k, static_cast<float>(scale),
          grad.data_ptr<float>(), row_nll.data_ptr<float>());
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  if (bias_grad.defined()) {
    torch::Tensor b = bias_grad;  // the same storage
    b.add_(grad.sum(0));
  }
  return row_nll.sum();
}

}  // namespace sgmcmc::kernels
