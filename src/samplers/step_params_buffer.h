// The per-step scalars of one flat group for graph-safe launches (kernels::fused_update_from):
// written by the host before each step, read by the step's kernel when it runs.
//
// The device buffer has `rows` rows: row 0 is the one-step graph's; a graph of several steps
// (train.graph_steps) reads row j in its step j, and the host stages all of them before the graph runs.
//
// On the CPU the host writes the buffer itself (a CPU kernel runs when it is launched). On CUDA the
// host writes the next slot of a ring of pinned host slots, and one non-blocking copy per slot,
// ordered on the current stream before the steps' kernels, moves it into the device buffer. A slot is
// rewritten only once its previous copy has finished (one event per slot), so the host may run up to
// `slots` single steps ahead of the GPU (blocks: a ring of their own) and never waits for it otherwise.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "kernels/update/fused_update.h"

namespace sgmcmc {

class StepParamsBuffer {
 public:
  // 128 slots: H.1's per-epoch host work (~2–3 ms of ops on the H100 hosts) is queued while the device
  // still runs up to 128 queued steps (~7 ms), instead of waiting for a free slot. With rows > 1, blocks
  // have max(4, slots / rows) slots of `rows` rows besides.
  explicit StepParamsBuffer(torch::Device device, int64_t rows = 1, int64_t slots = 128);
  ~StepParamsBuffer();
  StepParamsBuffer(const StepParamsBuffer&) = delete;
  StepParamsBuffer& operator=(const StepParamsBuffer&) = delete;

  // Folds (rule, s, noise) for tensors of `dtype` and makes them row 0's contents for the next kernel
  // that reads it (kernels::write_step_params), through the single steps' slots.
  void write(kernels::FusedRule rule, const kernels::FusedScalars& s, kernels::NoiseStream noise,
             torch::ScalarType dtype);
  // A block of steps: stage rows 0 … k−1, then commit(k) copies them to the device in one copy.
  // std::out_of_range for a row outside [0, rows).
  void stage(int64_t row, kernels::FusedRule rule, const kernels::FusedScalars& s, kernels::NoiseStream noise,
             torch::ScalarType dtype);
  void commit(int64_t rows);
  // Row `row` of the buffer the kernels read (uint8, kernels::step_params_bytes() bytes, on the device;
  // each row's address stays the same for the buffer's lifetime: captured graphs hold it).
  torch::Tensor device_buffer(int64_t row = 0) const;
  int64_t rows() const { return rows_; }

 private:
  struct CudaRing;  // pinned slots and their events (CUDA builds)
  void check_row(int64_t row) const;  // std::out_of_range outside [0, rows)
  int64_t rows_, stride_;
  torch::Tensor device_;  // [rows, stride] bytes
  std::unique_ptr<CudaRing> single_, block_;  // CUDA: single steps' slots (row 0), blocks' slots (rows > 1)
};

}  // namespace sgmcmc
