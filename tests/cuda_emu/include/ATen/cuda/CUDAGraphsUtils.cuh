// ATen's Philox unpacking for the CPU emulator (tests/cuda_emu/cuda_emu.h): a captured state's seed and
// offset are read through its pointers, as the device reads them when a replayed graph runs.
#pragma once

#include <ATen/cuda/CUDAGeneratorImpl.h>

#include <cstdint>
#include <tuple>

namespace at::cuda::philox {
inline std::tuple<uint64_t, uint64_t> unpack(const at::PhiloxCudaState& s) {
  if (s.captured_)
    return {static_cast<uint64_t>(*s.seed_.ptr), static_cast<uint64_t>(*s.offset_.ptr) + s.offset_intragraph_};
  return {s.seed_.val, s.offset_.val};
}
}  // namespace at::cuda::philox
