// kernels/cuda_mlp/gemm_lt.h: float32 products on cuBLASLt, the kernel chosen per shape by measurement.
#include "kernels/cuda_mlp/gemm_lt.h"

#include "core/kernel_settings.h"
#include "kernels/cuda_mlp/gemm_lt_cache.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <tuple>

#if defined(SGMCMC_HAVE_CUBLASLT)
#include <cublasLt.h>
#endif

namespace sgmcmc::kernels {

#if defined(SGMCMC_HAVE_CUBLASLT)
namespace {

constexpr int kHeuristics = 16;     // cuBLASLt's heuristic candidates asked for
constexpr int kSplitBases = 4;      // of those, how many get the split-K variants
constexpr int kSplits[] = {2, 4, 8, 16, 32};
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // per stream; split-K's partial sums live here
constexpr int kReps = 10, kRounds = 2;  // launches a timed round, rounds a candidate (the minimum counts)
// ~0.15–0.3 ms at an H100's 1–2 GHz: longer than the host takes to queue kReps launches, so the
// rounds time the GPU's work alone
constexpr long long kSpinCycles = 300000;

__global__ void spin_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

bool ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

void check(cublasStatus_t s, const char* what) {
  TORCH_CHECK(ok(s), "gemm_lt: ", what, " failed (cuBLAS status ", static_cast<int>(s), ")");
}

// A descriptor cuBLASLt refuses while planning: the shape is declined (ATen takes it).
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void need(cublasStatus_t s, const char* what) {
  if (!ok(s)) throw Refused(what);
}

enum class Orient { kRow, kCol, kNone };

// row: the last stride 1 (a row-major matrix, any leading dimension); col: the one before it 1
Orient orient(const torch::Tensor& t) {
  const int64_t r = t.size(-2), c = t.size(-1), sr = t.stride(-2), sc = t.stride(-1);
  if (sc == 1 && sr >= std::max<int64_t>(c, 1)) return Orient::kRow;
  if (sr == 1 && sc >= std::max<int64_t>(r, 1)) return Orient::kCol;
  return Orient::kNone;
}

// The largest power of two up to 256 dividing the address. cuBLASLt's heuristics assume 256-byte aligned
// operands unless told otherwise (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES), and a parameter's view into
// the flat buffer (samplers/flat_params.h) may start anywhere a float does.
uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 4 && v % a != 0) a /= 2;
  return a;
}

// device, C, m, n, k, a row?, b row?, lda, ldb, ldc, batch strides (a, b, c), accumulate, tf32, and the
// alignments of a, b and c
using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, bool, bool, uint32_t, uint32_t, uint32_t>;

