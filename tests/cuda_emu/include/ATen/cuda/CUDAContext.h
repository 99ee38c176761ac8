// The parts of ATen's CUDA context the kernels' launch code uses, for the CPU emulator
// (tests/cuda_emu/cuda_emu.h): the current stream (one, the emulator's) and the device's properties (an H100's).
#pragma once

#include "c10/cuda/CUDAStream.h"
#include "cuda_emu.h"

namespace at::cuda {
using c10::cuda::CUDAStream;
using c10::cuda::getCurrentCUDAStream;
inline cudaDeviceProp* getCurrentDeviceProperties() { return &::cuda_emu::emu().prop; }
}  // namespace at::cuda
