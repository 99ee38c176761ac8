// out = src[idx] along dim 0 (index_select's result) into a reused buffer, for the minibatch of a
// CPU training step: the rows are copied in parallel, each task prefetching the rows a few ahead of
// the one it copies, so that the random rows' cache misses overlap. 500 random rows, not in cache, of
// a [50000, 1, 28, 28] float tensor on a 2-vCPU EPYC: 40–44 µs against index_select's 58 µs (which
// also allocates a fresh 1.6 MB result every call); the App. H.1 step gains ~1.5 %.
// CPU tensors with contiguous rows and int64 indices; anything else (CUDA) is index_select. `out`
// is resized when its shape or dtype differs. An index outside [0, src.size(0)) is a
// std::out_of_range naming it, as index_select's error.
#pragma once

#include <torch/torch.h>

namespace sgmcmc::kernels {

void gather_rows_out(torch::Tensor& out, const torch::Tensor& src, const torch::Tensor& idx);

// out = float32(src[idx]) / scale: uint8 rows (images kept as bytes: data/byte_rows.h) gathered and
// widened in the same pass, so the gather reads a quarter of the bytes. CPU only; contiguous uint8
// `src`, 1-D int64 `idx`, scale > 0 (else std::invalid_argument); `out` reused as above. The quotient
// is x·(1/s) corrected once by its residual (two FMAs; the same bits on every CPU): ByteRows checks
// these bits against the float data it stands for.
void gather_widen_rows_out(torch::Tensor& out, const torch::Tensor& src, const torch::Tensor& idx, float scale);

// a_out = a[idx], b_out = b[idx] in one CUDA kernel (a minibatch's images and labels: ATen's two
// index_select calls launch 2–4 kernels, ~11–15 µs of an App. H.1 step on an H200 under Nsight Compute).
// Contiguous CUDA `a`, `b` on one device whose rows are whole 4-byte words, 1-D int64 `idx` there; the
// outputs are reused when they already have the right shape, dtype and device (stable addresses for a
// captured CUDA graph). An index outside [0, rows) is a device-side assert. Returns false (nothing done)
// where that does not apply: the caller takes index_select (kernels.cuda_gather: aten always does).
// Rows of whole 16-byte vectors at 16-byte aligned addresses are copied a vector a thread, others a word
// a thread. Defined in CUDA builds only.
bool gather_rows_pair_cuda(torch::Tensor& a_out, const torch::Tensor& a, torch::Tensor& b_out, const torch::Tensor& b,
                           const torch::Tensor& idx);

}  // namespace sgmcmc::kernels
