// c10's CUDA error checks for the CPU emulator (tests/cuda_emu/cuda_emu.h), whose launches throw their errors.
#pragma once

#include <stdexcept>
#include <string>

#include "cuda_emu.h"

#define C10_CUDA_CHECK(expr)                                                                    \
  do {                                                                                          \
    const cudaError_t sgmcmc_emu_err_ = (expr);                                                 \
    if (sgmcmc_emu_err_ != cudaSuccess)                                                         \
      throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorString(sgmcmc_emu_err_)); \
  } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
