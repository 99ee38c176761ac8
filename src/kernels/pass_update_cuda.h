// The sampler's update applied by the launch that finishes each gradient element (kernels.cuda_mlp_update:
// fused): the fused MLP pass's last GEMM launch (mlp_fused_cuda.cu) and its column blocks
// (mlp_tail_cuda.cu). CUDA sources only.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/fused_elementwise.h"
#include "kernels/mlp_fused.h"  // MlpLayerTensors
#include "kernels/philox.h"

namespace sgmcmc::kernels {

// The sampler's update in the last launch's epilogue (MlpFusedScratch::update): θ, its state and ∇Ũ as
// flat buffers (an element's index is its gradient's offset from gr) and the step's parameters on the
// device (write_step_params: the coefficients and the noise stream, read when the kernel runs, so that a
// replayed graph takes each step's). rule < 0: none.
template <typename T>
struct PassUpdate {
  int rule = -1;
  T* th = nullptr;
  T* s0 = nullptr;
  const T* gr = nullptr;
  const StepParams<T>* params = nullptr;
};

// Element i of the flat group: the rule with normal i of the step's stream, as the sampler's own kernel
// (fused_update_cuda.cu) gives it: component i % 4 of Philox block i / 4. ∇Ũ[i] is final (this thread
// has just written it).
template <typename T>
__device__ __forceinline__ void update_element(const PassUpdate<T>& u, const FusedCoefs<T>& k, uint64_t key,
                                               uint64_t offset, int64_t i) {
  const Normal4 z = philox_normal4(key, offset, static_cast<uint64_t>(i / 4));
  const int j = static_cast<int>(i % 4);
  const float zf = j == 0 ? z.a : j == 1 ? z.b : j == 2 ? z.c : z.d;
  switch (static_cast<FusedRule>(u.rule)) {
    case FusedRule::kSgld: fused_element<FusedRule::kSgld, T>(u.th, u.s0, nullptr, nullptr, nullptr, u.gr, i, zf, k); break;
    case FusedRule::kPsgld: fused_element<FusedRule::kPsgld, T>(u.th, u.s0, nullptr, nullptr, nullptr, u.gr, i, zf, k); break;
    case FusedRule::kSghmcEuler:
      fused_element<FusedRule::kSghmcEuler, T>(u.th, u.s0, nullptr, nullptr, nullptr, u.gr, i, zf, k);
      break;
    case FusedRule::kSghmcSsi:
      fused_element<FusedRule::kSghmcSsi, T>(u.th, u.s0, nullptr, nullptr, nullptr, u.gr, i, zf, k);
      break;
    default: break;  // not taken (pass_update_of)
  }
}

// The sampler's prepared update `u` where a launch that finishes every gradient of `layers` can apply all
// of it: a rule update_element instantiates, flat buffers of the layers' dtype and device, and the layers'
// parameters and gradients covering θ and ∇Ũ exactly, each at the same offset in both. rule −1 otherwise
// (the caller launches the sampler's own kernel).
template <typename T>
PassUpdate<T> pass_update_of(const FusedUpdateArgs* u, const std::vector<MlpLayerTensors>& layers) {
  if (u == nullptr || layers.empty()) return {};
  size_t states = 0;
  switch (u->rule) {
    case FusedRule::kSgld: break;
    case FusedRule::kPsgld:
    case FusedRule::kSghmcEuler:
    case FusedRule::kSghmcSsi: states = 1; break;
    default: return {};
  }
  const torch::Tensor& th = u->theta;
  const torch::Tensor& gr = u->grad;
  const auto flat = [&](const torch::Tensor& t) {
    return t.defined() && t.is_contiguous() && t.scalar_type() == layers[0].weight.scalar_type() &&
           t.device() == layers[0].weight.device() && th.defined() && t.numel() == th.numel();
  };
  if (!flat(th) || !flat(gr) || u->state.size() != states) return {};
  for (const auto& st : u->state)
    if (!flat(st)) return {};
  const auto& sp = u->step_params;
  if (!sp.defined() || sp.scalar_type() != torch::kUInt8 || !sp.is_contiguous() || sp.numel() < step_params_bytes() ||
      sp.device() != th.device() || reinterpret_cast<uintptr_t>(sp.data_ptr()) % alignof(StepParams<T>) != 0)
    return {};
  // element offsets from the buffers' starts, by address (the layers' tensors are views into them)
  const auto offset_in = [](const torch::Tensor& t, const torch::Tensor& base) {
    const auto d = static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data_ptr())) -
                   static_cast<int64_t>(reinterpret_cast<uintptr_t>(base.data_ptr()));
    return d % static_cast<int64_t>(sizeof(T)) == 0 ? d / static_cast<int64_t>(sizeof(T)) : int64_t{-1};
  };
  std::vector<std::pair<int64_t, int64_t>> spans;  // (offset, elements) of every parameter
  for (const auto& l : layers)
    for (const auto& [p, g] : {std::pair{&l.weight, &l.weight_grad}, std::pair{&l.bias, &l.bias_grad}}) {
      const int64_t at = offset_in(*p, th);
      if (at < 0 || offset_in(*g, gr) != at || at + p->numel() > th.numel() || g->numel() != p->numel()) return {};
      spans.emplace_back(at, p->numel());
    }
  std::sort(spans.begin(), spans.end());
  int64_t next = 0;
  for (const auto& [at, n] : spans) {
    if (at != next) return {};  // a gap (elements no problem finishes) or an overlap
    next += n;
  }
  if (next != th.numel()) return {};
  PassUpdate<T> up;
  up.rule = static_cast<int>(u->rule);
  up.th = th.data_ptr<T>();
  up.s0 = states > 0 ? u->state[0].data_ptr<T>() : nullptr;
  up.gr = gr.data_ptr<T>();
  up.params = static_cast<const StepParams<T>*>(sp.data_ptr());
  return up;
}

}  // namespace sgmcmc::kernels
