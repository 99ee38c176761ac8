// kernels/matmul.h: the matrix products of the models' own passes, through oneDNN or ATen.
#include "kernels/matmul.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#if defined(SGMCMC_HAVE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace sgmcmc::kernels {

namespace {

MatmulBackend default_backend() {
  const char* env = std::getenv("SGMCMC_MATMUL");
  if (env != nullptr && std::string(env) == "aten") return MatmulBackend::kAten;
  return onednn_built() ? MatmulBackend::kOnednn : MatmulBackend::kAten;
}

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
  if (a.dim() == 2 && b.dim() == 2 && out.dim() == 2 && a.size(1) == b.size(0) && out.size(0) == a.size(0) &&
      out.size(1) == b.size(1))
    return;
  std::ostringstream msg;
  msg << what << ": shapes do not match (out " << out.sizes() << ", a " << a.sizes() << ", b " << b.sizes() << ")";
  throw std::invalid_argument(msg.str());
}

#if defined(SGMCMC_HAVE_ONEDNN)
// A 2-D operand oneDNN takes as it is: float32 on the CPU, row- or column-major (a transposed view).
bool plain_operand(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && (t.stride(1) == 1 || t.stride(0) == 1);
}

bool onednn_applies(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                    const torch::Tensor& bias) {
  if (backend_slot().load() != MatmulBackend::kOnednn) return false;
  if (a.numel() == 0 || b.numel() == 0 || out.numel() == 0) return false;
  if (!plain_operand(a) || !plain_operand(b) || !out.device().is_cpu() || out.scalar_type() != torch::kFloat32 ||
      !out.is_contiguous())
    return false;
  return !bias.defined() || (bias.device().is_cpu() && bias.scalar_type() == torch::kFloat32 &&
                             bias.dim() == 1 && bias.is_contiguous());
}

dnnl::memory::desc desc_of(const torch::Tensor& t) {
  return dnnl::memory::desc({t.size(0), t.size(1)}, dnnl::memory::data_type::f32, {t.stride(0), t.stride(1)});
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
// generates its kernels at creation: ~0.1–1 ms) and kept. A run sees a handful of shapes (the
// training batch, the evaluation batch and its last, partial one), so the cache is small; it is
// emptied if a process ever accumulates more than 256.
using Key = std::array<int64_t, 11>;

dnnl::matmul primitive_for(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, bool bias,
                           Activation act, bool accumulate) {
  static std::mutex mutex;
  static std::map<Key, dnnl::matmul> cache;
  const Key key{a.size(0), a.size(1), b.size(1), a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                bias,      static_cast<int64_t>(act), accumulate, at::get_num_threads()};
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  dnnl::post_ops ops;
#if DNNL_VERSION_MAJOR >= 3
  if (accumulate) ops.append_sum(1.f);
  if (act != Activation::kNone) ops.append_eltwise(algorithm_of(act), 0.f, 0.f);
#else
  if (accumulate) ops.append_sum(1.f);
  if (act != Activation::kNone) ops.append_eltwise(1.f, algorithm_of(act), 0.f, 0.f);
#endif
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  const auto n = b.size(1);
  const dnnl::memory::desc bias_desc({1, n}, dnnl::memory::data_type::f32, {n, 1});
#if DNNL_VERSION_MAJOR >= 3
  auto pd = bias ? dnnl::matmul::primitive_desc(cpu_engine(), desc_of(a), desc_of(b), bias_desc, desc_of(out), attr)
                 : dnnl::matmul::primitive_desc(cpu_engine(), desc_of(a), desc_of(b), desc_of(out), attr);
#else
  auto pd = bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(desc_of(a), desc_of(b), bias_desc, desc_of(out)),
                                                attr, cpu_engine())
                 : dnnl::matmul::primitive_desc(dnnl::matmul::desc(desc_of(a), desc_of(b), desc_of(out)), attr,
                                                cpu_engine());
#endif
  if (cache.size() >= 256) cache.clear();
  return cache.emplace(key, dnnl::matmul(pd)).first->second;
}

void onednn_matmul(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                   Activation act, bool accumulate) {
  auto prim = primitive_for(out, a, b, bias.defined(), act, accumulate);
  auto& engine = cpu_engine();
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(desc_of(a), engine, a.data_ptr())},
      {DNNL_ARG_WEIGHTS, dnnl::memory(desc_of(b), engine, b.data_ptr())},
      {DNNL_ARG_DST, dnnl::memory(desc_of(out), engine, out.data_ptr())}};
  if (bias.defined()) {
    const auto n = bias.size(0);
    args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, n}, dnnl::memory::data_type::f32, {n, 1}}, engine, bias.data_ptr()));
  }
  static thread_local dnnl::stream stream(engine);
  prim.execute(stream, args);
  stream.wait();
  onednn_calls.fetch_add(1, std::memory_order_relaxed);
}
#endif

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

MatmulBackend matmul_backend() { return backend_slot().load(); }

void set_matmul_backend(MatmulBackend b) {
  if (b == MatmulBackend::kOnednn && !onednn_built())
    throw std::invalid_argument("matmul backend: this build has no oneDNN (CMake option SGMCMC_ONEDNN)");
  backend_slot().store(b);
}

uint64_t onednn_matmul_calls() { return onednn_calls.load(); }

std::string matmul_backend_name() { return matmul_backend() == MatmulBackend::kOnednn ? "onednn" : "aten"; }

void matmul_out(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias,
                Activation act) {
  check_shapes(out, a, b, "matmul_out");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out.size(1)))
    throw std::invalid_argument("matmul_out: bias must be 1-D of out.size(1)");
#if defined(SGMCMC_HAVE_ONEDNN)
  if (onednn_applies(out, a, b, bias)) return onednn_matmul(out, a, b, bias, act, false);
#endif
  if (bias.defined()) at::addmm_out(out, bias, a, b);
  else at::mm_out(out, a, b);
  activate_(out, act);
}

void matmul_acc_(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
  check_shapes(out, a, b, "matmul_acc_");
#if defined(SGMCMC_HAVE_ONEDNN)
  if (onednn_applies(out, a, b, {})) return onednn_matmul(out, a, b, {}, Activation::kNone, true);
#endif
  out.addmm_(a, b);
}

}  // namespace sgmcmc::kernels
