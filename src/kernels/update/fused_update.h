// Fused sampler updates over one flat buffer: θ, the sampler's state and ∇Ũ each read once and
// written once per step, the Gaussian noise generated in registers (kernels/update/philox.h). One call is
// one parallel loop on the CPU, one kernel launch on CUDA. Each rule is the same arithmetic as its
// reference in kernels/update/update_rules.h, element by element (tests/test_fused.cpp compares them with
// the same noise, from philox_normal below).
//
// Noise: element i gets the i-th normal of the stream (key, offset) (kernels/update/philox.h). On the CPU
// the sampler draws a fresh 64-bit key from its generator per group and step (offset 0); on CUDA the
// key and offset come from the device generator's Philox state (fused_update), or are drawn from it on
// the host and read from the step's parameters (fused_update_from, whose replays thus draw new noise).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "kernels/update/update_rules.h"

namespace sgmcmc::kernels {

enum class FusedRule : int {
  kNoise = 0,      // out ← ξ                                     (tensors: out)
  kSgld,           // θ ← θ − η g + sqrt(2ηT) ξ                    (θ)
  kPsgld,          // 001 pSGLD, RMSprop preconditioner            (θ, V)
  kSghmcEuler,     // v ← (1−α)v − ηg + sqrt(2η(αT−β̂)⁺) ξ; θ ← θ + v          (θ, v)
  kSghmcSsi,       // v ← e^{−α/2}(e^{−α/2}v − ηg + sqrt(2η(T sinh α−β̂)⁺) ξ); θ ← θ + v
  kMsgnhtEuler,    // 002 §2.2                                     (θ, p, ξ)
  kMsgnhtSsi,      // 002 §3                                       (θ, p, ξ)
  kSantaEuler,     // Santa Alg. 1                                 (θ, u, α, v, g_prev)
  kSantaSsi,       // Santa Alg. 2 (merged half steps)             (θ, u, α, v, g_prev)
};

// Scalars of one step. Fields a rule does not use are ignored.
struct FusedScalars {
  double lr = 0;            // η (already multiplied by the group's lr_scale)
  double temperature = 1;   // T
  double alpha = 0;         // SGHMC friction α; pSGLD decay α
  double beta_hat = 0;      // SGHMC constant β̂
  double diffusion = 0;     // mSGNHT D
  double eps = 0;           // pSGLD / Santa λ
  double sigma = 0;         // Santa σ
  double data_size = 1;     // Santa N
  double beta = 1;          // Santa β_t
  double noise_g2 = 0;      // Santa: constant G₂ in the noise (0: the paper's g_{t−1})
  bool exploring = true;    // Santa
  bool precond_term = false;
  bool alpha_fixed_point = false;  // Santa SSI: α ← asinh(g) on the first step
  bool first = false;       // pSGLD / Santa first step
};

// The Santa fields of `s`, for the reference rules (rules::santa_*_update).
inline rules::SantaScalars santa_scalars(const FusedScalars& s) {
  rules::SantaScalars r;
  r.lr = s.lr;
  r.sigma = s.sigma;
  r.eps = s.eps;
  r.data_size = s.data_size;
  r.beta = s.beta;
  r.noise_g2 = s.noise_g2;
  r.exploring = s.exploring;
  r.precond_term = s.precond_term;
  r.alpha_fixed_point = s.alpha_fixed_point;
  r.first = s.first;
  return r;
}

// Noise stream of one call: element i of the buffer gets normal i of (key, offset).
struct NoiseStream {
  uint64_t key = 0;
  uint64_t offset = 0;
};

// The Gaussian prior's gradient folded into the update: over elements [begin, begin + n)
// of the buffer, `grad` holds the likelihood's part g only and the rule reads g + λθ, computed in
// the tile as it is read (θ is read there anyway): no pass that writes λθ into the gradient before
// the backward pass, and a backward pass that overwrites the gradient rather than accumulating into
// it. Elements outside every segment read g as it is. In θ's dtype: g + (T)λ·θ, two roundings
// (the file has no FMA contraction), i.e. what the seeded gradient holds when the backward pass adds
// its products after the seed (GaussianPrior::seed_grad).
struct PriorFoldSegment {
  int64_t begin = 0;
  int64_t n = 0;
  double lambda = 0;
};
// Segments sorted by `begin`, not overlapping, inside the buffer.
using PriorFold = std::vector<PriorFoldSegment>;
// std::invalid_argument (naming `who`) unless `fold`'s segments are sorted, disjoint, inside a buffer
// of `numel` elements and have a finite λ.
void check_prior_fold(const PriorFold& fold, int64_t numel, const char* who);

// Applies `rule` to flat, contiguous, same-dtype (float32/float64), same-device tensors:
//   theta: the parameters; state: the rule's state tensors in the order listed above; grad: ∇Ũ.
// For kNoise, theta is the output and grad is ignored (may be undefined).
// On CUDA (built with SGMCMC_CUDA), `noise` is ignored and the key and offset are taken from
// `generator` (a CUDA generator; the offset advances by the elements' Philox blocks).
// `fold` (CPU only; std::invalid_argument elsewhere or when malformed): ∇Ũ = grad + λθ over its
// segments, as above.
void fused_update(FusedRule rule, torch::Tensor& theta, const std::vector<torch::Tensor>& state,
                  const torch::Tensor& grad, const FusedScalars& s, NoiseStream noise,
                  at::Generator* generator = nullptr, const PriorFold* fold = nullptr);

// The noise a fused update would inject, as a tensor of `numel` elements on `options`' device: the
// same numbers, bit for bit (it is the same loop with rule kNoise). On the CPU from `stream`; on CUDA
// from `generator`'s Philox state (advancing it as a fused update of `numel` elements would).
torch::Tensor philox_normal(int64_t numel, NoiseStream stream, torch::TensorOptions options,
                            at::Generator* generator = nullptr);

// Graph-safe launches (whole-step CUDA graphs). A captured kernel launch keeps its
// arguments, so a step's scalars cannot be passed by value to a kernel that is replayed. Instead the
// host folds them (with the CPU noise stream) into a small byte buffer on θ's device,
// `write_step_params`, before each step; `fused_update_from` launches a kernel that reads that buffer
// when it runs. Same arithmetic as fused_update with the same scalars and stream, bit for bit
// (tests/test_fused.cpp). On CUDA the buffer's stream is the generator's Philox key and offset, drawn on
// the host by cuda_noise_stream: the numbers fused_update would draw from that generator state, read by
// the replayed kernel, so the captured step uses no generator (whose state LibTorch would otherwise
// write into the graph with two kernels before every replay).
int64_t step_params_bytes();  // the buffer size for either dtype
void write_step_params(FusedRule rule, const FusedScalars& s, NoiseStream noise, torch::ScalarType dtype,
                       void* dst);
void fused_update_from(FusedRule rule, torch::Tensor& theta, const std::vector<torch::Tensor>& state,
                       const torch::Tensor& grad, const torch::Tensor& step_params);
#if defined(SGMCMC_WITH_CUDA)
// The Philox key and offset a CUDA fused update of `numel` elements would draw from `generator`,
// advancing it the same way (not during a graph capture).
NoiseStream cuda_noise_stream(at::Generator& generator, int64_t numel);
#endif

// True if the fused kernels handle tensors of this dtype and device in this build.
bool fused_supported(const torch::Tensor& t);

}  // namespace sgmcmc::kernels
