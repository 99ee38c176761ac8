#include "samplers/step_params_buffer.h"

#include <stdexcept>
#include <vector>

#include "kernels/copy_async.h"

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace sgmcmc {

struct StepParamsBuffer::CudaRing {
#if defined(SGMCMC_WITH_CUDA)
  torch::Tensor host;                    // [slots, bytes], pinned
  std::vector<at::cuda::CUDAEvent> done;  // per slot: its last copy has finished
  int64_t next = 0;
#endif
};

StepParamsBuffer::StepParamsBuffer(torch::Device device, int64_t slots)
    : device_(torch::zeros({kernels::step_params_bytes()}, torch::TensorOptions().dtype(torch::kUInt8).device(device))) {
  if (slots < 1) throw std::invalid_argument("StepParamsBuffer: slots must be >= 1");
  if (device.is_cuda()) {
#if defined(SGMCMC_WITH_CUDA)
    ring_ = std::make_unique<CudaRing>();
    ring_->host = torch::zeros({slots, kernels::step_params_bytes()},
                               torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    ring_->done.resize(static_cast<size_t>(slots));
#else
    throw std::invalid_argument("StepParamsBuffer: a CUDA device needs a build with -DSGMCMC_CUDA=ON");
#endif
  }
}

StepParamsBuffer::~StepParamsBuffer() = default;

void StepParamsBuffer::write(kernels::FusedRule rule, const kernels::FusedScalars& s, kernels::NoiseStream noise,
                             torch::ScalarType dtype) {
  if (!ring_) {
    kernels::write_step_params(rule, s, noise, dtype, device_.data_ptr());
    return;
  }
#if defined(SGMCMC_WITH_CUDA)
  const int64_t j = ring_->next;
  ring_->next = (j + 1) % ring_->host.size(0);
  auto& done = ring_->done[static_cast<size_t>(j)];
  done.synchronize();  // the slot's previous copy (slots steps ago) has read it
  auto slot = ring_->host[j];
  kernels::write_step_params(rule, s, noise, dtype, slot.data_ptr());
  kernels::copy_async(device_, slot);
  done.record();  // on the current stream, after the copy
#endif
}

}  // namespace sgmcmc
