// c10's device guard for the CPU emulator (tests/cuda_emu/cuda_emu.h): one device.
#pragma once

#include <c10/core/Device.h>

namespace c10::cuda {
struct CUDAGuard {
  explicit CUDAGuard(c10::Device) {}
  explicit CUDAGuard(c10::DeviceIndex) {}
};
struct OptionalCUDAGuard {
  OptionalCUDAGuard() = default;
  explicit OptionalCUDAGuard(c10::Device) {}
};
}  // namespace c10::cuda
