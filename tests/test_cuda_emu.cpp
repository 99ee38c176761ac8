// The pass's CUDA kernels run from their own .cu sources on the CPU, through the emulator of
// tests/cuda_emu/cuda_emu.h (a fiber per CUDA thread, __syncthreads and warp collectives as scheduling
// points), against their CPU references bit for bit: on every machine, not only where a GPU is lent. Each
// kernel runs with its threads and blocks in forward, reverse and shuffled order, so a missing barrier or an
// unordered read of another block's writes changes its results. The emulator's own checks come first: that
// it tells a missing barrier and a divergent warp collective from correct code, and enforces the launch limits.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuda_emu.h"
#include "cuda_kernel_checks.h"
#include "kernel_cases.h"
// every header the .cu files include, before the launch code's device check is redirected below
#include "core/kernel_settings.h"
#include "kernels/cuda_mlp/activation_hd.h"
#include "kernels/cuda/block_sum_cuda.h"
#include "kernels/cuda_mlp/gemm_lt.h"
#include "kernels/cuda_mlp/mlp_forward_head.h"
#include "kernels/cuda_mlp/mlp_fused.h"
#include "kernels/cuda_mlp/mlp_head_cuda.h"
#include "kernels/cuda_mlp/mlp_tail.h"
#include "kernels/cuda/launch_cuda.h"
#include "kernels/cuda/smem_cuda.h"
#include "kernels/cuda_mlp/weight_grad.h"

// The launch code takes only CUDA tensors; the emulator's device memory is the CPU's.
#define is_cuda is_cpu
#include "kernels/cuda_mlp/mlp_forward_head_cuda.cu"
#include "kernels/cuda_mlp/mlp_fused_cuda.cu"
#include "kernels/cuda_mlp/mlp_tail_cuda.cu"
#include "kernels/cuda_mlp/weight_grad_cuda.cu"
#undef is_cuda

// The products the pass hands to cuBLASLt are not emulated: they decline, and the pass takes its other
// routes, as it does where a build lacks cuBLASLt.
namespace sgmcmc::kernels {
bool gemm_lt(const torch::Tensor&, const torch::Tensor&, torch::Tensor&, bool) { return false; }
bool gemm_lt_built() { return false; }
std::vector<GemmLtChoice> gemm_lt_choices() { return {}; }
void gemm_lt_forget_choices() {}
double gemm_lt_measure_seconds() { return 0; }
}  // namespace sgmcmc::kernels

using namespace sgmcmc;
using cuda_kernel_checks::max_abs;
using cuda_emu::launches_of;

namespace cuda_emu_test {

template <typename... P, typename... A>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A&&... args) {
  cudaLaunchConfig_t cfg;
  cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...));
}

// Thread t writes s[t], then reads its neighbour's s[(t + 1) % n]: correct only with the barrier between.
template <bool kBarrier>
__global__ void neighbour_kernel(int* out) {
  __shared__ int s[128];
  const int t = threadIdx.x, n = blockDim.x;
  s[t] = 1000 * static_cast<int>(blockIdx.x) + t;
  if (kBarrier) __syncthreads();
  out[blockIdx.x * n + t] = s[(t + 1) % n];
  __syncthreads();  // the next block's writes wait for this block's reads
}

// A warp's butterfly sum (every lane gets Σ lanes), a shift down by 3 and up by 5, a rotation by 7 through
// __shfl_sync, and a ballot of the odd lanes.
__global__ void warp_kernel(int* out) {
  const int lane = threadIdx.x % 32;
  int s = lane;
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  out[threadIdx.x] = s;
  out[64 + threadIdx.x] = __shfl_down_sync(0xffffffffu, lane * 10, 3);
  out[128 + threadIdx.x] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 2) == 0xaaaaaaaau);
  out[192 + threadIdx.x] = __shfl_up_sync(0xffffffffu, lane * 10, 5);
  out[256 + threadIdx.x] = __shfl_sync(0xffffffffu, lane * 10, lane + 7);
}

