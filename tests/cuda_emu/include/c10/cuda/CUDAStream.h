// c10's CUDA stream for the CPU emulator (tests/cuda_emu/cuda_emu.h): one stream, whose work runs when it
// is launched.
#pragma once

#include "cuda_emu.h"

namespace c10::cuda {
struct CUDAStream {
  cudaStream_t stream() const { return nullptr; }
  operator cudaStream_t() const { return nullptr; }
};
inline CUDAStream getCurrentCUDAStream(int = -1) { return {}; }
}  // namespace c10::cuda
