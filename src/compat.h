// The few LibTorch 1.13 / 2.x differences, in one place.
//
// Everything else in sgmcmc is written against the API common to LibTorch 1.13 (Debian's CPU build)
// and LibTorch 2.x (the CUDA builds inside PyTorch 2.x wheels).
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#endif

namespace sgmcmc::compat {

constexpr int kTorchMajor = TORCH_VERSION_MAJOR;
constexpr int kTorchMinor = TORCH_VERSION_MINOR;

// The variable that makes ProcessGroupNCCL's Work::wait() honour the group's timeout (and throw)
// rather than leave a hung collective to the watchdog: renamed with a TORCH_ prefix in 2.2.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
constexpr const char* kNcclBlockingWaitEnv = "TORCH_NCCL_BLOCKING_WAIT";
#else
constexpr const char* kNcclBlockingWaitEnv = "NCCL_BLOCKING_WAIT";
#endif

inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// A seeded generator for `device`. On CPU a fresh Philox-free mt19937 generator; on CUDA a fresh
// Philox generator for that device (1.13 and 2.x both expose make_generator<Impl>(device_index)).
inline at::Generator make_generator(const torch::Device& device, uint64_t seed) {
  if (device.is_cuda()) {
#if defined(SGMCMC_WITH_CUDA)
    auto gen = at::make_generator<at::CUDAGeneratorImpl>(device.index() < 0 ? 0 : device.index());
    gen.set_current_seed(seed);
    return gen;
#else
    TORCH_CHECK(false, "sgmcmc was built without CUDA support (configure with -DSGMCMC_CUDA=ON)");
#endif
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return gen;
}

// Generator state as a byte tensor (for checkpoints) and back. Same calls on 1.13 and 2.x.
inline torch::Tensor generator_state(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}
inline void set_generator_state(at::Generator& gen, const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// LibTorch 2.x's Module/Optimizer zero_grad() sets gradients to None by default; 1.13 zeroes them.
// sgmcmc always zeroes in place so `.grad` keeps its storage (a CUDA graph needs fixed addresses).
inline void zero_grad_inplace(torch::Tensor& p) {
  auto& g = p.mutable_grad();
  if (g.defined()) {
    // As torch.optim's zero_grad: detach a gradient that has history; a flat-buffer view (no
    // history) cannot be detached in place and needs not be.
    if (g.grad_fn()) {
      g.detach_();
    } else if (g.requires_grad()) {
      g.requires_grad_(false);
    }
    g.zero_();
  }
}

inline bool cuda_available() { return torch::cuda::is_available(); }

#if defined(SGMCMC_WITH_CUDA)
// Registers `gen` with `graph` before its capture, so that every replay draws at fresh Philox
// offsets of `gen`. LibTorch >= 2.4 registers any CUDA generator (CUDAGraph::register_generator_state);
// older versions capture with the device's default generator only.
namespace detail {
// CUDAGraph::register_generator_state(const at::Generator&): LibTorch 2.4 up to (at least) 2.11; later
// versions keep only the overload taking the generator's internal state.
template <typename Graph, typename = void>
struct registers_generators : std::false_type {};
template <typename Graph>
struct registers_generators<Graph, std::void_t<decltype(std::declval<Graph&>().register_generator_state(
                                       std::declval<const at::Generator&>()))>> : std::true_type {};
}  // namespace detail

template <typename Graph = at::cuda::CUDAGraph>
inline void register_graph_generator(Graph& graph, const at::Generator& gen) {
  if constexpr (detail::registers_generators<Graph>::value) {
    graph.register_generator_state(gen);
  } else {
    (void)graph;
    TORCH_CHECK(gen == at::cuda::detail::getDefaultCUDAGenerator(gen.device().index()),
                "train.graph: LibTorch ", torch_version(),
                " captures CUDA graphs here with the default CUDA generator only");
  }
}
#endif

}  // namespace sgmcmc::compat
