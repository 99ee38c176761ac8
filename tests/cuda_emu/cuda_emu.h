// A CPU emulator of CUDA's execution model, for running the pass's kernels from their own .cu sources on
// machines without a GPU (tests/test_cuda_emu.cpp). Every CUDA thread of a block is a fiber (ucontext) on
// the calling thread; a fiber runs until it reaches __syncthreads, a warp collective (__shfl_*_sync,
// __syncwarp) or its end, so shared memory needs no locks and `__shared__` variables are function statics
// (one block at a time). What it checks beyond the arithmetic:
//
// - the order of threads between two barriers is a setting (forward, reverse, shuffled) and so is the order
//   of blocks: a missing __syncthreads, or a block that reads what another block of the same launch writes
//   without the atomics that order them, gives different results in different orders;
// - a warp collective whose mask names a lane that has left or waits at __syncthreads, and a __syncthreads
//   that not every living thread reaches while others wait in a collective, are errors (a deadlock on the GPU);
// - the launch's limits: 1,024 threads a block, 48 KB of dynamic shared memory unless
//   cudaFuncSetAttribute raised the kernel's limit, the device's opt-in maximum; dynamic shared memory
//   starts as NaN bytes (0xff), so a read of what no thread wrote shows up in the results.
//
// It does not model timing, the memory model beyond these orders, or device-side libm: the kernels' host
// branches (std::exp, std::fma) run, which the CPU references use too, so the results are the reference's
// bit for bit where the orders of summation agree.
//
// Include it first (it stands in for <cuda_runtime.h>; tests/cuda_emu/include holds the headers the
// kernels include), then the .cu files.
#pragma once

#include <math.h>
#include <ucontext.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// ---- CUDA's types and attribute words -------------------------------------------------------------------
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};

struct CUstream_st;
using cudaStream_t = CUstream_st*;

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorLaunchFailure = 719 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaLaunchAttributeID { cudaLaunchAttributeProgrammaticStreamSerialization = 5 };
struct cudaLaunchAttributeValue {
  int programmaticStreamSerializationAllowed = 0;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id{};
  cudaLaunchAttributeValue val{};
};
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes = 0;
  cudaStream_t stream = nullptr;
  cudaLaunchAttribute* attrs = nullptr;
  unsigned numAttrs = 0;
};
// An H100's (sm_90) limits, the fields the kernels' launch code reads.
struct cudaDeviceProp {
  int major = 9, minor = 0, multiProcessorCount = 132, warpSize = 32, maxThreadsPerBlock = 1024;
  size_t sharedMemPerBlock = 48 * 1024, sharedMemPerBlockOptin = 227 * 1024, sharedMemPerMultiprocessor = 228 * 1024;
  int l2CacheSize = 50 * 1024 * 1024;
};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
#define SGMCMC_DYNAMIC_SMEM(name) unsigned char* const name = ::cuda_emu::dynamic_smem()

// The built-in variables: the scheduler sets them before it resumes a fiber (one runs at a time).
inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

namespace cuda_emu {

// The order in which the fibers of a block run between two barriers, and the blocks of a launch.
enum class Order { kForward, kReverse, kShuffled };

struct Settings {
  Order threads = Order::kForward;
  Order blocks = Order::kForward;
  uint64_t seed = 1;  // kShuffled's permutations
};

// What the emulator did since reset_counts(): launches, blocks, fiber switches, PDL launches, the largest
// dynamic shared memory a launch asked for.
struct Counts {
  int64_t launches = 0, blocks = 0, switches = 0, pdl_launches = 0;
  size_t max_dynamic_smem = 0;
};

class Emulator {
 public:
  static Emulator& get() {
    static Emulator e;
    return e;
  }
  Settings settings;
  Counts counts;
  cudaDeviceProp prop;

  // Runs body(params…) for every thread of every block; throws std::runtime_error on a launch error or a
  // deadlock, rethrows what a thread threw.
  void launch(const void* kernel, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body, bool pdl);

  void set_max_dynamic_smem(const void* kernel, int bytes) { smem_limit_[kernel] = bytes; }

  // the running fiber's coordinates and the block's dynamic shared memory
  const uint3& thread_idx() const { return fibers_[current_].tid; }
  int lane() const { return fibers_[current_].lane; }
  const uint3& block_idx() const { return block_idx_; }
  const dim3& block_dim() const { return block_dim_; }
  const dim3& grid_dim() const { return grid_dim_; }
  unsigned char* dynamic_smem() { return smem_.data(); }

