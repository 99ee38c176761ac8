// c10's CUDA stream for the CPU emulator (tests/cuda_emu/cuda_emu.h): one stream, whose work runs when it
// is launched.
#pragma once

#include <c10/core/Device.h>

#include "cuda_emu.h"

namespace c10::cuda {
struct CUDAStream {
  cudaStream_t stream() const { return nullptr; }
  operator cudaStream_t() const { return nullptr; }
  c10::DeviceIndex device_index() const { return -1; }
  bool operator==(const CUDAStream&) const { return true; }
  bool operator!=(const CUDAStream&) const { return false; }
};
inline CUDAStream getCurrentCUDAStream(int = -1) { return {}; }
inline CUDAStream getStreamFromPool(bool = false, int = -1) { return {}; }
inline void setCurrentCUDAStream(const CUDAStream&) {}
// Makes a stream current for a scope: with one stream, nothing to do.
struct CUDAStreamGuard {
  explicit CUDAStreamGuard(const CUDAStream&) {}
};
}  // namespace c10::cuda
