// A CPU emulator of CUDA's execution model, for running the pass's kernels from their own .cu sources on
// machines without a GPU (tests/test_cuda_emu.cpp). Every CUDA thread of a block is a fiber (ucontext) on
// the calling thread; a fiber runs until it reaches __syncthreads, a warp collective (__shfl_*_sync,
// __syncwarp) or its end, so shared memory needs no locks and `__shared__` variables are function statics
// (one block at a time). What it checks beyond the arithmetic:
//
// - the order of threads between two barriers is a setting (forward, reverse, shuffled) and so is the order
//   of blocks: a missing __syncthreads, or a block that reads what another block of the same launch writes
//   without the atomics that order them, gives different results in different orders;
// - a warp collective completes when every lane of its mask that has not left the kernel is in it (the
//   same op, the same mask); a lane that reads a lane outside the mask, past the block's threads or gone,
//   a collective whose lanes wait at __syncthreads, and a __syncthreads that not every living thread
//   reaches while others wait in a collective, are errors (undefined or a deadlock on the GPU); widths
//   other than 32 are refused;
// - the launch's limits: 1,024 threads a block, 48 KB of dynamic shared memory unless
//   cudaFuncSetAttribute raised the kernel's limit, the device's opt-in maximum; dynamic shared memory
//   starts as NaN bytes (0xff), so a read of what no thread wrote shows up in the results.
//
// It does not model timing, the memory model beyond these orders (__threadfence is a no-op), asynchronous
// copies (cp.async takes the kernels' synchronous branch, so a wrong wait_group count goes unseen), the
// size of static shared memory in the limits, static shared memory's contents at a block's start (a
// function static: the previous block's values, not garbage), or device-side libm: the kernels' host
// branches (std::exp, std::fma) run, which the CPU references use too, so the results are the reference's
// bit for bit where the orders of summation agree. Under AddressSanitizer the fiber switches are announced
// to it (__sanitizer_*_switch_fiber).
//
// A kernel's device assertion (CUDA_KERNEL_ASSERT) throws std::runtime_error naming the condition, where a
// GPU would stop the context. Launches written `kernel<<<grid, block, smem, stream>>>(args…)`, which a C++
// compiler does not parse, run from a copy of their .cu file with the brackets rewritten by
// tests/cuda_emu/rewrite_launches.cmake into `kernel | cuda_emu::launch_dims(grid, block, smem,
// stream).call(args…)`: the same launch as cudaLaunchKernelEx's below.
//
// Include it first (it stands in for <cuda_runtime.h>; tests/cuda_emu/include holds the headers the
// kernels include), then the .cu files.
#pragma once

#include <math.h>
#include <ucontext.h>

#include <c10/macros/Macros.h>  // CUDA_KERNEL_ASSERT, redefined below

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

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
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

