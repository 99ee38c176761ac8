// models/relu_pool.h: the fused ReLU + 2×2 max pooling and its autograd node.
#include "models/relu_pool.h"

#include "core/kernel_settings.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

#include "models/relu_pool_avx512.h"

namespace sgmcmc {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// One output row from two input rows r0, r1: each 2×2 window's first maximum (ATen's order: row by
// row; a NaN wins), relu'd, and its position 0..3 (4 where the output is 0). Branch-free selects, so
// the loop vectorizes.
template <typename T>
inline void forward_row(const T* r0, const T* r1, T* y, uint8_t* arg, int64_t w) {
  for (int64_t j = 0; j < w; ++j) {
    const T a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
    T m = a;
    uint8_t k = 0;
    bool t = b > m || b != b;
    m = t ? b : m, k = t ? 1 : k;
    t = c > m || c != c;
    m = t ? c : m, k = t ? 2 : k;
    t = d > m || d != d;
    m = t ? d : m, k = t ? 3 : k;
    const bool pass = m > T(0) || m != m;  // relu, NaN kept (as torch::relu)
    y[j] = pass ? m : T(0);
    arg[j] = pass ? k : 4;
  }
}

// The two input rows q0, q1 under one output row, written whole: each window's gradient at its
// maximum and 0 at its other three places (k = 4: no gradient, four zeros). Branch-free selects, so
// the loop vectorizes, and no separate zero fill: one pass over the input gradient, not two.
template <typename T>
inline void backward_row(const T* g, const uint8_t* arg, T* q0, T* q1, int64_t w) {
  for (int64_t j = 0; j < w; ++j) {
    const uint8_t k = arg[j];
    const T v = g[j];
    q0[2 * j] = k == 0 ? v : T(0);
    q0[2 * j + 1] = k == 1 ? v : T(0);
    q1[2 * j] = k == 2 ? v : T(0);
    q1[2 * j + 1] = k == 3 ? v : T(0);
  }
}

// kernels.pool: portable: the portable loops only (A/B timings; tests/test_models.cpp checks both paths).
bool portable_only() { return kernel_settings().pool_portable; }

template <typename T>
void forward_kernel(const torch::Tensor& x, torch::Tensor& y, torch::Tensor& arg) {
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), h = H / 2, w = W / 2;
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  uint8_t* ap = arg.data_ptr<uint8_t>();
  const bool avx512 = std::is_same_v<T, float> && detail::relu_pool_avx512_available() && !portable_only();
  at::parallel_for(0, planes, 16, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      if (avx512) return detail::relu_pool_forward_avx512(xp, yp, ap, begin, end, H, W);
    }
    for (int64_t p = begin; p < end; ++p)
      for (int64_t i = 0; i < h; ++i) {
        const T* r0 = xp + (p * H + 2 * i) * W;
        forward_row(r0, r0 + W, yp + (p * h + i) * w, ap + (p * h + i) * w, w);
      }
  });
}

template <typename T>
void backward_kernel(const torch::Tensor& gy, const torch::Tensor& arg, torch::Tensor& gx) {
  const int64_t planes = gx.size(0) * gx.size(1), H = gx.size(2), W = gx.size(3), h = H / 2, w = W / 2;
  const T* gp = gy.data_ptr<T>();
  const uint8_t* ap = arg.data_ptr<uint8_t>();
  T* xp = gx.data_ptr<T>();
  const bool avx512 = std::is_same_v<T, float> && detail::relu_pool_avx512_available() && !portable_only();
  at::parallel_for(0, planes, 16, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      if (avx512) detail::relu_pool_backward_avx512(gp, ap, xp, begin, end, H, W);
    }
    const bool rows_done = avx512;
    for (int64_t p = begin; p < end; ++p) {
      T* plane = xp + p * H * W;
      for (int64_t i = 0; i < h; ++i) {
        T* q0 = plane + 2 * i * W;
        if (!rows_done) backward_row(gp + (p * h + i) * w, ap + (p * h + i) * w, q0, q0 + W, w);
        if (W > 2 * w) q0[W - 1] = q0[2 * W - 1] = T(0);  // an odd width's last column: no window
      }
      if (H > 2 * h) std::fill(plane + (H - 1) * W, plane + H * W, T(0));  // an odd height's last row
    }
  });
}

struct ReluPoolFunction : torch::autograd::Function<ReluPoolFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x) {
    auto [y, arg] = relu_max_pool2x2_forward(x);
    ctx->save_for_backward({arg});
    ctx->saved_data["sizes"] = x.sizes();
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto arg = ctx->get_saved_variables()[0];
    return {relu_max_pool2x2_backward(grads[0], arg, ctx->saved_data["sizes"].toIntVector())};
  }
};

}  // namespace

bool relu_max_pool2x2_fusable(const torch::Tensor& x) {
  return x.device().is_cpu() && x.dim() == 4 && x.size(2) >= 2 && x.size(3) >= 2 &&
         (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kFloat64);
}

// y and the window positions of its maxima (4 where y = 0).
std::pair<torch::Tensor, torch::Tensor> relu_max_pool2x2_forward(const torch::Tensor& input) {
  const auto x = input.contiguous();
  auto y = at::empty({x.size(0), x.size(1), x.size(2) / 2, x.size(3) / 2}, x.options());
  auto arg = at::empty(y.sizes(), x.options().dtype(torch::kUInt8));
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "relu_max_pool2x2", [&] { forward_kernel<scalar_t>(x, y, arg); });
  return {y, arg};
}

torch::Tensor relu_max_pool2x2_backward(const torch::Tensor& grad_y, const torch::Tensor& arg,
                                        c10::IntArrayRef input_sizes) {
  const auto gy = grad_y.contiguous();
  auto gx = at::empty(input_sizes, gy.options());
  AT_DISPATCH_FLOATING_TYPES(gy.scalar_type(), "relu_max_pool2x2_backward",
                             [&] { backward_kernel<scalar_t>(gy, arg, gx); });
  return gx;
}

torch::Tensor relu_max_pool2x2(const torch::Tensor& x) {
  if (!relu_max_pool2x2_fusable(x)) return torch::max_pool2d(torch::relu(x), 2);
  if (!torch::GradMode::is_enabled() || !x.requires_grad()) {
    torch::NoGradGuard no_grad;
    return relu_max_pool2x2_forward(x).first;
  }
  return ReluPoolFunction::apply(x);
}

}  // namespace sgmcmc