// One shape's descriptors and chosen kernel. cuBLASLt is column-major: the row-major c = a·b is
// computed as cᵀ = bᵀ·aᵀ, i.e. cuBLASLt's A is b's memory, its B is a's, its D (= C) is c's.
struct Plan {
  bool ok = false;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  GemmLtChoice choice;

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {  // a kept plan lives as long as the process; this frees a declined or forgotten one's
    for (auto* l : {la, lb, lc})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

struct State {
  std::mutex mutex;
  std::map<int, cublasLtHandle_t> handles;       // per device, never destroyed (process lifetime)
  std::map<cudaStream_t, torch::Tensor> workspaces;  // per stream
  std::map<Key, std::unique_ptr<Plan>> plans;
  double measure_seconds = 0;  // gemm_lt_measure_seconds()
};

// Never destroyed: its tensors outlive LibTorch's allocator at exit otherwise.
State& state() {
  static State* s = new State;
  return *s;
}

cublasLtHandle_t handle_for(State& s, int device) {
  auto it = s.handles.find(device);
  if (it != s.handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  check(cublasLtCreate(&h), "cublasLtCreate");
  s.handles.emplace(device, h);
  return h;
}

// The stream's workspace, allocated on its first use outside capture; nullptr during a capture that
// finds none (the caller declines: an allocation there would belong to the graph's pool).
void* workspace_for(State& s, cudaStream_t stream, bool capturing, const torch::Device& device) {
  auto it = s.workspaces.find(stream);
  if (it != s.workspaces.end()) return it->second.data_ptr();
  if (capturing) return nullptr;
  auto ws = torch::empty({static_cast<int64_t>(kWorkspaceBytes)}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
  void* p = ws.data_ptr();
  s.workspaces.emplace(stream, std::move(ws));
  return p;
}

// One of an algorithm's configuration attributes (CUBLASLT_ALGO_CONFIG_*), `fallback` if unreadable.
template <typename T>
T config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T fallback) {
  T v = fallback;
  size_t w = 0;
  return ok(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &w)) ? v : fallback;
}

std::string algo_text(const cublasLtMatmulAlgo_t& algo) {
  const int32_t split = config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 1);
  const uint32_t scheme = config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, 0);
  std::ostringstream o;
  o << "algo " << config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID, 0) << ", tile "
    << config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, 0) << ", split-K " << split;
  if (split > 1)
    o << (scheme == CUBLASLT_REDUCTION_SCHEME_INPLACE         ? " in place"
          : scheme == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE  ? " in the workspace"
          : scheme == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE   ? " in the workspace (output type)"
                                                              : " (reduction scheme unset)");
  return o.str();
}

struct Operands {
  const void* a_lt;  // b's memory
  const void* b_lt;  // a's memory
  void* c;
};

cublasStatus_t launch(cublasLtHandle_t h, const Plan& p, const cublasLtMatmulAlgo_t& algo, size_t ws_bytes,
                      const Operands& x, void* ws, float beta, cudaStream_t stream) {
  const float alpha = 1.0f;
  return cublasLtMatmul(h, p.op, &alpha, x.a_lt, p.la, x.b_lt, p.lb, &beta, x.c, p.lc, x.c, p.lc, &algo, ws, ws_bytes,
                        stream);
}

