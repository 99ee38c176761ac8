// Float32 matrix products on cuBLASLt with the kernel chosen by measurement, split-K included.
//
// At App. H.1's shapes (500 × 784 · 784 × 100 and its weight gradient 100 × 500 · 500 × 784) cuBLAS's
// heuristics pick a kernel of 4–26 output tiles, a few percent of an H100's 132 SMs, and take ~20 µs
// where the arithmetic is ~1 µs of the SMs' float32 rate; XLA's autotuner picks split-K 4–16 for the same
// products (docs/performance.md, "Why BlackJAX's step is faster on the GPU"). gemm_lt does what XLA
// does, per shape, once: the candidates are cuBLASLt's heuristic list (up to kHeuristics) plus, for its
// first few split-K-capable kernels, each of them with the k dimension split 2, 4, 8, 16 and 32 ways
// (the partial sums reduced in place or in the workspace, as the kernel supports); each candidate runs
// queued behind a spinning kernel (so that the host's launch cost is not in the time), and the fastest
// is kept for that shape and used from then on, also inside CUDA-graph capture.
//
// Arithmetic: float32 FMAs (CUBLAS_COMPUTE_32F), or TF32 where ATen's cuBLAS allows it (train.tf32):
// the same as ATen's mm. A split sums the k range in another order, so the result differs from cuBLAS's
// by float32 rounding. A measured choice may differ between processes (two candidates within the timing
// noise), so choices are kept in a file (kernels.cuda_gemm_cache, kernels/cuda_mlp/gemm_lt_cache.h): the first
// process on a machine to meet a shape measures it and every later one takes its choice, the same bits
// run after run (with the cache off, runs agree to float rounding, not bit for bit). A remembered shape
// needs no measurement, so it is also taken when first met inside a CUDA-graph capture.
//
// Used by the fused MLP pass's cuBLAS route for the hidden layers' products
// (kernels.cuda_mlp_gemm: cublaslt). Built where CMake finds CUDA's cublasLt library
// (SGMCMC_HAVE_CUBLASLT); without it gemm_lt returns false and the caller takes ATen.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace sgmcmc::kernels {

// c = a·b (accumulate: c += a·b) for float32 CUDA tensors: a [m, k], b [k, n], c [m, n], or each of
// C chains at once, a [C, m, k], b [C, k, n], c [C, m, n]; a and b each row-major or column-major (a
// transposed view), c row-major (its last stride 1), any leading dimensions and batch strides. The first
// call of a shape takes the cache's choice, or (outside graph capture) measures the candidates,
// synchronising the device; later calls launch on the current stream without a synchronisation and may
// be captured. Returns false, launching nothing, where it does not apply: other dtypes or layouts, an
// empty dimension, a build without cuBLASLt, a shape neither remembered nor measured yet met during
// capture, or a shape no candidate could run.
bool gemm_lt(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate);

// Whether this build has cuBLASLt (CUDA's cublasLt library found at build time).
bool gemm_lt_built();

// The choices made so far in this process, one per shape (benches print them; tests read them).
struct GemmLtChoice {
  std::string shape;       // "[C×]m×n×k, a row|col, b row|col[, accumulating][, tf32]"
  std::string kernel;      // cuBLASLt's algorithm id, tile id, split-K and reduction scheme
  int split_k = 1;
  int candidates = 0;      // how many were measured
  double us = 0;           // the chosen one's time per product, µs (GPU time, queued back to back)
  double heuristic_us = 0; // cuBLASLt's first heuristic choice's time, µs
  bool cached = false;     // taken from kernels.cuda_gemm_cache (the times are the measuring process's)
};
std::vector<GemmLtChoice> gemm_lt_choices();
// Drops this process's choices (tests: a shape's next call goes to the cache, or measures again).
void gemm_lt_forget_choices();

// Wall-clock seconds this process has spent measuring candidates so far (each shape met without a cached
// choice: a one-off cost per shape and machine, as a JIT compiler's). A run's summary reports its share as
// gemm_lt_measure_seconds, so that a short run's phase times can be read without it.
double gemm_lt_measure_seconds();

}  // namespace sgmcmc::kernels