  void sync_block();
  // A warp collective: this lane offers `value` and takes lane `src`'s (within its width-wide segment;
  // src < 0: its own). Returns the value and the warp's ballot of `predicate` over `mask`.
  uint64_t warp_exchange(unsigned mask, uint64_t value, int src, bool predicate, unsigned* ballot);

 private:
  enum class State { kRunnable, kAtBlockBarrier, kAtWarpOp, kDone };
  struct Fiber {
    ucontext_t ctx{};
    std::unique_ptr<char[]> stack;
    uint3 tid{};
    int warp = 0, lane = 0;
    State state = State::kDone;
    unsigned mask = 0;       // at a warp op
    uint64_t offered = 0;    // at a warp op
    int src = -1;            // at a warp op
    bool predicate = false;  // at a warp op
    uint64_t result = 0;
    unsigned ballot = 0;
  };
  static constexpr size_t kStack = 256 * 1024;

  static void entry();
  void run_block(const std::function<void()>& body, std::mt19937_64& rng);
  void yield_to_scheduler();
  void try_release_warp(int warp, unsigned mask);
  [[noreturn]] void deadlock(const std::string& what);

  std::vector<Fiber> fibers_;
  size_t current_ = 0;
  int threads_ = 0;
  ucontext_t scheduler_{};
  const std::function<void()>* body_ = nullptr;
  std::exception_ptr failure_;
  uint3 block_idx_{};
  dim3 block_dim_, grid_dim_;
  std::vector<unsigned char> smem_;
  std::map<const void*, int> smem_limit_;
};

inline Emulator& emu() { return Emulator::get(); }
inline unsigned char* dynamic_smem() { return emu().dynamic_smem(); }

// The emulator's settings for one scope, restored after.
class ScopedSettings {
 public:
  explicit ScopedSettings(Settings s) : old_(emu().settings) { emu().settings = s; }
  ~ScopedSettings() { emu().settings = old_; }
  ScopedSettings(const ScopedSettings&) = delete;
  ScopedSettings& operator=(const ScopedSettings&) = delete;

