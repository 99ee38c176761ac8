// The float32 loops of models/relu_pool.h with AVX-512 intrinsics, for x86-64 CPUs that have it
// (x86-64-v4): one output row's windows, up to sixteen at a time, in registers. The two input rows'
// pairs are split into even and odd lanes by two permutes, the window's first maximum (ATen's order;
// a NaN wins) is three compare-and-blend steps, and rows shorter than sixteen windows (the CNN's
// 12- and 4-wide maps) are masked loads and stores rather than scalar remainders. The portable loop
// is branch-free too, but its compiler-vectorized form only starts at sixteen windows (sixty-four
// with the byte-wide positions), so on these maps it ran scalar: 1.5 ms vs 0.15 ms for the CNN's first
// pooling ([100, 20, 24, 24], one core of an AMD EPYC). Bit for bit the portable loop's results
// (tests/test_models.cpp compares both with ATen).
#pragma once

#include <cstdint>

namespace sgmcmc::detail {

bool relu_pool_avx512_available();
// Planes [p0, p1) of x [planes, H, W] → y, arg [planes, H/2, W/2].
void relu_pool_forward_avx512(const float* x, float* y, uint8_t* arg, int64_t p0, int64_t p1, int64_t H, int64_t W);
// Planes [p0, p1) of ∂y, arg → ∂x [planes, H, W] (rows 0 … 2·(H/2) − 1, columns 0 … 2·(W/2) − 1;
// the caller zeroes an odd size's last row and column).
void relu_pool_backward_avx512(const float* gy, const uint8_t* arg, float* gx, int64_t p0, int64_t p1, int64_t H,
                               int64_t W);

}  // namespace sgmcmc::detail
