#include "samplers/step_params_buffer.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/copy_async.h"

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace sgmcmc {

// A ring of pinned host slots of `rows` rows each, and per slot the event after its last copy.
struct StepParamsBuffer::CudaRing {
#if defined(SGMCMC_WITH_CUDA)
  CudaRing(int64_t slots, int64_t rows, int64_t stride)
      : host(torch::zeros({slots, rows, stride}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true))),
        done(static_cast<size_t>(slots)) {}
  torch::Tensor host;                    // [slots, rows, stride], pinned
  std::vector<at::cuda::CUDAEvent> done;  // per slot: its last copy has finished
  int64_t next = 0;
  bool staged = false;                   // the current slot holds staged rows (its old copy waited for)

  void* row(int64_t r) {
    if (!staged) {
      done[static_cast<size_t>(next)].synchronize();  // the slot's previous copy has read it
      staged = true;
    }
    return host[next][r].data_ptr();
  }
  void commit(torch::Tensor dst, int64_t rows) {
    if (!staged) throw std::logic_error("StepParamsBuffer: commit without staged rows");
    const int64_t j = next;
    next = (j + 1) % host.size(0);
    staged = false;
    kernels::copy_async(dst, host[j].narrow(0, 0, rows));
    done[static_cast<size_t>(j)].record();  // on the current stream, after the copy
  }
#endif
};

namespace {
// Rows 16-byte aligned: the kernels read the parameters as structs of doubles.
int64_t row_stride() { return (kernels::step_params_bytes() + 15) / 16 * 16; }
}  // namespace

StepParamsBuffer::StepParamsBuffer(torch::Device device, int64_t rows, int64_t slots)
    : rows_(rows), stride_(row_stride()) {
  if (rows < 1) throw std::invalid_argument("StepParamsBuffer: rows must be >= 1");
  if (slots < 1) throw std::invalid_argument("StepParamsBuffer: slots must be >= 1");
  device_ = torch::zeros({rows, stride_}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
  if (device.is_cuda()) {
#if defined(SGMCMC_WITH_CUDA)
    // single steps keep their 128 slots between blocks; blocks have slots of their own
    single_ = std::make_unique<CudaRing>(slots, 1, stride_);
    if (rows > 1) block_ = std::make_unique<CudaRing>(std::max<int64_t>(4, slots / rows), rows, stride_);
#else
    throw std::invalid_argument("StepParamsBuffer: a CUDA device needs a build with -DSGMCMC_CUDA=ON");
#endif
  }
}

StepParamsBuffer::~StepParamsBuffer() = default;

void StepParamsBuffer::check_row(int64_t row) const {
  if (row < 0 || row >= rows_)
    throw std::out_of_range("StepParamsBuffer: row " + std::to_string(row) + " of " + std::to_string(rows_));
}

torch::Tensor StepParamsBuffer::device_buffer(int64_t row) const {
  check_row(row);
  return device_[row].narrow(0, 0, kernels::step_params_bytes());
}

void StepParamsBuffer::write(kernels::FusedRule rule, const kernels::FusedScalars& s, kernels::NoiseStream noise,
                             torch::ScalarType dtype) {
  if (!single_) {
    kernels::write_step_params(rule, s, noise, dtype, device_[0].data_ptr());
    return;
  }
#if defined(SGMCMC_WITH_CUDA)
  kernels::write_step_params(rule, s, noise, dtype, single_->row(0));
  single_->commit(device_.narrow(0, 0, 1), 1);
#endif
}

void StepParamsBuffer::stage(int64_t row, kernels::FusedRule rule, const kernels::FusedScalars& s,
                             kernels::NoiseStream noise, torch::ScalarType dtype) {
  check_row(row);
  if (!single_) {
    kernels::write_step_params(rule, s, noise, dtype, device_[row].data_ptr());
    return;
  }
#if defined(SGMCMC_WITH_CUDA)
  CudaRing& ring = block_ ? *block_ : *single_;  // one row: a block of one step
  kernels::write_step_params(rule, s, noise, dtype, ring.row(row));
#endif
}

void StepParamsBuffer::commit(int64_t rows) {
  if (rows < 1 || rows > rows_)
    throw std::out_of_range("StepParamsBuffer: commit of " + std::to_string(rows) + " rows of " + std::to_string(rows_));
  if (!single_) return;
#if defined(SGMCMC_WITH_CUDA)
  (block_ ? *block_ : *single_).commit(device_.narrow(0, 0, rows), rows);
#endif
}

}  // namespace sgmcmc