 private:
  Settings old_;
};

inline void Emulator::entry() {
  Emulator& e = get();
  try {
    (*e.body_)();
  } catch (...) {
    if (!e.failure_) e.failure_ = std::current_exception();
  }
  e.fibers_[e.current_].state = State::kDone;
  // uc_link returns to the scheduler
}

inline void Emulator::yield_to_scheduler() {
  ++counts.switches;
  swapcontext(&fibers_[current_].ctx, &scheduler_);
}

inline void Emulator::sync_block() {
  fibers_[current_].state = State::kAtBlockBarrier;
  yield_to_scheduler();
}

inline uint64_t Emulator::warp_exchange(unsigned mask, uint64_t value, int src, bool predicate, unsigned* ballot) {
  Fiber& f = fibers_[current_];
  if ((mask >> f.lane & 1u) == 0) deadlock("a warp collective whose mask leaves out the calling lane");
  f.state = State::kAtWarpOp;
  f.mask = mask, f.offered = value, f.src = src, f.predicate = predicate;
  try_release_warp(f.warp, mask);
  if (f.state != State::kRunnable) yield_to_scheduler();
  if (ballot != nullptr) *ballot = fibers_[current_].ballot;
  return fibers_[current_].result;
}

// Releases the lanes of `mask` in warp `warp` once every one of them waits at a warp op with that mask.
inline void Emulator::try_release_warp(int warp, unsigned mask) {
  const int first = warp * 32, last = std::min(threads_, first + 32);
  unsigned ballot = 0;
  for (int l = 0; l < 32; ++l) {
    if ((mask >> l & 1u) == 0) continue;
    const int t = first + l;
    if (t >= last) deadlock("a warp collective's mask names lane " + std::to_string(l) + ", past the block's threads");
    const Fiber& g = fibers_[t];
    if (g.state == State::kDone)
      deadlock("a warp collective's mask names lane " + std::to_string(l) + ", which has left the kernel");
    if (g.state != State::kAtWarpOp || g.mask != mask) return;  // not there yet
    if (g.predicate) ballot |= 1u << l;
  }
  for (int l = 0; l < 32; ++l) {
    if ((mask >> l & 1u) == 0) continue;
    Fiber& g = fibers_[first + l];
    const int s = g.src < 0 ? l : g.src;
    g.result = s < 32 && (mask >> s & 1u) ? fibers_[first + s].offered : g.offered;
    g.ballot = ballot;
    g.state = State::kRunnable;
  }
}

[[noreturn]] inline void Emulator::deadlock(const std::string& what) {
  throw std::runtime_error("cuda_emu: block (" + std::to_string(block_idx_.x) + "," + std::to_string(block_idx_.y) +
                           "," + std::to_string(block_idx_.z) + "): " + what);
}

inline void Emulator::run_block(const std::function<void()>& body, std::mt19937_64& rng) {
  body_ = &body;
  for (int t = 0; t < threads_; ++t) {
    Fiber& f = fibers_[t];
    if (!f.stack) f.stack.reset(new char[kStack]);  // not zeroed: pages are touched as the stack grows
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.get();
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = &scheduler_;
    makecontext(&f.ctx, &Emulator::entry, 0);
    f.tid = uint3{static_cast<unsigned>(t) % block_dim_.x, static_cast<unsigned>(t) / block_dim_.x % block_dim_.y,
                  static_cast<unsigned>(t) / (block_dim_.x * block_dim_.y)};
    f.warp = t / 32, f.lane = t % 32;
    f.state = State::kRunnable;
  }
  std::vector<int> order(threads_);
  for (;;) {
    for (int t = 0; t < threads_; ++t) order[t] = t;
    if (settings.threads == Order::kReverse) std::reverse(order.begin(), order.end());
    if (settings.threads == Order::kShuffled) std::shuffle(order.begin(), order.end(), rng);
    bool ran = false;
    for (int t : order) {
      if (fibers_[t].state != State::kRunnable) continue;
      ran = true;
      current_ = static_cast<size_t>(t);
      ::threadIdx = fibers_[t].tid;
      ++counts.switches;
      swapcontext(&scheduler_, &fibers_[t].ctx);
      if (failure_) {
        const auto f = failure_;
        failure_ = nullptr;
        std::rethrow_exception(f);
      }
    }
    if (ran) continue;  // a round ran: warps released within it run in the next
    int living = 0, at_barrier = 0, at_warp = 0;
    for (int t = 0; t < threads_; ++t) {
      living += fibers_[t].state != State::kDone;
      at_barrier += fibers_[t].state == State::kAtBlockBarrier;
      at_warp += fibers_[t].state == State::kAtWarpOp;
    }
    if (living == 0) return;
    if (at_barrier == living) {
      for (int t = 0; t < threads_; ++t)
        if (fibers_[t].state == State::kAtBlockBarrier) fibers_[t].state = State::kRunnable;
      continue;
    }
    for (int t = 0; t < threads_; ++t) {  // the likeliest cause first: a lane the collective names has left
      const Fiber& f = fibers_[t];
      if (f.state != State::kAtWarpOp) continue;
      for (int l = 0; l < 32; ++l)
        if ((f.mask >> l & 1u) != 0 && f.warp * 32 + l < threads_ && fibers_[f.warp * 32 + l].state == State::kDone)
          deadlock("thread " + std::to_string(t) + " waits in a warp collective whose mask names lane " +
                   std::to_string(l) + ", which has left the kernel");
    }
    deadlock(std::to_string(at_barrier) + " threads wait at __syncthreads and " + std::to_string(at_warp) +
             " in a warp collective that cannot complete");
  }
}

inline void Emulator::launch(const void* kernel, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body,
                             bool pdl) {
  const int64_t threads = int64_t{block.x} * block.y * block.z;
  if (threads < 1 || threads > prop.maxThreadsPerBlock || block.z > 64)
    throw std::runtime_error("cuda_emu: " + std::to_string(threads) + " threads a block (1 … 1024)");
  if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.y > 65535 || grid.z > 65535)
    throw std::runtime_error("cuda_emu: a grid of " + std::to_string(grid.x) + " × " + std::to_string(grid.y) + " × " +
                             std::to_string(grid.z) + " blocks");
  const auto limit = smem_limit_.find(kernel);
  const size_t allowed = limit == smem_limit_.end() ? prop.sharedMemPerBlock : static_cast<size_t>(limit->second);
  if (smem > allowed || smem > prop.sharedMemPerBlockOptin)
    throw std::runtime_error("cuda_emu: " + std::to_string(smem) + " bytes of dynamic shared memory, the kernel's limit " +
                             std::to_string(std::min(allowed, prop.sharedMemPerBlockOptin)) +
                             " (cudaFuncSetAttribute raises it up to the device's opt-in maximum)");
  ++counts.launches;
  counts.pdl_launches += pdl;
  counts.max_dynamic_smem = std::max(counts.max_dynamic_smem, smem);
  block_dim_ = block, grid_dim_ = grid;
  ::blockDim = block, ::gridDim = grid;
  threads_ = static_cast<int>(threads);
  if (fibers_.size() < static_cast<size_t>(threads_)) fibers_.resize(threads_);
  std::vector<uint3> blocks;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) blocks.push_back(uint3{x, y, z});
  std::mt19937_64 rng(settings.seed);
  if (settings.blocks == Order::kReverse) std::reverse(blocks.begin(), blocks.end());
  if (settings.blocks == Order::kShuffled) std::shuffle(blocks.begin(), blocks.end(), rng);
  for (const uint3& b : blocks) {
    block_idx_ = b;
    ::blockIdx = b;
    smem_.assign(std::max<size_t>(smem, 16), 0xff);
    ++counts.blocks;
    run_block(body, rng);
  }
}