// The shape's descriptors (no device work); Refused where cuBLASLt refuses one.
void describe(Plan& p, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c, bool tf32) {
  const bool batched = c.dim() == 3;
  const int64_t batch = batched ? c.size(0) : 1;
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  const bool a_row = orient(a) == Orient::kRow, b_row = orient(b) == Orient::kRow;
  need(cublasLtMatmulDescCreate(&p.op, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  const cublasOperation_t op_a = b_row ? CUBLAS_OP_N : CUBLAS_OP_T, op_b = a_row ? CUBLAS_OP_N : CUBLAS_OP_T;
  need(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "TRANSA");
  need(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "TRANSB");
  // cuBLASLt's A: op(A) = bᵀ, n × k; its B: op(B) = aᵀ, k × m; D: cᵀ, n × m
  const auto layout = [&](cublasLtMatrixLayout_t& l, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    need(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld), "cublasLtMatrixLayoutCreate");
    if (!batched) return;
    const int32_t count = static_cast<int32_t>(batch);
    need(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "BATCH_COUNT");
    need(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
          "STRIDED_BATCH_OFFSET");
  };
  const int64_t sa = batched ? a.stride(0) : 0, sb = batched ? b.stride(0) : 0, sc = batched ? c.stride(0) : 0;
  layout(p.la, b_row ? n : k, b_row ? k : n, b_row ? b.stride(-2) : b.stride(-1), sb);
  layout(p.lb, a_row ? k : m, a_row ? m : k, a_row ? a.stride(-2) : a.stride(-1), sa);
  layout(p.lc, n, m, c.stride(-2), sc);
}

// The shape as people read it: "[C×]m×n×k, a row|col, b row|col[, accumulating][, tf32]".
std::string shape_text(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c, bool accumulate,
                       bool tf32) {
  std::ostringstream shape;
  if (c.dim() == 3) shape << c.size(0) << "×";
  shape << a.size(-2) << "×" << b.size(-1) << "×" << a.size(-1) << ", a "
        << (orient(a) == Orient::kRow ? "row" : "col") << ", b " << (orient(b) == Orient::kRow ? "row" : "col")
        << (accumulate ? ", accumulating" : "") << (tf32 ? ", tf32" : "");
  return shape.str();
}

// Lists the candidates for a described shape and keeps the fastest; p.ok false if none ran.
void measure(Plan& p, cublasLtHandle_t h, const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
             bool accumulate, void* ws, cudaStream_t stream) {
  const int64_t k = a.size(-1);

  // the candidates: the heuristic list, then split-K variants of its first kSplitBases capable kernels
  cublasLtMatmulPreference_t pref = nullptr;
  need(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const size_t ws_max = kWorkspaceBytes;
  need(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_max, sizeof ws_max),
        "MAX_WORKSPACE_BYTES");
  // the operands' own alignments (cuBLASLt's A is b's memory, its B a's, C and D c's): the heuristics then
  // return only kernels that work at them
  const uint32_t align_lt_a = alignment(b.data_ptr()), align_lt_b = alignment(a.data_ptr()), align_c = alignment(c.data_ptr());
  need(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_lt_a, sizeof align_lt_a),
       "MIN_ALIGNMENT_A_BYTES");
  need(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_lt_b, sizeof align_lt_b),
       "MIN_ALIGNMENT_B_BYTES");
  need(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof align_c),
       "MIN_ALIGNMENT_C_BYTES");
  need(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof align_c),
       "MIN_ALIGNMENT_D_BYTES");
  cublasLtMatmulHeuristicResult_t found[kHeuristics] = {};
  int returned = 0;
  const auto hs = cublasLtMatmulAlgoGetHeuristic(h, p.op, p.la, p.lb, p.lc, p.lc, pref, kHeuristics, found, &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  if (!ok(hs) || returned <= 0) return;
  std::vector<std::pair<cublasLtMatmulAlgo_t, size_t>> cands;
  const auto add = [&](const cublasLtMatmulAlgo_t& algo, size_t bytes) {
    for (const auto& [x, unused] : cands)
      if (std::memcmp(&x, &algo, sizeof algo) == 0) return;
    cands.emplace_back(algo, bytes);
  };
  for (int i = 0; i < returned; ++i)
    if (ok(found[i].state)) add(found[i].algo, found[i].workspaceSize);
  if (cands.empty()) return;
  const size_t heuristic_count = cands.size();
  int bases = 0;
  for (size_t i = 0; i < heuristic_count && bases < kSplitBases; ++i) {
    const cublasLtMatmulAlgo_t base = cands[i].first;
    int32_t splittable = 0;
    uint32_t schemes = 0;
    size_t w = 0;
    if (!ok(cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splittable, sizeof splittable, &w)) ||
        !splittable)
      continue;
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes, &w);
    ++bases;
    for (int split : kSplits) {
      if (split > k) break;
      for (uint32_t scheme : {uint32_t{CUBLASLT_REDUCTION_SCHEME_INPLACE}, uint32_t{CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE}}) {
        if (!(schemes & scheme)) continue;
        cublasLtMatmulAlgo_t v = base;
        const int32_t s32 = split;
        if (!ok(cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &s32, sizeof s32)) ||
            !ok(cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme)))
          continue;
        cublasLtMatmulHeuristicResult_t r{};
        if (!ok(cublasLtMatmulAlgoCheck(h, p.op, p.la, p.lb, p.lc, p.lc, &v, &r)) || r.workspaceSize > kWorkspaceBytes)
          continue;
        add(v, r.workspaceSize);
      }
    }
  }

  // time each on a scratch output with c's strides (c itself must not change; its leading dimension may
  // exceed n), queued behind the spinning kernel
  const auto scratch = torch::empty_strided(c.sizes(), c.strides(), c.options()).zero_();
  const Operands x{b.data_ptr(), a.data_ptr(), scratch.data_ptr()};
  const float beta = accumulate ? 1.0f : 0.0f;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  C10_CUDA_CHECK(cudaEventCreate(&e0));
  C10_CUDA_CHECK(cudaEventCreate(&e1));
  double best = std::numeric_limits<double>::infinity(), first = best;
  size_t best_i = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    const auto& [algo, bytes] = cands[i];
    // one untimed launch: the kernel's module loads (lazily) on its first launch
    bool runs = ok(launch(h, p, algo, bytes, x, ws, beta, stream));
    double t = std::numeric_limits<double>::infinity();
    for (int r = 0; runs && r < kRounds; ++r) {
      spin_kernel<<<1, 1, 0, stream>>>(kSpinCycles);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      C10_CUDA_CHECK(cudaEventRecord(e0, stream));
      for (int j = 0; runs && j < kReps; ++j) runs = ok(launch(h, p, algo, bytes, x, ws, beta, stream));
      C10_CUDA_CHECK(cudaEventRecord(e1, stream));
      C10_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      C10_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      if (runs) t = std::min(t, 1e3 * ms / kReps);
    }
    if (i == 0) first = t;
    if (t < best) best = t, best_i = i;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (!std::isfinite(best)) return;
  p.algo = cands[best_i].first;
  p.workspace = cands[best_i].second;
  p.ok = true;
  p.choice.kernel = algo_text(p.algo);
  p.choice.split_k = config<int32_t>(p.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 1);
  p.choice.candidates = static_cast<int>(cands.size());
  p.choice.us = best;
  p.choice.heuristic_us = first;
}

