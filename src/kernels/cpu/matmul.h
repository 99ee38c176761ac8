// Dense matrix products for the models' own forward and backward passes:
//   matmul_out(out, a, b, bias, act):  out ← act(a·b + 1·biasᵀ)     (bias and act optional)
//   matmul_acc_(out, a, b):            out ← out + a·b                (β = 1: a weight gradient
//                                                                      accumulating into .grad)
// a and b may be transposed views (w.t(), g.t()): any strides with one of the last two 1. Batched
// products take 3-D tensors, a [B, m, k], b [B, k, n], out [B, m, n] and a bias [B, n] (the
// parallel chains' layers); 2-D ones a [m, k], b [k, n], out [m, n] and a bias [n].
//
// Backends. ATen (at::addmm / at::mm, i.e. the BLAS LibTorch links, OpenBLAS on Debian), then the
// activation as its own in-place pass; or oneDNN's matmul primitive (the library LibTorch itself links
// for its convolutions), where the bias and the activation run in the GEMM's epilogue (post-ops) and
// accumulation is its `sum` post-op. On this project's 2-core AVX-512 VM oneDNN's brgemm kernels do
// the App. H.1 step's five products 2.6–3× faster than OpenBLAS 0.3.21 (docs/performance.md).
// oneDNN is used where the build has it (CMake option SGMCMC_ONEDNN, on when oneDNN's headers and
// library are found; off in CUDA builds, whose PyTorch carries its own oneDNN) and the tensors are
// float32 on the CPU; CUDA tensors, other dtypes and odd strides take the ATen path. The config key
// kernels.matmul: aten selects ATen everywhere (A/B comparisons; bench_step --matmul).
// The two backends agree to float rounding (tests/test_matmul.cpp), not bit for bit.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace sgmcmc::kernels {

enum class Activation { kNone, kSigmoid, kRelu, kTanh };
enum class MatmulBackend { kAten, kOnednn };

// "sigmoid" | "relu" | "tanh" → the enum; std::invalid_argument otherwise.
Activation activation_from_name(const std::string& name);

bool onednn_built();                       // this build links oneDNN
MatmulBackend matmul_backend();            // oneDNN when built, unless kernels.matmul: aten
void set_matmul_backend(MatmulBackend b);  // kOnednn without onednn_built(): std::invalid_argument
std::string matmul_backend_name();         // "onednn" | "aten"
uint64_t onednn_matmul_calls();            // products oneDNN has run in this process (tests, benches)

void matmul_out(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                const torch::Tensor& bias = {}, Activation act = Activation::kNone);
void matmul_acc_(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b);

}  // namespace sgmcmc::kernels
