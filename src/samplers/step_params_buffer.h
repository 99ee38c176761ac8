// The per-step scalars of one flat group for graph-safe launches (kernels::fused_update_from):
// written by the host before each step, read by the step's kernel when it runs.
//
// On the CPU the host writes the buffer itself (a CPU kernel runs when it is launched). On CUDA the
// host writes the next slot of a ring of pinned host buffers, and a non-blocking copy, ordered on the
// current stream before the step's kernels, moves it into the device buffer. A slot is rewritten
// only once its previous copy has finished (one event per slot), so the host may run up to `slots`
// steps ahead of the GPU and never waits for it otherwise.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "kernels/fused_update.h"

namespace sgmcmc {

class StepParamsBuffer {
 public:
  // 128 slots: H.1's per-epoch host work (~2–3 ms of ops on the H100 hosts) is queued while the device
  // still runs up to 128 queued steps (~7 ms), instead of waiting for a free slot
  explicit StepParamsBuffer(torch::Device device, int64_t slots = 128);
  ~StepParamsBuffer();
  StepParamsBuffer(const StepParamsBuffer&) = delete;
  StepParamsBuffer& operator=(const StepParamsBuffer&) = delete;

  // Folds (rule, s, noise) for tensors of `dtype` and makes them the buffer's contents for the next
  // kernel that reads it (kernels::write_step_params).
  void write(kernels::FusedRule rule, const kernels::FusedScalars& s, kernels::NoiseStream noise,
             torch::ScalarType dtype);
  // The buffer the kernels read (uint8, kernels::step_params_bytes() bytes, on the device).
  const torch::Tensor& device_buffer() const { return device_; }

 private:
  struct CudaRing;  // pinned slots and their events (CUDA builds)
  torch::Tensor device_;
  std::unique_ptr<CudaRing> ring_;
};

}  // namespace sgmcmc