template <typename T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
// lane l's source within its width-wide segment, or −1 (its own value) where the source is outside it
inline int segment_src(int lane, int src, int width) {
  const int base = lane / width * width;
  return src < base || src >= base + width ? -1 : src;
}
inline int lane_id() { return emu().lane(); }

}  // namespace cuda_emu

// ---- the kernels' built-in variables and intrinsics ----------------------------------------------------
constexpr int warpSize = 32;

using std::fma;
using std::max;
using std::min;

inline void __syncthreads() { ::cuda_emu::emu().sync_block(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { (void)::cuda_emu::emu().warp_exchange(mask, 0, -1, false, nullptr); }
inline void __threadfence() {}
inline void __threadfence_block() {}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const int l = ::cuda_emu::lane_id();
  return ::cuda_emu::from_bits<T>(::cuda_emu::emu().warp_exchange(
      mask, ::cuda_emu::to_bits(v), ::cuda_emu::segment_src(l, l ^ lane_mask, width), false, nullptr));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int l = ::cuda_emu::lane_id();
  return ::cuda_emu::from_bits<T>(::cuda_emu::emu().warp_exchange(
      mask, ::cuda_emu::to_bits(v), ::cuda_emu::segment_src(l, l + static_cast<int>(delta), width), false, nullptr));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int l = ::cuda_emu::lane_id();
  return ::cuda_emu::from_bits<T>(::cuda_emu::emu().warp_exchange(
      mask, ::cuda_emu::to_bits(v), ::cuda_emu::segment_src(l, l - static_cast<int>(delta), width), false, nullptr));
}
template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  const int l = ::cuda_emu::lane_id();
  return ::cuda_emu::from_bits<T>(::cuda_emu::emu().warp_exchange(
      mask, ::cuda_emu::to_bits(v), ::cuda_emu::segment_src(l, l / width * width + src % width, width), false, nullptr));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  unsigned b = 0;
  (void)::cuda_emu::emu().warp_exchange(mask, 0, -1, predicate != 0, &b);
  return b;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) == mask; }
template <typename T>
T __ldcg(const T* p) {
  return *p;
}
template <typename T>
T __ldg(const T* p) {
  return *p;
}
// one thread runs at a time, so the read-modify-write is atomic
template <typename T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
T atomicExch(T* p, T v) {
  const T old = *p;
  *p = v;
  return old;
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  const T old = *p;
  if (old == compare) *p = v;
  return old;
}

// ---- the runtime calls the kernels' launch code makes ---------------------------------------------------
inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "cuda_emu launch error"; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
  if (value < 0 || static_cast<size_t>(value) > ::cuda_emu::emu().prop.sharedMemPerBlockOptin) return cudaErrorInvalidValue;
  ::cuda_emu::emu().set_max_dynamic_smem(kernel, value);
  return cudaSuccess;
}
template <typename... Params>
cudaError_t cudaFuncSetAttribute(void (*kernel)(Params...), cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}
// The launch: the arguments converted to the kernel's parameters once, as the GPU receives them, and
// every thread called with its own copies. Errors are thrown (the emulator's), not returned.
template <typename... Params, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* cfg, void (*kernel)(Params...), Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "the kernel's parameters and the launch's arguments");
  const std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
  bool pdl = false;
  for (unsigned i = 0; i < cfg->numAttrs; ++i)
    pdl |= cfg->attrs[i].id == cudaLaunchAttributeProgrammaticStreamSerialization &&
           cfg->attrs[i].val.programmaticStreamSerializationAllowed != 0;
  ::cuda_emu::emu().launch(reinterpret_cast<const void*>(kernel), cfg->gridDim, cfg->blockDim, cfg->dynamicSmemBytes,
                           [&] { std::apply(kernel, params); }, pdl);
  return cudaSuccess;
}