struct CUstream_st;
using cudaStream_t = CUstream_st*;

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorLaunchFailure = 719 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes = 0;
  cudaStream_t stream = nullptr;
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
#undef CUDA_KERNEL_ASSERT
#define CUDA_KERNEL_ASSERT(cond)                                                                         \
  if (!(cond))                                                                                           \
    throw std::runtime_error(std::string("cuda_emu: device assertion `" #cond "` failed at ") + __FILE__ + \
                             ":" + std::to_string(__LINE__));

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

// What the emulator has done: launches (in all and of each kernel), blocks, fiber switches into threads,
// the largest dynamic shared memory a launch asked for.
struct Counts {
  int64_t launches = 0, blocks = 0, switches = 0;
  size_t max_dynamic_smem = 0;
  std::map<const void*, int64_t> by_kernel;  // launches of each kernel (its function's address)
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
  void launch(const void* kernel, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body);

  void set_max_dynamic_smem(const void* kernel, int bytes) { smem_limit_[kernel] = bytes; }

  // the running fiber's coordinates and the block's dynamic shared memory
  const uint3& thread_idx() const { return fibers_[current_].tid; }
  int lane() const { return fibers_[current_].lane; }
  const uint3& block_idx() const { return block_idx_; }
  const dim3& block_dim() const { return block_dim_; }
  const dim3& grid_dim() const { return grid_dim_; }
  unsigned char* dynamic_smem() { return smem_.data(); }

  void sync_block();
  // A warp collective `op` (shfl, ballot, syncwarp: lanes must meet at the same one): this lane offers
  // `value` and takes lane `src`'s (0 … 31; src < 0: reads none, its own back). Returns the value and
  // the warp's ballot of `predicate` over the lanes taking part.
  enum class WarpOp { kShfl, kBallot, kSyncwarp };
  uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t value, int src, bool predicate, unsigned* ballot);

 private:
  enum class State { kRunnable, kAtBlockBarrier, kAtWarpOp, kDone };
  struct Fiber {
    ucontext_t ctx{};
    std::unique_ptr<char[]> stack;
    uint3 tid{};
    int warp = 0, lane = 0;
    State state = State::kDone;
    unsigned mask = 0;       // at a warp op
    WarpOp op = WarpOp::kShfl;  // at a warp op
    void* fake_stack = nullptr;  // AddressSanitizer's, while switched out
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
  void release_warps_waiting_on(int warp);
  // AddressSanitizer's fiber switches (no-ops without it)
  static void asan_start(void** fake, const void* bottom, size_t size);
  static void asan_finish(void* fake, const void** bottom, size_t* size);
  [[noreturn]] void deadlock(const std::string& what);

  std::vector<Fiber> fibers_;
  size_t current_ = 0;
  int threads_ = 0;
  ucontext_t scheduler_{};
  void* scheduler_fake_ = nullptr;
  const void* scheduler_bottom_ = nullptr;
  size_t scheduler_size_ = 0;
  const std::function<void()>* body_ = nullptr;
  std::exception_ptr failure_;
  uint3 block_idx_{};
  dim3 block_dim_, grid_dim_;
  std::vector<unsigned char> smem_;
  std::map<const void*, int> smem_limit_;
};

inline Emulator& emu() { return Emulator::get(); }
inline unsigned char* dynamic_smem() { return emu().dynamic_smem(); }

// The three orders the tests run every kernel in: threads and blocks forward, both reversed, both shuffled.
inline std::vector<std::pair<std::string, Settings>> orders() {
  return {{"forward", {Order::kForward, Order::kForward, 1}},
          {"reverse", {Order::kReverse, Order::kReverse, 1}},
          {"shuffled", {Order::kShuffled, Order::kShuffled, 7}}};
}

// How many times `kernel` has been launched.
template <typename... P>
int64_t launches_of(void (*kernel)(P...)) {
  const auto& m = emu().counts.by_kernel;
  const auto it = m.find(reinterpret_cast<const void*>(kernel));
  return it == m.end() ? 0 : it->second;
}

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

inline void Emulator::asan_start(void** fake, const void* bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

inline void Emulator::asan_finish(void* fake, const void** bottom, size_t* size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

inline void Emulator::entry() {
  Emulator& e = get();
  asan_finish(nullptr, &e.scheduler_bottom_, &e.scheduler_size_);
  try {
    (*e.body_)();
  } catch (...) {
    if (!e.failure_) e.failure_ = std::current_exception();
  }
  e.fibers_[e.current_].state = State::kDone;
  asan_start(nullptr, e.scheduler_bottom_, e.scheduler_size_);  // this stack is done with
  // uc_link returns to the scheduler
}

inline void Emulator::yield_to_scheduler() {
  Fiber& f = fibers_[current_];
  asan_start(&f.fake_stack, scheduler_bottom_, scheduler_size_);
  swapcontext(&f.ctx, &scheduler_);
  asan_finish(fibers_[current_].fake_stack, &scheduler_bottom_, &scheduler_size_);
}

inline void Emulator::sync_block() {
  fibers_[current_].state = State::kAtBlockBarrier;
  yield_to_scheduler();
}

inline uint64_t Emulator::warp_exchange(WarpOp op, unsigned mask, uint64_t value, int src, bool predicate,
                                        unsigned* ballot) {
  Fiber& f = fibers_[current_];
  if ((mask >> f.lane & 1u) == 0) deadlock("a warp collective whose mask leaves out the calling lane");
  f.state = State::kAtWarpOp;
  f.op = op, f.mask = mask, f.offered = value, f.src = src, f.predicate = predicate;
  try_release_warp(f.warp, mask);
  if (fibers_[current_].state != State::kRunnable) yield_to_scheduler();
  if (ballot != nullptr) *ballot = fibers_[current_].ballot;
  return fibers_[current_].result;
}

// Releases the lanes of `mask` in warp `warp` once every one of them that exists and has not left waits
// at the same warp op with that mask. A lane reading one that does not take part is an error.
inline void Emulator::try_release_warp(int warp, unsigned mask) {
  const int first = warp * 32, last = std::min(threads_, first + 32);
  const auto taking_part = [&](int l) {
    return (mask >> l & 1u) != 0 && first + l < last && fibers_[first + l].state != State::kDone;
  };
  WarpOp op = WarpOp::kShfl;
  bool any = false;
  unsigned ballot = 0;
  for (int l = 0; l < 32; ++l) {
    if (!taking_part(l)) continue;
    const Fiber& g = fibers_[first + l];
    if (g.state != State::kAtWarpOp || g.mask != mask) return;  // not there yet
    if (any && g.op != op) deadlock("lanes of one mask meet at different warp collectives");
    op = g.op, any = true;
    if (g.predicate) ballot |= 1u << l;
  }
  for (int l = 0; l < 32; ++l) {
    if (!taking_part(l)) continue;
    Fiber& g = fibers_[first + l];
    if (g.src >= 0 && !taking_part(g.src))
      deadlock("lane " + std::to_string(l) + " of warp " + std::to_string(warp) + " reads lane " +
               std::to_string(g.src) + ", which " +
               ((mask >> g.src & 1u) == 0 ? std::string("is not in the mask")
                : first + g.src >= last ? std::string("is past the block's threads")
                                        : std::string("has left the kernel")));
  }
  for (int l = 0; l < 32; ++l) {
    if (!taking_part(l)) continue;
    Fiber& g = fibers_[first + l];
    g.result = g.src < 0 ? g.offered : fibers_[first + g.src].offered;
    g.ballot = ballot;
    g.state = State::kRunnable;
  }
}

// After a lane of `warp` has left: the collectives its other lanes wait in may now be complete.
inline void Emulator::release_warps_waiting_on(int warp) {
  const int first = warp * 32, last = std::min(threads_, first + 32);
  for (int t = first; t < last; ++t)
    if (fibers_[t].state == State::kAtWarpOp) try_release_warp(warp, fibers_[t].mask);
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
      asan_start(&scheduler_fake_, fibers_[t].stack.get(), kStack);
      swapcontext(&scheduler_, &fibers_[t].ctx);
      asan_finish(scheduler_fake_, nullptr, nullptr);
      if (failure_) {
        const auto f = failure_;
        failure_ = nullptr;
        std::rethrow_exception(f);
      }
      if (fibers_[t].state == State::kDone) release_warps_waiting_on(fibers_[t].warp);
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
    deadlock(std::to_string(at_barrier) + " threads wait at __syncthreads and " + std::to_string(at_warp) +
             " in a warp collective that cannot complete");
  }
}

inline void Emulator::launch(const void* kernel, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body) {
  const int64_t threads = block.x > 1024 || block.y > 1024 ? 0 : int64_t{block.x} * block.y * block.z;
  if (threads < 1 || threads > prop.maxThreadsPerBlock || block.z > 64)
    throw std::runtime_error("cuda_emu: " + std::to_string(threads) + " threads a block (1 … 1024)");
  if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    throw std::runtime_error("cuda_emu: a grid of " + std::to_string(grid.x) + " × " + std::to_string(grid.y) + " × " +
                             std::to_string(grid.z) + " blocks");
  const auto limit = smem_limit_.find(kernel);
  const size_t allowed = limit == smem_limit_.end() ? prop.sharedMemPerBlock : static_cast<size_t>(limit->second);
  if (smem > allowed || smem > prop.sharedMemPerBlockOptin)
    throw std::runtime_error("cuda_emu: " + std::to_string(smem) + " bytes of dynamic shared memory, the kernel's limit " +
                             std::to_string(std::min(allowed, prop.sharedMemPerBlockOptin)) +
                             " (cudaFuncSetAttribute raises it up to the device's opt-in maximum)");
  ++counts.launches;
  ++counts.by_kernel[kernel];
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
inline int lane_id() { return emu().lane(); }

}  // namespace cuda_emu

// ---- the kernels' built-in variables and intrinsics ----------------------------------------------------
constexpr int warpSize = 32;

using std::fma;
using std::max;
using std::min;

inline void __syncthreads() { ::cuda_emu::emu().sync_block(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  using Op = ::cuda_emu::Emulator::WarpOp;
  (void)::cuda_emu::emu().warp_exchange(Op::kSyncwarp, mask, 0, -1, false, nullptr);
}
inline void __threadfence() {}
inline void __threadfence_block() {}

namespace cuda_emu {
// lane `src` of this lane's warp offered its value (widths other than 32 are not emulated)
template <typename T>
T shuffle(unsigned mask, T v, int src, int width) {
  if (width != 32) throw std::runtime_error("cuda_emu: a warp shuffle of width " + std::to_string(width) + " (only 32)");
  return from_bits<T>(emu().warp_exchange(Emulator::WarpOp::kShfl, mask, to_bits(v), src, false, nullptr));
}
}  // namespace cuda_emu

template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ::cuda_emu::shuffle(mask, v, (::cuda_emu::lane_id() ^ lane_mask) & 31, width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int l = ::cuda_emu::lane_id() + static_cast<int>(delta);
  return ::cuda_emu::shuffle(mask, v, l < 32 ? l : -1, width);  // past the warp's end: its own value
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int l = ::cuda_emu::lane_id() - static_cast<int>(delta);
  return ::cuda_emu::shuffle(mask, v, l >= 0 ? l : -1, width);  // before its start: its own value
}
template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return ::cuda_emu::shuffle(mask, v, ((src % 32) + 32) % 32, width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  unsigned b = 0;
  (void)::cuda_emu::emu().warp_exchange(::cuda_emu::Emulator::WarpOp::kBallot, mask, 0, -1, predicate != 0, &b);
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
  ::cuda_emu::emu().launch(reinterpret_cast<const void*>(kernel), cfg->gridDim, cfg->blockDim, cfg->dynamicSmemBytes,
                           [&] { std::apply(kernel, params); });
  return cudaSuccess;
}

// ---- kernel<<<grid, block, smem, stream>>>(args…), as rewritten by rewrite_launches.cmake -----------------
namespace cuda_emu {
// The launch's arguments, held until `kernel | …` names the kernel.
template <typename... Args>
struct BoundLaunch {
  cudaLaunchConfig_t cfg;
  std::tuple<Args...> args;
};
struct LaunchDims {
  cudaLaunchConfig_t cfg;
  template <typename... Args>
  BoundLaunch<std::decay_t<Args>...> call(Args&&... args) const {
    return {cfg, std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)};
  }
};
inline LaunchDims launch_dims(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t stream = nullptr) {
  LaunchDims d{};
  d.cfg.gridDim = grid, d.cfg.blockDim = block, d.cfg.dynamicSmemBytes = smem, d.cfg.stream = stream;
  return d;
}
// `kernel | launch` with the kernel a function or a template's specialization (found by the argument's
// namespace); the launch's errors are thrown, as cudaLaunchKernelEx's.
template <typename... Params, typename... Args>
void operator|(void (*kernel)(Params...), BoundLaunch<Args...>&& launch) {
  std::apply([&](Args&... a) { (void)cudaLaunchKernelEx(&launch.cfg, kernel, a...); }, launch.args);
}
}  // namespace cuda_emu
