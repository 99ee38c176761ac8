// Which implementation runs a piece of the step: the `kernels:` block of a config.
//
// Every choice here gives the same numbers up to float rounding (the tests compare the paths); they
// exist so that a user can put a step back on ATen's ops when a kernel misbehaves on their machine,
// and so that the benches can A/B a kernel against its reference. The trainer installs the run's
// settings once, before the first step (set_kernel_settings); summary.json records them.
//
//   kernels:
//     matmul: auto        # auto: oneDNN for the models' products when built | aten
//     noise: auto         # auto: the AVX-512 Philox loop when the CPU has it | portable
//     pool: auto          # auto: the AVX-512 ReLU + 2x2 max-pool when the CPU has it | portable
//     byte_rows: true     # IDX images kept as bytes and widened per minibatch (4x less memory traffic)
//     prior_fold: true    # the prior's gradient folded into the sampler's update where it can be
//     cuda_gemm: route    # route: float32 products around two slow cuBLAS shapes | aten
//     cuda_loss: fused    # fused: softmax + cross-entropy + gradient in one CUDA kernel | aten
//     cuda_bpmf: fused    # fused: BPMF's gradient in one CUDA kernel | aten
//     cuda_gather: fused  # fused: the minibatch's images and labels in one CUDA kernel | aten
//     cuda_mlp: auto      # auto: the MLP's forward + backward in 2 + depth kernels where measured faster
//                         # (every layer's in·out ≤ 640,000) | fused: wherever it applies | aten
//     cuda_mlp_gemm: auto # auto (cublaslt for one chain up to 4 layers, pipelined for one chain beyond,
//                         # tiled for chains) | tiled | pipelined | cublas | cublaslt: the pass's GEMM kernel
//                         # (pipelined: 4 stages of asynchronous copies in flight, 4 × 4 outputs a thread;
//                         # cublas: the hidden layers' products on cuBLAS, the rest in the pass's kernels (up
//                         # to 4 layers); cublaslt: those products on cuBLASLt, its kernel and split-K
//                         # measured per shape, kernels/gemm_lt.h)
//     cuda_mlp_prior: fused # fused: λθ in the fused pass's weight-gradient epilogue | aten
//     cuda_mlp_tail: auto # auto (gemm) | gemm | columns: the cuBLAS route's last launch as split-K GEMM
//                         # blocks or as column blocks that keep every sum inside one block
//                         # (kernels/mlp_tail.h; pending a GPU's timing, docs/gpu_kernels.md)
//     cuda_mlp_kparts: auto # auto (1) | 1 | 2 | 4 | 8: the cuBLAS route's product into the head as that many
//                         # k-parts of one batched cuBLASLt product, added in order by the head (pending)
//     cuda_mlp_forward: auto # auto (cublas) | cublas | fused: the last hidden layer and the head as a
//                         # product, its split-K reduction and the head kernel, or in one launch
//                         # (kernels/mlp_forward_head.h; pending)
//     cuda_mlp_wgrad: auto # auto (cublas) | cublas | fused: the backward sums as cuBLASLt products and the
//                         # pass's last launch, or one tiled launch (kernels/weight_grad.h; pending)
//     cuda_gemm_cache: auto # auto ($XDG_CACHE_HOME/sgmcmc/gemm_lt.json, else ~/.cache/sgmcmc/…) | off | FILE:
//                         # where cublaslt's measured choices are kept, so that every run on a machine takes
//                         # the same kernels (kernels/gemm_lt_cache.h)
// What each variant measured, and the variants measured slower and removed: docs/gpu_kernels.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/option_map.h"

namespace sgmcmc {

struct KernelSettings {
  bool matmul_aten = false;  // matmul: aten
  bool noise_portable = false;
  bool pool_portable = false;
  bool byte_rows = true;
  bool prior_fold = true;
  bool cuda_gemm_route = true;
  bool cuda_loss_fused = true;
  bool cuda_bpmf_fused = true;
  bool cuda_gather_fused = true;
  enum class Choice { kAuto, kFused, kAten };
  Choice cuda_mlp = Choice::kAuto;
  enum class MlpGemm { kAuto, kTiled, kPipelined, kCublas, kCublasLt };
  MlpGemm cuda_mlp_gemm = MlpGemm::kAuto;
  bool cuda_mlp_prior_fused = true;
  int cuda_mlp_kparts = 0;   // 0: auto (1)
  enum class MlpTail { kAuto, kGemm, kColumns };
  MlpTail cuda_mlp_tail = MlpTail::kAuto;
  // cuda_mlp_forward, cuda_mlp_wgrad: that half of the route on cuBLAS(Lt) products or in the pass's own launch
  enum class MlpLaunch { kAuto, kCublas, kFused };
  MlpLaunch cuda_mlp_forward = MlpLaunch::kAuto;
  MlpLaunch cuda_mlp_wgrad = MlpLaunch::kAuto;
  std::string cuda_gemm_cache = "auto";  // auto | off | a file (kernels/gemm_lt_cache.h)

  // The block as key -> text, every key present (summary.json, --help-keys).
  std::map<std::string, std::string> to_map() const;
  bool operator==(const KernelSettings& o) const { return to_map() == o.to_map(); }
};

const std::vector<std::string>& kernel_setting_keys();
// Reads the `kernels:` block (unknown keys were rejected by the caller's check_known).
// std::invalid_argument "<context>.<key>: ..." on a bad value.
KernelSettings parse_kernel_settings(const OptionMap& block);

// The settings the kernels read: the defaults until a run installs its own.
const KernelSettings& kernel_settings();
void set_kernel_settings(const KernelSettings& s);

// Installs settings for a scope and puts the previous ones back (tests, benches).
class ScopedKernelSettings {
 public:
  explicit ScopedKernelSettings(const KernelSettings& s) : saved_(kernel_settings()) { set_kernel_settings(s); }
  ~ScopedKernelSettings() { set_kernel_settings(saved_); }
  ScopedKernelSettings(const ScopedKernelSettings&) = delete;
  ScopedKernelSettings& operator=(const ScopedKernelSettings&) = delete;

 private:
  KernelSettings saved_;
};

}  // namespace sgmcmc
