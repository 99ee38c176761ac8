// kernels/cpu/matmul.h: the matrix products of the models' own passes, through oneDNN or ATen.
#include "kernels/cpu/matmul.h"

#include "core/kernel_settings.h"

#if defined(SGMCMC_WITH_CUDA)
#endif

#include <ATen/record_function.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#if defined(SGMCMC_HAVE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace sgmcmc::kernels {

namespace {

MatmulBackend default_backend() { return onednn_built() ? MatmulBackend::kOnednn : MatmulBackend::kAten; }

std::atomic<uint64_t> onednn_calls{0};

std::atomic<MatmulBackend>& backend_slot() {
  static std::atomic<MatmulBackend> slot{default_backend()};
  return slot;
}

void activate_(torch::Tensor& t, Activation act) {
  switch (act) {
    case Activation::kSigmoid: t.sigmoid_(); break;
    case Activation::kRelu: t.relu_(); break;
    case Activation::kTanh: t.tanh_(); break;
    case Activation::kNone: break;
  }
}

void check_shapes(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, const char* what) {
  const int64_t d = a.dim();
  bool ok = (d == 2 || d == 3) && b.dim() == d && out.dim() == d && a.size(-1) == b.size(-2) &&
            out.size(-2) == a.size(-2) && out.size(-1) == b.size(-1);
  if (ok && d == 3) ok = a.size(0) == b.size(0) && out.size(0) == a.size(0);
  if (ok) return;
  std::ostringstream msg;
  msg << what << ": shapes do not match (out " << out.sizes() << ", a " << a.sizes() << ", b " << b.sizes() << ")";
  throw std::invalid_argument(msg.str());
}

// The bias's shape: [n] for 2-D products, [batch, n] for batched ones.
bool bias_fits(const torch::Tensor& bias, const torch::Tensor& out) {
  if (out.dim() == 2) return bias.dim() == 1 && bias.size(0) == out.size(1);
  return bias.dim() == 2 && bias.size(0) == out.size(0) && bias.size(1) == out.size(2);
}

#if defined(SGMCMC_HAVE_ONEDNN)
// An operand oneDNN takes as it is: float32 on the CPU, each matrix row- or column-major (a transposed view).
bool plain_operand(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && (t.stride(-1) == 1 || t.stride(-2) == 1);
}

bool onednn_applies(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                    const torch::Tensor& bias) {
  if (backend_slot().load() != MatmulBackend::kOnednn) return false;
  if (a.numel() == 0 || b.numel() == 0 || out.numel() == 0) return false;
  if (!plain_operand(a) || !plain_operand(b) || !out.device().is_cpu() || out.scalar_type() != torch::kFloat32 ||
      !out.is_contiguous())
    return false;
  return !bias.defined() || (bias.device().is_cpu() && bias.scalar_type() == torch::kFloat32 && bias.is_contiguous());
}

dnnl::memory::desc desc_of(const torch::Tensor& t) {
  return dnnl::memory::desc(dnnl::memory::dims(t.sizes().begin(), t.sizes().end()), dnnl::memory::data_type::f32,
                            dnnl::memory::dims(t.strides().begin(), t.strides().end()));
}

// The bias as oneDNN broadcasts it over the rows: [1, n], or [batch, 1, n].
dnnl::memory::desc bias_desc_of(const torch::Tensor& out) {
  const int64_t n = out.size(-1);
  if (out.dim() == 2) return dnnl::memory::desc({1, n}, dnnl::memory::data_type::f32, {n, 1});
  return dnnl::memory::desc({out.size(0), 1, n}, dnnl::memory::data_type::f32, {n, n, 1});
}

dnnl::algorithm algorithm_of(Activation act) {
  switch (act) {
    case Activation::kSigmoid: return dnnl::algorithm::eltwise_logistic;
    case Activation::kRelu: return dnnl::algorithm::eltwise_relu;
    default: return dnnl::algorithm::eltwise_tanh;
  }
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The matmul primitive for these shapes, strides, epilogue and thread count, created once (oneDNN
// generates its kernels at creation: ~0.1–1 ms) and kept, with its memory objects and argument map:
// a call only points them at its tensors' data (set_data_handle), so the host's part of a product
// is a lookup, not the creation of three or four memory descriptors and objects and a hash map. A
// run sees a handful of shapes (the training batch, the evaluation batch and its last, partial one),
// so the cache is small; it is emptied if a thread ever accumulates more than 256. The cache is per
// thread (memory objects are not shared between concurrent calls); no lock. A configuration oneDNN
// has no optimized kernel for (its reference implementation, `ref:*`, is orders of magnitude slower)
// or rejects is cached as none, and the caller takes ATen.
// A batched product's bias [B, n] is a binary-add post-op broadcast over the rows (oneDNN's matmul
// bias argument takes it only in its reference implementation); a 2-D product's is the bias argument.
using Key = std::vector<int64_t>;

struct Prepared {
  dnnl::matmul prim;
  std::unordered_map<int, dnnl::memory> args;  // src, weights, dst and (if any) the bias
  int bias_slot = 0;                           // the bias's argument, 0 without one
};

std::optional<Prepared> prepare(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                                bool bias, Activation act, bool accumulate) {
  const bool bias_arg = bias && out.dim() == 2, bias_post_op = bias && out.dim() == 3;
  try {
    dnnl::post_ops ops;
    if (accumulate) ops.append_sum(1.f);
    if (bias_post_op) ops.append_binary(dnnl::algorithm::binary_add, bias_desc_of(out));
#if DNNL_VERSION_MAJOR >= 3
    if (act != Activation::kNone) ops.append_eltwise(algorithm_of(act), 0.f, 0.f);
#else
    if (act != Activation::kNone) ops.append_eltwise(1.f, algorithm_of(act), 0.f, 0.f);
#endif
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
#if DNNL_VERSION_MAJOR >= 3
    auto pd = bias_arg ? dnnl::matmul::primitive_desc(cpu_engine(), desc_of(a), desc_of(b), bias_desc_of(out),
                                                      desc_of(out), attr)
                       : dnnl::matmul::primitive_desc(cpu_engine(), desc_of(a), desc_of(b), desc_of(out), attr);
#else
    auto pd = bias_arg ? dnnl::matmul::primitive_desc(
                             dnnl::matmul::desc(desc_of(a), desc_of(b), bias_desc_of(out), desc_of(out)), attr,
                             cpu_engine())
                       : dnnl::matmul::primitive_desc(dnnl::matmul::desc(desc_of(a), desc_of(b), desc_of(out)),
                                                      attr, cpu_engine());
#endif
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return std::nullopt;
    Prepared p{dnnl::matmul(pd), {}, 0};
    auto& engine = cpu_engine();
    p.args.emplace(DNNL_ARG_SRC, dnnl::memory(desc_of(a), engine, a.data_ptr()));
    p.args.emplace(DNNL_ARG_WEIGHTS, dnnl::memory(desc_of(b), engine, b.data_ptr()));
    p.args.emplace(DNNL_ARG_DST, dnnl::memory(desc_of(out), engine, out.data_ptr()));
    if (bias) {
      p.bias_slot = bias_arg ? DNNL_ARG_BIAS : (DNNL_ARG_ATTR_MULTIPLE_POST_OP(accumulate ? 1 : 0) | DNNL_ARG_SRC_1);
      p.args.emplace(p.bias_slot, dnnl::memory(bias_desc_of(out), engine, DNNL_MEMORY_NONE));
    }
    return p;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

Prepared* prepared_for(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, bool bias,
                       Activation act, bool accumulate) {
  thread_local std::map<Key, std::optional<Prepared>> cache;
  thread_local Key key;
  key.assign({bias, static_cast<int64_t>(act), accumulate, at::get_num_threads(), out.size(0)});
  for (const auto* t : {&a, &b})
    for (int64_t d = 0; d < t->dim(); ++d) key.insert(key.end(), {t->size(d), t->stride(d)});
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= 256) cache.clear();
    it = cache.emplace(key, prepare(out, a, b, bias, act, accumulate)).first;
  }
  return it->second ? &*it->second : nullptr;
}

// false: oneDNN has no fast kernel for this product (the caller runs ATen's).
bool onednn_matmul(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                   Activation act, bool accumulate) {
  Prepared* p = prepared_for(out, a, b, bias.defined(), act, accumulate);
  if (p == nullptr) return false;
  p->args.at(DNNL_ARG_SRC).set_data_handle(a.data_ptr());
  p->args.at(DNNL_ARG_WEIGHTS).set_data_handle(b.data_ptr());
  p->args.at(DNNL_ARG_DST).set_data_handle(out.data_ptr());
  if (p->bias_slot != 0) p->args.at(p->bias_slot).set_data_handle(bias.data_ptr());
  static thread_local dnnl::stream stream(cpu_engine());
  p->prim.execute(stream, p->args);
  stream.wait();
  onednn_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}
#endif

// CUDA float32 with TF32 off: cuBLAS's heuristics (LibTorch 2.11, H100) choose slow kernels at two of the
// MLP's shapes, timed as graph replays by bench/gemm_variants_cuda.py on an H100:
//   addmm(b, x, Wᵀ), x [500, 784], W [100, 784]: 23.3 µs, where mm then add_(b) takes 12.8 µs;
//   out [10, 100] = gᵀ·h with k = 500 (the last layer's weight gradient): 53.3 µs in any layout of out
//   (a split-K kernel), where the transposed product hᵀ·g into a [100, 10] scratch takes 10.8 µs.
// With TF32 on, addmm is the faster (6.4 against 8.3 µs) and the short-wide product takes 8.2 µs, so
// this route is float32's alone. kernels.cuda_gemm: aten turns it off.
bool cuda_fp32_route(const torch::Tensor& out) {
  return kernel_settings().cuda_gemm_route && out.is_cuda() && out.dim() == 2 && out.scalar_type() == torch::kFloat32 &&
         !at::globalContext().allowTF32CuBLAS();
}

// out = act(a·b + bias) for cuda_fp32_route: a short, wide out (m ≤ 16 rows, m < n) as (bᵀ·aᵀ)ᵀ through a
// scratch, the bias as its own add.
void cuda_fp32_matmul(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                      Activation act) {
  const int64_t m = out.size(0), n = out.size(1);
  if (m <= 16 && m < n) out.copy_(at::mm(b.t(), a.t()).t());
  else at::mm_out(out, a, b);
  if (bias.defined()) out.add_(bias);
  activate_(out, act);
}

}  // namespace

Activation activation_from_name(const std::string& name) {
  if (name == "sigmoid") return Activation::kSigmoid;
  if (name == "relu") return Activation::kRelu;
  if (name == "tanh") return Activation::kTanh;
  throw std::invalid_argument("activation: unknown '" + name + "' (sigmoid, relu, tanh)");
}

bool onednn_built() {
#if defined(SGMCMC_HAVE_ONEDNN)
  return true;
#else
  return false;
#endif
}

MatmulBackend matmul_backend() {
  return kernel_settings().matmul_aten ? MatmulBackend::kAten : backend_slot().load();
}

void set_matmul_backend(MatmulBackend b) {
  if (b == MatmulBackend::kOnednn && !onednn_built())
    throw std::invalid_argument("matmul backend: this build has no oneDNN (CMake option SGMCMC_ONEDNN)");
  backend_slot().store(b);
}

uint64_t onednn_matmul_calls() { return onednn_calls.load(); }

std::string matmul_backend_name() { return matmul_backend() == MatmulBackend::kOnednn ? "onednn" : "aten"; }

void matmul_out(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                Activation act) {
  RECORD_FUNCTION("sgmcmc::matmul", std::vector<c10::IValue>());
  check_shapes(out, a, b, "matmul_out");
  if (bias.defined() && !bias_fits(bias, out))
    throw std::invalid_argument("matmul_out: bias must be [n] (or [batch, n] for batched products) for out [.., m, n]");
#if defined(SGMCMC_HAVE_ONEDNN)
  if (onednn_applies(out, a, b, bias) && onednn_matmul(out, a, b, bias, act, false)) return;
#endif
  if (cuda_fp32_route(out)) return cuda_fp32_matmul(out, a, b, bias, act);
  if (out.dim() == 3) {
    if (bias.defined()) at::baddbmm_out(out, bias.unsqueeze(1), a, b);
    else at::bmm_out(out, a, b);
  } else if (bias.defined()) {
    at::addmm_out(out, bias, a, b);
  } else {
    at::mm_out(out, a, b);
  }
  activate_(out, act);
}

void matmul_acc_(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
  RECORD_FUNCTION("sgmcmc::matmul_acc", std::vector<c10::IValue>());
  check_shapes(out, a, b, "matmul_acc_");
#if defined(SGMCMC_HAVE_ONEDNN)
  if (onednn_applies(out, a, b, {}) && onednn_matmul(out, a, b, {}, Activation::kNone, true)) return;
#endif
  if (out.dim() == 3) out.baddbmm_(a, b);
  else out.addmm_(a, b);
}

}  // namespace sgmcmc::kernels
