// The fused MLP pass's head over a group of rows, as a device function: the head kernel's body
// (mlp_fused_cuda.cu) and the forward-and-head launch's last block per row group (mlp_forward_head_cuda.cu)
// run the same arithmetic. CUDA sources only.
#pragma once

#include <c10/macros/Macros.h>

#include <cstdint>

#include "kernels/cuda_mlp/activation_hd.h"
#include "kernels/cuda/softmax_xent_row.h"

namespace sgmcmc::kernels {

// Rows r0 … r0 + rows − 1 (rows ≤ kThreads) of the output layer: f = h Wᵀ + b (a warp per row and class:
// 32 lane-strided fma chains added by a butterfly), the row's nll and g = s·(softmax(f) − onehot(y))
// (softmax_xent_row), then d = (g W) ⊙ act'(h) when d is set. With pre_bias, h holds the hidden layer before
// its bias and activation: act(h + pre_bias) is applied as the rows load and written to h_out. With
// parts > 1, h holds that many partial products over k, part_stride apart, added in part order first:
// ((h_0 + h_1) + h_2) + …, then the bias. h is read through L2 (__ldcg): other blocks of the same launch
// may have written it. Row r of h, h_out and d starts at r·rs (rs = hdim: rows back to back; the chains'
// shared minibatch: every chain's rows interleaved, rs = chains·hdim). smem holds outs·hdim +
// rows·(hdim + 2·outs) elements. Every thread of the block calls it (it synchronises).
template <typename T, int kThreads>
__device__ __forceinline__ void head_rows(const T* h, const T* w, const T* bias, const int64_t* y, int r0, int rows,
                                          int hdim, int64_t rs, int outs, T scale, Activation act, T* g, T* d,
                                          T* row_nll, const T* pre_bias, T* h_out, int parts, int64_t part_stride,
                                          T* smem) {
  T* ws = smem;              // [outs, hdim]
  T* hs = ws + outs * hdim;  // [rows, hdim]
  T* fs = hs + rows * hdim;  // [rows, outs] logits
  T* gs = fs + rows * outs;  // [rows, outs] gradient
  const int tid = threadIdx.x;
  // the row's label first: its load in flight under W's and h's instead of after the logits
  const int64_t yi = tid < rows ? y[r0 + tid] : 0;
  for (int i = tid; i < outs * hdim; i += kThreads) ws[i] = w[i];
  // element i = r·hdim + j of the block's rows: row r0 + r, column j
  const auto row_at = [&](int i) -> int64_t {
    return rs == hdim ? static_cast<int64_t>(r0) * hdim + i : (r0 + i / hdim) * rs + i % hdim;
  };
  for (int i = tid; i < rows * hdim; i += kThreads) {
    const int64_t at = row_at(i);
    T v = __ldcg(h + at);
    for (int p = 1; p < parts; ++p) v += __ldcg(h + p * part_stride + at);
    if (pre_bias != nullptr) h_out[at] = v = activate_hd(act, v + pre_bias[i % hdim]);
    hs[i] = v;
  }
  __syncthreads();
  const int warp = tid / 32, lane = tid % 32;
  for (int p = warp; p < rows * outs; p += kThreads / 32) {
    const int r = p / outs, c = p % outs;
    T s = T(0);
    for (int j = lane; j < hdim; j += 32) s = fma(hs[r * hdim + j], ws[c * hdim + j], s);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) fs[p] = s + bias[c];
  }
  __syncthreads();
  if (tid < rows) {
    CUDA_KERNEL_ASSERT(yi >= 0 && yi < outs);  // a label outside [0, k), as nll_loss asserts
    row_nll[r0 + tid] = softmax_xent_row<T>(fs + tid * outs, yi, outs, scale, gs + tid * outs);
  }
  __syncthreads();
  for (int i = tid; i < rows * outs; i += kThreads) g[static_cast<int64_t>(r0) * outs + i] = gs[i];
  if (d == nullptr) return;
  for (int i = tid; i < rows * hdim; i += kThreads) {
    const int r = i / hdim, j = i % hdim;
    T s = T(0);
    for (int c = 0; c < outs; ++c) s = fma(gs[r * outs + c], ws[c * hdim + j], s);
    d[row_at(i)] = derivative_times_hd(act, s, hs[i]);
  }
}

}  // namespace sgmcmc::kernels