// Lanes 0 … 15 exchange among themselves with a mask naming all 32, after lanes 16 … 31 have left: valid
// (a collective waits for the lanes of its mask that have not exited).
__global__ void half_warp_kernel(float* out) {
  if (threadIdx.x % 32 >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<float>(threadIdx.x), 1);
}

// Lanes 0 … 15 read lanes 16 … 31, which have left: undefined on the GPU, an error here.
__global__ void read_gone_kernel(float* out) {
  if (threadIdx.x % 32 >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 16);
}

// Half the lanes at __syncwarp, half in a shuffle, one mask: different collectives.
__global__ void mixed_ops_kernel(float* out) {
  if (threadIdx.x < 16) __syncwarp();
  else out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

// Lanes 0 … 15 wait at __syncthreads while lanes 16 … 31 wait in a collective that names them all.
__global__ void mixed_wait_kernel(float* out) {
  if (threadIdx.x < 16) __syncthreads();
  else out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

// Reads dynamic shared memory no thread wrote.
__global__ void unwritten_smem_kernel(float* out) {
  SGMCMC_DYNAMIC_SMEM(bytes);
  out[threadIdx.x] = reinterpret_cast<const float*>(bytes)[threadIdx.x];
}

__global__ void smem_kernel(float* out) {
  SGMCMC_DYNAMIC_SMEM(bytes);
  float* s = reinterpret_cast<float*>(bytes);
  s[threadIdx.x] = 2.0f * threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

// The launches of the pass's column blocks (kernels.cuda_mlp_tail: columns) so far, of dtype dt.
int64_t column_block_launches(torch::Dtype dt) {
  return dt == torch::kFloat64 ? launches_of(kernels::tail_columns::tail_kernel<double>)
                               : launches_of(kernels::tail_columns::tail_kernel<float>);
}

// The launches of the pass's pipelined GEMM kernel so far, of dtype dt (the tiled one also runs the cuBLAS
// route's last launch).
template <typename T>
int64_t pipelined_launches_as() {
  return launches_of(kernels::gemm_pipelined_kernel<T>);
}
int64_t pipelined_launches(torch::Dtype dt) {
  return dt == torch::kFloat64 ? pipelined_launches_as<double>() : pipelined_launches_as<float>();
}

// Every output the same bits as its reference.
void expect_same_bits(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(torch::equal(got[i], want[i])) << "output " << i << ", worst " << max_abs(got[i], want[i]);
}

}  // namespace cuda_emu_test

namespace cet = cuda_emu_test;
namespace fhc = forward_head_cases;
namespace wgc = weight_grad_cases;

// A missing __syncthreads shows as results that depend on the threads' order; with the barrier every order
// gives the same, correct values.
TEST(CudaEmu, MissingBarrierChangesResultsWithTheOrder) {
  const int n = 128, blocks = 3;
  std::vector<std::vector<int>> with, without;
  for (const auto& [name, s] : cuda_emu::orders()) {
    cuda_emu::ScopedSettings scope(s);
    std::vector<int> a(n * blocks, -1), b(n * blocks, -1);
    cet::launch(cet::neighbour_kernel<true>, dim3(blocks), dim3(n), 0, a.data());
    cet::launch(cet::neighbour_kernel<false>, dim3(blocks), dim3(n), 0, b.data());
    for (int blk = 0; blk < blocks; ++blk)
      for (int t = 0; t < n; ++t) ASSERT_EQ(a[blk * n + t], 1000 * blk + (t + 1) % n) << name;
    with.push_back(a), without.push_back(b);
  }
  EXPECT_EQ(with[0], with[1]);
  EXPECT_EQ(with[0], with[2]);
  EXPECT_NE(without[0], without[1]) << "forward and reverse order agree without the barrier";
}

TEST(CudaEmu, WarpCollectives) {
  for (const auto& [name, settings] : cuda_emu::orders()) {
    SCOPED_TRACE(name);
    cuda_emu::ScopedSettings scope(settings);
    std::vector<int> out(320, -1);
    cet::launch(cet::warp_kernel, dim3(1), dim3(64), 0, out.data());
    for (int t = 0; t < 64; ++t) {
      const int lane = t % 32;
      EXPECT_EQ(out[t], 496) << t;
      EXPECT_EQ(out[64 + t], lane + 3 < 32 ? (lane + 3) * 10 : lane * 10) << t;  // past the end: its own
      EXPECT_EQ(out[128 + t], 1) << t;
      EXPECT_EQ(out[192 + t], lane >= 5 ? (lane - 5) * 10 : lane * 10) << t;
      EXPECT_EQ(out[256 + t], (lane + 7) % 32 * 10) << t;
    }
    std::vector<float> half(64, -1.0f);
    cet::launch(cet::half_warp_kernel, dim3(1), dim3(64), 0, half.data());
    for (int t = 0; t < 64; ++t) EXPECT_EQ(half[t], t % 32 < 16 ? static_cast<float>(t ^ 1) : -1.0f) << t;
  }
}

// What is undefined or hangs on the GPU is an error here, with the block named.
TEST(CudaEmu, DivergentCollectivesAreErrors) {
  const auto expect_error = [](void (*kernel)(float*), unsigned threads, const std::string& words) {
    for (const auto& [name, settings] : cuda_emu::orders()) {
      cuda_emu::ScopedSettings scope(settings);
      std::vector<float> out(64, 0.0f);
      try {
        cet::launch(kernel, dim3(2), dim3(threads), 0, out.data());
        ADD_FAILURE() << name << ": no error (" << words << ")";
      } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << name << ": " << e.what();
      }
    }
  };
  expect_error(cet::read_gone_kernel, 64, "has left the kernel");
  expect_error(cet::mixed_ops_kernel, 32, "different warp collectives");
  expect_error(cet::mixed_wait_kernel, 32, "cannot complete");
}

// Dynamic shared memory: up to 48 KB as given, more only after cudaFuncSetAttribute raised the kernel's
// limit, never past the device's opt-in maximum; the launch's own buffer, NaN bytes until written.
TEST(CudaEmu, DynamicSharedMemoryLimits) {
  std::vector<float> out(256, 0.0f);
  cet::launch(cet::smem_kernel, dim3(1), dim3(256), 48 * 1024, out.data());
  for (int t = 0; t < 256; ++t) ASSERT_EQ(out[t], 2.0f * (255 - t));
  EXPECT_THROW(cet::launch(cet::smem_kernel, dim3(1), dim3(256), 64 * 1024, out.data()), std::runtime_error);
  EXPECT_NE(cudaFuncSetAttribute(cet::smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024), cudaSuccess);
  ASSERT_EQ(cudaFuncSetAttribute(cet::smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024), cudaSuccess);
  cet::launch(cet::smem_kernel, dim3(1), dim3(256), 64 * 1024, out.data());
  EXPECT_THROW(cet::launch(cet::smem_kernel, dim3(1), dim3(2048), 0, out.data()), std::runtime_error);
  cet::launch(cet::unwritten_smem_kernel, dim3(1), dim3(32), 32 * sizeof(float), out.data());
  for (int t = 0; t < 32; ++t) EXPECT_TRUE(std::isnan(out[t])) << t;
}

// kernels.cuda_mlp_forward: fused: the kernel (tiles, the warps' partial tiles in warp order, the last
// slice block of a row group running the head) against mlp_forward_head_reference bit for bit, every case,
// dtype and order; the counts back at 0; the layer alone (no head) the same h.
TEST(CudaEmu, ForwardHeadEqualsReferenceBitForBit) {
  for (auto dt : {torch::kFloat32, torch::kFloat64})
    for (const auto& c : fhc::cases()) {
      if (c.name == "FNN-800" && dt == torch::kFloat64) continue;  // its head's 169 KB: declined
      const auto start = fhc::make(c, dt, 21);
      auto want = fhc::copy_to(start, torch::kCPU);
      kernels::mlp_forward_head_reference(want);
      for (const auto& [order, s] : cuda_emu::orders()) {
        SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64, " : " float32, ") + order);
        cuda_emu::ScopedSettings scope(s);
        auto got = fhc::copy_to(start, torch::kCPU);
        ASSERT_TRUE(kernels::mlp_forward_head_cuda(got));
        const auto w = fhc::outputs(want);
        cet::expect_same_bits(fhc::outputs(got), w);
        EXPECT_EQ(got.counters.abs().sum().item<int64_t>(), 0);
        auto alone = fhc::without_head(fhc::copy_to(start, torch::kCPU));
        ASSERT_TRUE(kernels::mlp_forward_head_cuda(alone));
        EXPECT_TRUE(torch::equal(alone.h_out, w[0])) << "without the head";
      }
    }
  auto wide = fhc::make(fhc::Case{"wide", 20, 8, 4000, 200, kernels::Activation::kRelu}, torch::kFloat32, 2);
  const int64_t launches = cuda_emu::emu().counts.launches;
  EXPECT_FALSE(kernels::mlp_forward_head_cuda(wide));
  EXPECT_EQ(cuda_emu::emu().counts.launches, launches) << "a declined launch ran";
}

// kernels.cuda_mlp_wgrad: fused: one product (overwriting and accumulating) at H.1's, FNN-800's and odd
// shapes, and the whole backward launch (both layers, their biases, the prior or accumulating, the nll block
// and the loss sum), against weight_grad_reference bit for bit in every order.
TEST(CudaEmu, WeightGradEqualsReferenceBitForBit) {
  for (auto dt : {torch::kFloat32, torch::kFloat64}) {
    for (const auto& c : wgc::cases())
      for (bool accumulate : {false, true}) {
        const auto [a, b, start, want] = wgc::product(c, dt, accumulate);
        for (const auto& [order, s] : cuda_emu::orders()) {
          if (c.name == "FNN-800" && order != "shuffled") continue;  // 625 blocks: one order is enough
          SCOPED_TRACE(c.name + (dt == torch::kFloat64 ? " float64, " : " float32, ") + order +
                       (accumulate ? ", accumulating" : ""));
          cuda_emu::ScopedSettings scope(s);
          auto got = start.clone();
          ASSERT_TRUE(kernels::weight_grad_cuda(kernels::weight_grad_of(a, b, got, accumulate)));
          EXPECT_TRUE(torch::equal(got, want)) << "worst " << max_abs(got, want);
        }
      }
    for (bool prior : {true, false}) {
      const auto start = wgc::launch(dt, prior, true, 13);
      auto want = wgc::copy_to(start, torch::kCPU);
      kernels::weight_grad_reference(want);
      for (const auto& [order, s] : cuda_emu::orders()) {
        SCOPED_TRACE(std::string(dt == torch::kFloat64 ? "backward, float64, " : "backward, float32, ") + order +
                     (prior ? ", prior" : ""));
        cuda_emu::ScopedSettings scope(s);
        auto got = wgc::copy_to(start, torch::kCPU);
        ASSERT_TRUE(kernels::weight_grad_cuda(got));
        cet::expect_same_bits(wgc::outputs(got), wgc::outputs(want));
      }
    }
  }
}

namespace cuda_emu_test {

// An MLP's layers as plain tensors: C chains stacked ([C, out, in], [C, out]) or one ([out, in], [out]),
// random parameters and random gradients (what accumulating adds to).
std::vector<kernels::MlpLayerTensors> mlp_layers(const std::vector<int64_t>& widths, int64_t chains, torch::Dtype dt) {
  const auto o = torch::TensorOptions().dtype(dt);
  std::vector<kernels::MlpLayerTensors> layers;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    std::vector<int64_t> w{out, in}, b{out};
    if (chains > 1) w.insert(w.begin(), chains), b.insert(b.begin(), chains);
    kernels::MlpLayerTensors L;
    L.weight = torch::randn(w, o) / std::sqrt(static_cast<double>(in)), L.bias = torch::randn(b, o) * 0.1;
    L.weight_grad = torch::randn(w, o), L.bias_grad = torch::randn(b, o);
    layers.push_back(L);
  }
  return layers;
}

std::vector<kernels::MlpLayerTensors> clone_grads(const std::vector<kernels::MlpLayerTensors>& layers) {
  auto c = layers;
  for (auto& L : c) L.weight_grad = L.weight_grad.clone(), L.bias_grad = L.bias_grad.clone();
  return c;
}

// The largest difference over the largest magnitude (at least 1).
double max_rel(const torch::Tensor& got, const torch::Tensor& want) {
  const auto w = want.to(torch::kFloat64), g = got.to(torch::kFloat64);
  return (g - w).abs().max().item<double>() / std::max(1.0, w.abs().max().item<double>());
}

}  // namespace cuda_emu_test

