#include "metrics/async_read.h"

#include <ATen/record_function.h>

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace sgmcmc {

struct AsyncHostRead::Event {
#if defined(SGMCMC_WITH_CUDA)
  at::cuda::CUDAEvent event;
#endif
};

AsyncHostRead::AsyncHostRead() = default;
AsyncHostRead::~AsyncHostRead() = default;
AsyncHostRead::AsyncHostRead(AsyncHostRead&&) noexcept = default;
AsyncHostRead& AsyncHostRead::operator=(AsyncHostRead&&) noexcept = default;

void AsyncHostRead::start(const torch::Tensor& packed) {
  done_.reset();
  if (!packed.defined()) {
    host_ = torch::Tensor();
    return;
  }
  const auto src = packed.to(torch::kFloat64).reshape({-1}).contiguous();
#if defined(SGMCMC_WITH_CUDA)
  if (src.is_cuda()) {
    host_ = torch::empty(src.sizes(), torch::TensorOptions().dtype(torch::kFloat64).pinned_memory(true));
    host_.copy_(src, /*non_blocking=*/true);
    done_ = std::make_unique<Event>();
    done_->event.record(c10::cuda::getCurrentCUDAStream(src.device().index()));
    return;
  }
#endif
  host_ = src.to(torch::kCPU).clone();
}

std::vector<double> AsyncHostRead::values() {
  if (!host_.defined()) return {};
  RECORD_USER_SCOPE("sgmcmc::host_read");  // counted by bench/bench_epoch.cpp
#if defined(SGMCMC_WITH_CUDA)
  if (done_) done_->event.synchronize();
#endif
  const double* p = host_.data_ptr<double>();
  return std::vector<double>(p, p + host_.numel());
}

}  // namespace sgmcmc
