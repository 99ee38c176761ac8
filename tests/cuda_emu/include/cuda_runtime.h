// The CUDA runtime as the CPU emulator gives it (tests/cuda_emu/cuda_emu.h).
#pragma once
#include "cuda_emu.h"
