// ATen's CUDA generator for the CPU emulator (tests/cuda_emu/cuda_emu.h): a generator of device type CUDA
// that hands out Philox seeds and offsets as ATen's does (PhiloxCudaState, the offset advanced by the
// increment rounded up to a multiple of 4), on the host, without a graph capture. Constructed as ATen's,
// from a device index (at::make_generator<at::CUDAGeneratorImpl>(), then set_current_seed).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/cuda/detail/PhiloxCudaStateRaw.cuh>
#include <c10/core/GeneratorImpl.h>

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "cuda_emu.h"

namespace at {

struct CUDAGeneratorImpl : public c10::GeneratorImpl {
  explicit CUDAGeneratorImpl(c10::DeviceIndex device_index = -1)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::CUDA, device_index < 0 ? 0 : device_index),
                           c10::DispatchKeySet(c10::DispatchKey::CUDA)) {}
  static c10::DeviceType device_type() { return c10::DeviceType::CUDA; }

  void set_current_seed(uint64_t seed) override { seed_ = seed, offset_ = 0; }
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override { throw std::logic_error("cuda_emu: CUDAGeneratorImpl::seed() is not emulated"); }
  void set_state(const c10::TensorImpl&) override {
    throw std::logic_error("cuda_emu: CUDAGeneratorImpl::set_state is not emulated");
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    throw std::logic_error("cuda_emu: CUDAGeneratorImpl::get_state is not emulated");
  }
  uint64_t philox_offset_per_thread() const { return offset_; }
  void set_philox_offset_per_thread(uint64_t offset) {
    if (offset % 4 != 0) throw std::invalid_argument("cuda_emu: the Philox offset must be a multiple of 4");
    offset_ = offset;
  }
  // pure virtual in LibTorch 2.x's GeneratorImpl, absent from 1.13's (so not marked override)
  void set_offset(uint64_t offset) { set_philox_offset_per_thread(offset); }
  uint64_t get_offset() const { return offset_; }

  PhiloxCudaState philox_cuda_state(uint64_t increment) {
    const auto [seed, offset] = philox_engine_inputs(increment);
    return PhiloxCudaState(seed, offset);
  }
  std::pair<uint64_t, uint64_t> philox_engine_inputs(uint64_t increment) {
    const uint64_t offset = offset_;
    offset_ += (increment + 3) / 4 * 4;
    return {seed_, offset};
  }

 private:
  CUDAGeneratorImpl* clone_impl() const override {
    auto* g = new CUDAGeneratorImpl(device().index());
    g->seed_ = seed_, g->offset_ = offset_;
    return g;
  }
  uint64_t seed_ = c10::default_rng_seed_val;
  uint64_t offset_ = 0;
};

namespace cuda::detail {
inline const Generator& getDefaultCUDAGenerator(c10::DeviceIndex = -1) {
  static const Generator g = make_generator<CUDAGeneratorImpl>();
  return g;
}
}  // namespace cuda::detail

}  // namespace at