// The whole fused pass (mlp_backward_fused_cuda: its kernels, the products the cuBLAS route gives ATen, the
// launches' wiring and scratch) against mlp_backward_reference, overwriting and accumulating, twice the same
// bits: one chain with the pass's own launches for the forward half, the backward half, both (kernels.
// cuda_mlp_forward / _wgrad: fused), and the forward's with the last launch as column blocks (kernels.
// cuda_mlp_tail: columns; the backward launch, where it runs, finishes what they would), on App. H.1's widths
// and a deeper ReLU net; the pass's own GEMM kernels for one chain (pipelined: kernels.cuda_mlp_gemm: auto
// beyond 4 layers, with cp.async's synchronous branch; tiled); chains sharing one minibatch on the cuBLAS
// route (train.chain_minibatch: shared); chains with minibatches of their own on the tiled kernel. The route's
// products run on the CPU in another order than the reference's sums: float32 within 2e-5, float64 1e-12 of
// the largest magnitude (tests/test_mlp_fused.cpp's bound).
TEST(CudaEmu, FusedPassEqualsReference) {
  using Gemm = KernelSettings::MlpGemm;
  using Launch = KernelSettings::MlpLaunch;
  struct Variant {
    std::string name;
    std::vector<int64_t> widths;
    kernels::Activation act;
    int64_t rows, chains;
    bool shared;
    Gemm gemm;
    bool forward, wgrad, columns;
  };
  const std::vector<int64_t> h1 = {784, 100, 10}, deep = {60, 40, 33, 7};
  const auto sig = kernels::Activation::kSigmoid, relu = kernels::Activation::kRelu;
  const std::vector<Variant> variants = {
      {"H.1, cuBLAS route", h1, sig, 100, 1, false, Gemm::kCublas, false, false, false},
      {"deep ReLU, cuBLAS route", deep, relu, 37, 1, false, Gemm::kCublas, false, false, false},
      {"H.1, pipelined kernel", h1, sig, 100, 1, false, Gemm::kPipelined, false, false, false},
      {"deep ReLU, pipelined kernel", deep, relu, 37, 1, false, Gemm::kPipelined, false, false, false},
      {"H.1, tiled kernel, one chain", h1, sig, 100, 1, false, Gemm::kTiled, false, false, false},
      {"H.1, forward fused", h1, sig, 100, 1, false, Gemm::kCublas, true, false, false},
      {"H.1, wgrad fused", h1, sig, 100, 1, false, Gemm::kCublas, false, true, false},
      {"H.1, own launches", h1, sig, 100, 1, false, Gemm::kCublas, true, true, false},
      {"H.1, forward fused, column blocks", h1, sig, 100, 1, false, Gemm::kCublas, true, false, true},
      {"deep ReLU, own launches", deep, relu, 37, 1, false, Gemm::kCublas, true, true, false},
      {"H.1, 3 chains shared", h1, sig, 40, 3, true, Gemm::kCublas, false, false, false},
      {"deep ReLU, 2 chains own, tiled", deep, relu, 37, 2, false, Gemm::kTiled, false, false, false}};
  for (const auto& v : variants)
    for (auto dt : {torch::kFloat32, torch::kFloat64})
      for (bool overwrite : {true, false}) {
        SCOPED_TRACE(v.name + (dt == torch::kFloat64 ? ", float64" : ", float32") + (overwrite ? ", overwriting" : ", accumulating"));
        torch::manual_seed(31);
        KernelSettings k;
        k.cuda_mlp = KernelSettings::Choice::kFused;
        k.cuda_mlp_gemm = v.gemm;
        k.cuda_mlp_forward = v.forward ? Launch::kFused : Launch::kAuto;
        k.cuda_mlp_wgrad = v.wgrad ? Launch::kFused : Launch::kAuto;
        k.cuda_mlp_tail = v.columns ? KernelSettings::MlpTail::kColumns : KernelSettings::MlpTail::kGemm;
        ScopedKernelSettings scoped(k);
        const int64_t pipelined = cet::pipelined_launches(dt);
        const int64_t n = v.shared ? v.rows : v.rows * v.chains;
        const auto x = torch::rand({n, v.widths.front()}, torch::TensorOptions().dtype(dt));
        const auto y = torch::randint(0, v.widths.back(), {n}, torch::kInt64);
        const auto start = cet::mlp_layers(v.widths, v.chains, dt);
        auto want = cet::clone_grads(start);
        const auto want_nll = kernels::mlp_backward_reference(x, y, want, v.act, 7.0, overwrite, v.chains, v.shared);
        kernels::MlpFusedScratch scratch;
        auto got = cet::clone_grads(start);
        const auto tails = cet::column_block_launches(dt);
        const auto got_nll =
            kernels::mlp_backward_fused_cuda(x, y, got, v.act, 7.0, overwrite, scratch, v.chains, v.shared);
        ASSERT_TRUE(got_nll.defined()) << "the pass declined";
        EXPECT_EQ(cet::column_block_launches(dt) - tails, v.columns ? 1 : 0) << "the column blocks' launches";
        const int hidden = static_cast<int>(v.widths.size()) - 2;
        EXPECT_EQ(cet::pipelined_launches(dt) > pipelined, v.gemm == Gemm::kPipelined) << "the pipelined kernel ran";
        EXPECT_EQ(scratch.forward_applied, v.forward ? hidden : 0);
        EXPECT_EQ(scratch.wgrad_applied, v.wgrad ? hidden : 0);
        const double tol = dt == torch::kFloat64 ? 1e-12 : 2e-5;
        EXPECT_LE(cet::max_rel(got_nll, want_nll), tol) << "nll";
        for (size_t l = 0; l < got.size(); ++l) {
          EXPECT_LE(cet::max_rel(got[l].weight_grad, want[l].weight_grad), tol) << "∇W of layer " << l;
          EXPECT_LE(cet::max_rel(got[l].bias_grad, want[l].bias_grad), tol) << "∇b of layer " << l;
        }
        if (!overwrite) continue;
        auto again = cet::clone_grads(start);
        const auto again_nll =
            kernels::mlp_backward_fused_cuda(x, y, again, v.act, 7.0, true, scratch, v.chains, v.shared);
        EXPECT_TRUE(torch::equal(again_nll, got_nll));
        for (size_t l = 0; l < got.size(); ++l)
          EXPECT_TRUE(torch::equal(again[l].weight_grad, got[l].weight_grad) && torch::equal(again[l].bias_grad, got[l].bias_grad))
              << "a second call, layer " << l;
      }
}