// A cached record's algorithm, if cuBLASLt still takes it for the described shape (no device work).
bool restore(Plan& p, cublasLtHandle_t h, const GemmLtRecord& r) {
  cublasLtMatmulAlgo_t algo{};
  if (r.algo.size() != sizeof algo.data / sizeof algo.data[0]) return false;
  std::copy(r.algo.begin(), r.algo.end(), algo.data);
  cublasLtMatmulHeuristicResult_t check{};
  if (!ok(cublasLtMatmulAlgoCheck(h, p.op, p.la, p.lb, p.lc, p.lc, &algo, &check)) ||
      check.workspaceSize > kWorkspaceBytes)
    return false;
  p.algo = algo;
  p.workspace = check.workspaceSize;
  p.ok = true;
  p.choice.kernel = algo_text(algo);
  p.choice.split_k = config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 1);
  p.choice.candidates = r.candidates;
  p.choice.us = r.us;
  p.choice.heuristic_us = r.heuristic_us;
  p.choice.cached = true;
  return true;
}

// The cache's key: the GPU (name, compute capability, SMs), cuBLASLt's version, and the plan's key
// without the device index.
std::string cache_key(const Key& key, int device) {
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(device);
  std::ostringstream o;
  o << prop->name << ", sm_" << prop->major << prop->minor << ", " << prop->multiProcessorCount << " SMs, cuBLASLt "
    << cublasLtGetVersion() << " |";
  std::apply([&](int, const auto&... rest) { ((o << ' ' << +rest), ...); }, key);
  return o.str();
}

bool applies(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c) {
  const int64_t d = c.dim();
  if ((d != 2 && d != 3) || a.dim() != d || b.dim() != d) return false;
  for (const auto* t : {&a, &b, &c})
    if (!t->is_cuda() || t->scalar_type() != torch::kFloat32 || t->device() != c.device()) return false;
  if (d == 3 && (a.size(0) != c.size(0) || b.size(0) != c.size(0) || c.size(0) > std::numeric_limits<int32_t>::max()))
    return false;
  if (a.size(-2) != c.size(-2) || b.size(-1) != c.size(-1) || a.size(-1) != b.size(-2)) return false;
  if (c.numel() == 0 || a.size(-1) == 0) return false;
  if (orient(a) == Orient::kNone || orient(b) == Orient::kNone || orient(c) != Orient::kRow) return false;
  return true;
}

}  // namespace

