// Bpmf::nll_backward: the factorization's gradient without autograd (models/bpmf.h). For the batch's
// ratings (u_i, v_i, y_i), with ŷ_i = U_{u_i}·V_{v_i} + a_{u_i} + b_{v_i} + μ:
//   nll = τ/2 Σ_i (y_i − ŷ_i)² − (n/2) log τ + (n/2) log 2π
//   e_i = scale·τ·(ŷ_i − y_i)
//   ∇U_{u_i} += e_i V_{v_i},  ∇V_{v_i} += e_i U_{u_i},  ∇a_{u_i} += e_i,  ∇b_{v_i} += e_i
// One pass over the batch computes ŷ, e and Σ(y − ŷ)²; a second adds the rows into the prior-seeded
// .grad. The second pass is split by destination row (each task owns a range of users or items and
// takes the ratings that fall into it), so tasks never write the same row and need no atomics. Where
// autograd gathers U and V rows into [n, d] tensors, multiplies, sums and scatters back through
// sparse gradients (about thirty ATen ops), this reads each touched row once or twice in place.
// CPU float32; CUDA float32 through kernels/cuda/bpmf_cuda.h (SGMCMC_CUDA_BPMF=aten turns it off: autograd);
// elsewhere the trainer runs autograd.
#include <ATen/Parallel.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/bpmf.h"
#include "core/kernel_settings.h"
#if defined(SGMCMC_WITH_CUDA)
#include <cstdlib>

#include "kernels/cuda/bpmf_cuda.h"
#endif

namespace sgmcmc {

namespace {

struct Factors {
  const float *U, *V, *a, *b;
  float *gU, *gV, *ga, *gb;
  int64_t users, items, d;
};

// ŷ, e and the batch's Σ r² for ratings [lo, hi).
double errors(const Factors& f, const int64_t* uv, const float* y, float mu, float tau_scale, float* e, int64_t lo,
              int64_t hi) {
  double sse = 0;
  for (int64_t i = lo; i < hi; ++i) {
    const int64_t u = uv[2 * i], v = uv[2 * i + 1];
    const float* Uu = f.U + u * f.d;
    const float* Vv = f.V + v * f.d;
    float dot = 0;
    for (int64_t k = 0; k < f.d; ++k) dot += Uu[k] * Vv[k];
    const float r = y[i] - (dot + f.a[u] + f.b[v] + mu);
    sse += static_cast<double>(r) * r;
    e[i] = -tau_scale * r;
  }
  return sse;
}

// The rows of users (side 0) or items (side 1) in [r0, r1): every rating whose row is there.
void scatter(const Factors& f, const int64_t* uv, const float* e, int64_t n, int side, int64_t r0, int64_t r1) {
  float* g = side == 0 ? f.gU : f.gV;
  float* gbias = side == 0 ? f.ga : f.gb;
  const float* other = side == 0 ? f.V : f.U;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = uv[2 * i + side];
    if (row < r0 || row >= r1) continue;
    const float* o = other + uv[2 * i + 1 - side] * f.d;
    float* gr = g + row * f.d;
    for (int64_t k = 0; k < f.d; ++k) gr[k] += e[i] * o[k];
    gbias[row] += e[i];
  }
}

// A contiguous float32 parameter on a device of type `type` with a dense .grad.
bool usable(const torch::Tensor& p, torch::DeviceType type) {
  return p.device().type() == type && p.scalar_type() == torch::kFloat32 && p.is_contiguous() && p.grad().defined() &&
         p.grad().is_contiguous() && p.grad().layout() == torch::kStrided;
}

#if defined(SGMCMC_WITH_CUDA)
bool cuda_kernel_requested() { return kernel_settings().cuda_bpmf_fused; }  // kernels.cuda_bpmf
#endif

}  // namespace

torch::Tensor Bpmf::nll_backward(const Batch& batch, double scale) {
#if defined(SGMCMC_WITH_CUDA)
  if (usable(U_, torch::kCUDA) && usable(V_, torch::kCUDA) && usable(a_, torch::kCUDA) && usable(b_, torch::kCUDA) &&
      cuda_kernel_requested()) {
    check_inputs(batch.inputs);  // shape and dtype; the indices' range is asserted in the kernel
    torch::NoGradGuard no_grad;
    return kernels::bpmf_backward_cuda(batch.inputs.contiguous(), batch.targets.to(torch::kFloat32).contiguous(),
                                       U_, V_, a_, b_, U_.mutable_grad(), V_.mutable_grad(), a_.mutable_grad(),
                                       b_.mutable_grad(), mu_, tau_, scale);
  }
#endif
  if (!usable(U_, torch::kCPU) || !usable(V_, torch::kCPU) || !usable(a_, torch::kCPU) || !usable(b_, torch::kCPU))
    return {};
  check_inputs(batch.inputs);
  const auto uv = batch.inputs.contiguous();
  const auto y = batch.targets.to(torch::kFloat32).contiguous();
  const int64_t n = uv.size(0);
  const int64_t* up = uv.data_ptr<int64_t>();
  const int64_t users = U_.size(0), items = V_.size(0);  // not per rating: size() is an out-of-line call
  for (int64_t i = 0; i < n; ++i)  // as index_select would
    if (up[2 * i] < 0 || up[2 * i] >= users || up[2 * i + 1] < 0 || up[2 * i + 1] >= items)
      throw std::out_of_range("bpmf: rating " + std::to_string(i) + " has user " + std::to_string(up[2 * i]) +
                              ", item " + std::to_string(up[2 * i + 1]) + " outside the " + std::to_string(users) +
                              " users and " + std::to_string(items) + " items");
  torch::NoGradGuard no_grad;
  const Factors f{U_.data_ptr<float>(),        V_.data_ptr<float>(),        a_.data_ptr<float>(),
                  b_.data_ptr<float>(),        U_.mutable_grad().data_ptr<float>(), V_.mutable_grad().data_ptr<float>(),
                  a_.mutable_grad().data_ptr<float>(), b_.mutable_grad().data_ptr<float>(), U_.size(0), V_.size(0),
                  U_.size(1)};
  const float tau = tau_.item<float>(), mu = mu_.item<float>();
  const float* yp = y.data_ptr<float>();
  std::vector<float> e(n);
  constexpr int64_t kGrain = 1024;  // ratings per task
  const int64_t chunks = (n + kGrain - 1) / kGrain;
  std::vector<double> sse(chunks, 0.0);
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      sse[c] = errors(f, up, yp, mu, static_cast<float>(scale) * tau, e.data(), c * kGrain, std::min(n, (c + 1) * kGrain));
  });
  // users' rows, then items' rows, each split into as many ranges as there are threads
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n / kGrain + 1));
  at::parallel_for(0, 2 * parts, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int side = t < parts ? 0 : 1;
      const int64_t k = t % parts, rows = side == 0 ? f.users : f.items;
      scatter(f, up, e.data(), n, side, rows * k / parts, rows * (k + 1) / parts);
    }
  });
  double total = 0;
  for (double s : sse) total += s;
  static const double kHalfLog2Pi = 0.5 * std::log(2.0 * M_PI);
  const double nd = static_cast<double>(n);
  return torch::full({}, 0.5 * tau * total - 0.5 * nd * std::log(static_cast<double>(tau)) + nd * kHalfLog2Pi,
                     torch::kFloat32);
}

}  // namespace sgmcmc
