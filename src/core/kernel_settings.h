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
//     cuda_act: aten      # aten | fused: the MLP's bias + activation kernels (fused measured slower)
//     cuda_gather: fused  # fused: the minibatch's images and labels in one CUDA kernel | aten
//     cuda_mlp: auto      # auto: the MLP's forward + backward in 2 + depth kernels where measured faster
//                         # (every layer's in·out ≤ 640,000) | fused: wherever it applies | aten
//     cuda_mlp_tile: auto # auto (32) | 32 | 64: the fused pass's GEMM tile edge (A/B)
//     cuda_mlp_blocks_per_sm: auto # auto (2) | 1 | 2 | 4 | 8 | 16: the fused pass's split-K target (A/B)
//     cuda_mlp_head_rows: auto # auto (1) | 1 | 2 | 4 | 8: rows per block of the pass's output-layer kernel (A/B)
//     cuda_mlp_gemm: auto # auto (cublaslt for one chain up to 4 layers, pipelined for one chain beyond,
//                         # tiled for chains) | tiled | pipelined | cublas | cublaslt | tf32x3 | cluster: the pass's GEMM
//                         # kernel (pipelined: 4 stages of asynchronous copies in flight, 4 × 4 outputs a
//                         # thread; cublas: the hidden layers' products on cuBLAS, the rest in the pass's
//                         # kernels (up to 4 layers); cublaslt: those products on cuBLASLt, its kernel and
//                         # split-K measured per shape, kernels/gemm_lt.h (a step 2–4 % faster than cublas,
//                         # the first step ~0.1 s slower); tf32x3: on tensor cores as 3xTF32,
//                         # kernels/gemm_tf32x3.h (slower than cublas at H.1's and FNN-800's shapes); cluster:
//                         # those products split-K across a thread-block cluster, reduced in its shared
//                         # memory, one kernel each, kernels/gemm_cluster.h (sm_90; bit for bit its CPU
//                         # reference on an H200, and slower than cublas: H.1 50.3 µs a step against 46.2)
//     cuda_mlp_prior: fused # fused: λθ in the fused pass's weight-gradient epilogue | aten
//     cuda_mlp_update: separate # separate: the sampler's update in its own kernel | fused: in the fused
//                         # pass's last kernel, for a graph-replayed step of one flat group with SGLD, pSGLD
//                         # or SGHMC (one kernel a step less, and no faster on an H200: H.1 46.4–46.5 µs
//                         # against 46.2–46.3, FNN-800 101.9–102.1 against 92.4–92.5)
//     cuda_mlp_tail: auto # auto (gemm) | gemm | columns: the cuBLAS route's last launch (the output layer's
//                         # ∇W and ∇b, the hidden layers' ∇b, λ_W W, the nll) as split-K GEMM blocks or as
//                         # column blocks that keep every sum inside one block (kernels/mlp_tail.h; 8 columns
//                         # × 64 row groups a block, not yet timed on a GPU; A/B)
//     cuda_mlp_streams: auto # auto (1) | 1 | 2: the cuBLAS route's launches that do not wait for the hidden
//                         # layers' ∇W products on a second stream beside them (A/B; 2 measured slower)
//     cuda_mlp_kparts: auto # auto (1) | 1 | 2 | 4 | 8: the cuBLAS route's product into the head (the last
//                         # hidden layer's pre-activation) as that many k-parts, one cuBLASLt batched product
//                         # writing each part's sum, added in order by the head as it loads its rows: no
//                         # split-K reduction kernel (2.8 µs of H.1's replayed step on an H100; A/B)
//     cuda_mlp_forward: auto # auto (cublas) | cublas | fused: the cuBLAS route's last hidden layer and the head
//                         # as a product, its split-K reduction and the head kernel, or in one launch of
//                         # row-group tiles whose last block per row group runs the head
//                         # (kernels/mlp_forward_head.h; not yet timed on a GPU; A/B)
//     cuda_mlp_wgrad: auto # auto (cublas) | cublas | fused: the cuBLAS route's backward sums (every ∇W_l,
//                         # ∇b_l, λθ, the nll) as cuBLASLt products and the pass's last launch, or one launch
//                         # of tiles whose 8 warps split the rows, added in warp order (kernels/weight_grad.h;
//                         # not yet timed on a GPU; A/B)
//     cuda_pdl: off      # off | on: the step's own CUDA kernels (the gather, the head, the last launch, the
//                         # update) launched as programmatic dependent launches (sm_90): each scheduled while
//                         # the kernel before it still runs, waiting inside for its results (kernels/pdl_cuda.h;
//                         # on an H100 ~1 % faster with the column blocks, H.1 5 µs slower with gemm's)
//     cuda_gemm_cache: auto # auto ($XDG_CACHE_HOME/sgmcmc/gemm_lt.json, else ~/.cache/sgmcmc/…) | off | FILE:
//                         # where cublaslt's measured choices are kept, so that every run on a machine takes
//                         # the same kernels (kernels/gemm_lt_cache.h)
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
  bool cuda_act_fused = false;
  bool cuda_gather_fused = true;
  enum class Choice { kAuto, kFused, kAten };
  Choice cuda_mlp = Choice::kAuto;
  int cuda_mlp_tile = 0;  // 0: auto
  int cuda_mlp_blocks_per_sm = 0;  // 0: auto
  int cuda_mlp_head_rows = 0;  // 0: auto
  enum class MlpGemm { kAuto, kTiled, kPipelined, kCublas, kCublasLt, kTf32x3, kCluster };
  MlpGemm cuda_mlp_gemm = MlpGemm::kAuto;
  bool cuda_mlp_prior_fused = true;
  bool cuda_mlp_update_fused = false;
  int cuda_mlp_streams = 0;  // 0: auto (1)
  int cuda_mlp_kparts = 0;   // 0: auto (1)
  enum class MlpTail { kAuto, kGemm, kColumns };
  MlpTail cuda_mlp_tail = MlpTail::kAuto;
  // cuda_mlp_forward, cuda_mlp_wgrad: that half of the route on cuBLAS(Lt) products or in the pass's own launch
  enum class MlpLaunch { kAuto, kCublas, kFused };
  MlpLaunch cuda_mlp_forward = MlpLaunch::kAuto;
  MlpLaunch cuda_mlp_wgrad = MlpLaunch::kAuto;
  bool cuda_pdl = false;
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
