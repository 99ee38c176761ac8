// Float32 matrix products on tensor cores at float32's accuracy: 3xTF32 (CUTLASS's
// OpMultiplyAddFastF32; Ootomo & Yokota's split). Each operand x is split into x_big = tf32(x) and
// x_small = tf32(x − x_big), and
//   A·B ≈ A_big·B_big + A_big·B_small + A_small·B_big
// with float32 accumulation: the dropped A_small·B_small term and the splits' rounding are ~2^-20 of
// |A||B| per product, against float32's own 2^-24 (k of them accumulated), so the result is float32's
// to within k·2^-24 + 2^-20 of Σ_k |a_ik||b_kj|. On an H100 a tensor-core pass is ~8× the float32 SIMT
// rate, so the three passes still cost less than one SIMT product; what bounds the small products of
// App. H.1 is the launch and the tile count, which split-K (serial, in the kernel) evens out.
//
// Used by the fused MLP pass's cuBLAS route for the hidden layers' products
// (kernels.cuda_mlp_gemm: tf32x3). Built only with CUTLASS's headers (-DSGMCMC_CUTLASS_DIR=…, PyPI's
// nvidia-cutlass wheel: cutlass_library/source/include); without them gemm_tf32x3 returns false and
// the caller takes cuBLAS.
#pragma once

#include <torch/torch.h>

namespace sgmcmc::kernels {

// c = a·b (accumulate: c += a·b) for float32 CUDA matrices a [m, k], b [k, n], c [m, n] row-major
// contiguous; a and b each row-major or column-major (a transposed view of a contiguous matrix), every
// leading dimension and m, n, k a multiple of 4 and the pointers 16-byte aligned. split_k: the k
// slices (≥ 1; 0: chosen from the tile count and the SMs). Returns false, launching nothing, where it
// does not apply (or without CUTLASS); launches on the current stream, graph-capturable.
bool gemm_tf32x3(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate, int split_k = 0);

// The same for each of C chains: a [C, m, k], b [C, k, n], c [C, m, n] (each chain's matrix as above,
// the chains at a stride that is a multiple of 4; C ≤ 65,535), one launch.
bool gemm_tf32x3_batched(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate);

// Whether this build has the 3xTF32 products (CUTLASS's headers at build time).
bool gemm_tf32x3_built();

}  // namespace sgmcmc::kernels