bool gemm_lt_built() { return true; }

bool gemm_lt(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c, bool accumulate) {
  if (!applies(a, b, c)) return false;
  const c10::cuda::CUDAGuard guard(c.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  const bool capturing = capture != cudaStreamCaptureStatusNone;
  const bool tf32 = at::globalContext().allowTF32CuBLAS();
  const bool batched = c.dim() == 3;
  const bool a_row = orient(a) == Orient::kRow, b_row = orient(b) == Orient::kRow;
  const auto ld = [](const torch::Tensor& t, bool row) { return row ? t.stride(-2) : t.stride(-1); };
  const uint32_t align_a = alignment(a.data_ptr()), align_b = alignment(b.data_ptr()), align_c = alignment(c.data_ptr());
  const Key key{c.device().index(), batched ? c.size(0) : 1, a.size(-2), b.size(-1), a.size(-1), a_row, b_row,
                ld(a, a_row), ld(b, b_row), c.stride(-2), batched ? a.stride(0) : 0, batched ? b.stride(0) : 0,
                batched ? c.stride(0) : 0, accumulate, tf32, align_a, align_b, align_c};
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  const cublasLtHandle_t h = handle_for(s, c.device().index());
  void* ws = workspace_for(s, stream, capturing, c.device());
  if (!ws) return false;
  auto it = s.plans.find(key);
  if (it == s.plans.end()) {
    // a shape measured by an earlier process (kernels.cuda_gemm_cache) is taken as it was chosen there,
    // even inside a capture; measuring synchronises, so a new shape is declined there
    auto p = std::make_unique<Plan>();
    try {
      describe(*p, a, b, c, tf32);
      p->choice.shape = shape_text(a, b, c, accumulate, tf32);
      GemmLtCache cache(gemm_lt_cache_path(kernel_settings().cuda_gemm_cache));
      const std::string cache_key_text = cache_key(key, c.device().index());
      const auto record = cache.find(cache_key_text);
      if (!(record && restore(*p, h, *record))) {
        if (capturing) return false;  // not remembered: the shape stays unplanned until an eager call
        const auto t0 = std::chrono::steady_clock::now();
        measure(*p, h, a, b, c, accumulate, ws, stream);
        s.measure_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (p->ok)
          cache.add(cache_key_text,
                    GemmLtRecord{std::vector<uint64_t>(std::begin(p->algo.data), std::end(p->algo.data)), p->workspace,
                                 p->choice.kernel, p->choice.candidates, p->choice.us, p->choice.heuristic_us});
      }
    } catch (const Refused&) {
      p->ok = false;
    }
    it = s.plans.emplace(key, std::move(p)).first;
  }
  const Plan& p = *it->second;
  if (!p.ok) return false;
  check(launch(h, p, p.algo, p.workspace, Operands{b.data_ptr(), a.data_ptr(), c.data_ptr()}, ws,
               accumulate ? 1.0f : 0.0f, stream),
        "cublasLtMatmul");
  return true;
}

std::vector<GemmLtChoice> gemm_lt_choices() {
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  std::vector<GemmLtChoice> out;
  for (const auto& [key, p] : s.plans)
    if (p->ok) out.push_back(p->choice);
  return out;
}

void gemm_lt_forget_choices() {
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.plans.clear();
}

double gemm_lt_measure_seconds() {
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  return s.measure_seconds;
}

#else

bool gemm_lt_built() { return false; }

bool gemm_lt(const torch::Tensor&, const torch::Tensor&, torch::Tensor&, bool) { return false; }

std::vector<GemmLtChoice> gemm_lt_choices() { return {}; }

void gemm_lt_forget_choices() {}

double gemm_lt_measure_seconds() { return 0; }

#endif

}  // namespace sgmcmc::kernels
