#include "distributed/c10d_communicator.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <stdexcept>
#include <utility>

#include "compat.h"

#if SGMCMC_HAVE_C10D
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if SGMCMC_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if SGMCMC_HAVE_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#endif

namespace sgmcmc {

#if SGMCMC_HAVE_C10D && SGMCMC_HAVE_GLOO
bool c10d_has_gloo() { return true; }
#else
bool c10d_has_gloo() { return false; }
#endif
#if SGMCMC_HAVE_C10D && SGMCMC_HAVE_NCCL
bool c10d_has_nccl() { return true; }
#else
bool c10d_has_nccl() { return false; }
#endif

#if SGMCMC_HAVE_C10D

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string host_name() {
  char buf[256] = {0};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("?");
}

// False when `pid` has exited, is a zombie or is stopped (SIGSTOP): it will not answer.
bool process_running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return kill(pid, 0) == 0;
  const auto close = line.rfind(')');
  const char state = close + 2 < line.size() ? line[close + 2] : '?';
  return state != 'Z' && state != 'X' && state != 'T' && state != 't';
}

// Rethrows the exception being handled as one line: who failed, doing what, the rank(s) lost when
// known ("lost rank 1 (pid ... on host)"), and the first line of c10d's message.
[[noreturn]] void rethrow_distributed(const std::string& what, int rank, double timeout_s, const std::string& lost = "") {
  std::string cause;
  try {
    throw;
  } catch (const c10::Error& e) {
    cause = first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    cause = first_line(e.what());
  }
  const std::string who = "distributed: rank " + std::to_string(rank) + ": ";
  const std::string limit = "distributed.timeout_s = " + std::to_string(static_cast<int64_t>(timeout_s)) + " s";
  if (!lost.empty()) throw std::runtime_error(who + "lost rank " + lost + " during " + what + " (" + limit + "): " + cause);
  throw std::runtime_error(who + what + " failed (a rank died or stopped, or none answered within " + limit +
                           "): " + cause);
}

// The CUDA device index of a run on `device` with launch `env` ("cuda" on several ranks is
// cuda:LOCAL_RANK, as DistributedRun::device_for); -1 for a CPU run.
int cuda_index(const std::string& device, const LaunchEnv& env) {
  if (device.rfind("cuda", 0) != 0) return -1;
  if (device == "cuda") return env.local_rank;
  return torch::Device(device).index();
}

class C10dCommunicator final : public Communicator {
 public:
  C10dCommunicator(const LaunchEnv& env, const DistributedOptions& o, int nccl_device)
      : env_(env), timeout_s_(o.timeout_s), nccl_device_(nccl_device) {
    try {
      join(o);
    } catch (const std::exception& e) {
      // Rank 0's store cannot bind: another program, another run or a second rank 0 holds the port.
      // Said as such, not as c10d's three bind attempts behind "a rank died or stopped".
      const std::string what = e.what();
      if (env.rank == 0 && o.file_store_path().empty() && what.find("Address already in use") != std::string::npos)
        throw std::runtime_error("distributed: rank 0: MASTER_PORT " + std::to_string(env.master_port) + " on " +
                                 env.master_addr + " is in use (another program, another run, or a second rank 0 " +
                                 "started with the same " + env.source + "): choose a free MASTER_PORT, or launch with --nproc, " +
                                 "which picks one");
      rethrow_distributed("joining the process group (" + env.source + ")", env.rank, o.timeout_s);
    } catch (...) {
      rethrow_distributed("joining the process group (" + env.source + ")", env.rank, o.timeout_s);
    }
  }

  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }
  int local_rank() const override { return env_.local_rank; }

  void all_reduce_sum(std::vector<torch::Tensor>& tensors) override {
    // One flat buffer per (dtype, device): one collective instead of one per tensor.
    std::map<std::pair<c10::ScalarType, std::string>, std::vector<torch::Tensor*>> groups;
    for (auto& t : tensors) groups[{t.scalar_type(), t.device().str()}].push_back(&t);
    for (auto& [key, ts] : groups) {
      std::vector<torch::Tensor> flat_parts;
      for (auto* t : ts) flat_parts.push_back(t->detach().reshape({-1}));
      const Via via = route(ts.front()->device());
      std::vector<torch::Tensor> buf = {torch::cat(flat_parts).to(buffer_device(via, ts.front()->device())).contiguous()};
      dispatch(via, "an all-reduce", [&](auto& pg) { return pg.allreduce(buf); });
      int64_t off = 0;
      for (auto* t : ts) {
        const int64_t n = t->numel();
        t->detach().copy_(buf[0].narrow(0, off, n).view(t->sizes()));
        off += n;
      }
    }
  }

  std::vector<torch::Tensor> all_gather(const torch::Tensor& t) override {
    const Via via = route(t.device());
    std::vector<torch::Tensor> in = {t.detach().to(buffer_device(via, t.device())).contiguous()};
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int r = 0; r < world_size(); ++r) out[0].push_back(torch::empty_like(in[0]));
    dispatch(via, "an all-gather", [&](auto& pg) { return pg.allgather(out, in); });
    for (auto& x : out[0]) x = x.to(t.device());
    return out[0];
  }

  void broadcast(torch::Tensor& t, int root) override {
    const Via via = route(t.device());
    std::vector<torch::Tensor> buf = {t.detach().to(buffer_device(via, t.device())).contiguous()};
    ::c10d::BroadcastOptions opts;
    opts.rootRank = root;
    dispatch(via, "a broadcast", [&](auto& pg) { return pg.broadcast(buf, opts); });
    t.detach().copy_(buf[0]);
  }

  void barrier() override {
    ::c10d::BarrierOptions opts;
    const Via via = has_gloo() ? Via::kGloo : Via::kNccl;
    if (via == Via::kNccl) opts.device_ids = {nccl_device_};
    dispatch(via, "a barrier", [&](auto& pg) { return pg.barrier(opts); });
  }

 private:
  enum class Via { kGloo, kNccl };

  bool has_gloo() const {
#if SGMCMC_HAVE_GLOO
    return static_cast<bool>(gloo_);
#else
    return false;
#endif
  }
  bool has_nccl() const {
#if SGMCMC_HAVE_NCCL
    return static_cast<bool>(nccl_);
#else
    return false;
#endif
  }

  // CUDA tensors through NCCL when this rank has it; everything else through Gloo, or through NCCL
  // on this rank's GPU in a build without Gloo.
  Via route(const torch::Device& d) const {
    if (d.is_cuda() && has_nccl()) return Via::kNccl;
    return has_gloo() ? Via::kGloo : Via::kNccl;
  }
  torch::Device buffer_device(Via via, const torch::Device& d) const {
    if (via == Via::kGloo) return torch::kCPU;
    return d.is_cuda() ? d : torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(nccl_device_));
  }

  template <typename F>
  void dispatch(Via via, const std::string& what, F&& start) {
    try {
#if SGMCMC_HAVE_GLOO
      if (via == Via::kGloo) {
        start(*gloo_)->wait();
        return;
      }
#endif
#if SGMCMC_HAVE_NCCL
      if (via == Via::kNccl) {
        start(*nccl_)->wait();
        return;
      }
#endif
      throw std::logic_error("no c10d backend for this tensor");
    } catch (...) {
      rethrow_distributed(what + (via == Via::kNccl ? std::string(" (NCCL)") : std::string()), env_.rank, timeout_s_,
                          lost_ranks());
    }
  }

  void join(const DistributedOptions& o) {
    // A write to a lost rank's socket (Gloo's pairs, the TCPStore) then fails with EPIPE, which the
    // collective's error path reports naming the lost rank, instead of SIGPIPE ending this process
    // with status 141 and no message (seen when a rank is killed while another is mid-send).
    ::signal(SIGPIPE, SIG_IGN);
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
    c10::intrusive_ptr<::c10d::Store> store;
    // A process that joins again (k-fold: one run per fold) must not meet the keys or the file of
    // the previous group, which other ranks may still be leaving: each group of a process gets its
    // own key prefix and FileStore file (every rank counts its groups alike).
    static int generation = 0;
    const std::string gen = std::to_string(generation++);
    if (!o.file_store_path().empty()) {
      const std::string path = gen == "0" ? o.file_store_path() : o.file_store_path() + "." + gen;
      store = c10::make_intrusive<::c10d::FileStore>(path, env_.world_size);
    } else {
      ::c10d::TCPStoreOptions so;
      so.port = static_cast<std::uint16_t>(env_.master_port);
      so.isServer = env_.rank == 0 && !env_.agent_store;
      so.numWorkers = env_.world_size;
      so.waitWorkers = false;
      so.timeout = timeout;
      store = c10::make_intrusive<::c10d::TCPStore>(env_.master_addr, so);
    }
    store->setTimeout(timeout);
    auto prefixed = c10::make_intrusive<::c10d::PrefixStore>("sgmcmc/" + gen, store);
#if SGMCMC_HAVE_GLOO
    if (o.backend != "nccl") {  // nccl carries everything (make_c10d_communicator checked it can)
      auto gloo_store = c10::make_intrusive<::c10d::PrefixStore>("gloo", prefixed);
      auto opts = ::c10d::ProcessGroupGloo::Options::create(timeout);
      opts->devices.push_back(make_gloo_device());
      gloo_ = c10::make_intrusive<::c10d::ProcessGroupGloo>(gloo_store, env_.rank, env_.world_size, opts);
    }
#endif
#if SGMCMC_HAVE_NCCL
    if (nccl_device_ >= 0) {
      // A collective that exceeds the timeout throws from wait() (caught and named above) instead of
      // NCCL's watchdog aborting the process; a user's own setting wins.
      setenv(compat::kNcclBlockingWaitEnv, "1", /*overwrite=*/0);
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(nccl_device_));
      auto nccl_store = c10::make_intrusive<::c10d::PrefixStore>("nccl", prefixed);
      auto opts = ::c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      nccl_ = c10::make_intrusive<::c10d::ProcessGroupNCCL>(nccl_store, env_.rank, env_.world_size, opts);
    }
#endif
    exchange_processes(*prefixed);
  }

#if SGMCMC_HAVE_GLOO
  std::shared_ptr<::gloo::transport::Device> make_gloo_device() const {
    if (!env_.socket_ifname.empty()) return ::c10d::ProcessGroupGloo::createDeviceForInterface(env_.socket_ifname);
    if (env_.master_addr == "127.0.0.1" || env_.master_addr == "localhost")
      return ::c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    return ::c10d::ProcessGroupGloo::createDefaultDevice();
  }
#endif

  // After a failed collective: the ranks that are gone. With two ranks it is the other one; with
  // more, the ranks on this host whose process has exited or is stopped (from the host name and pid
  // each rank published when it joined). "" when none can be named.
  std::string lost_ranks() const {
    std::string lost;
    for (int r = 0; r < world_size(); ++r) {
      if (r == env_.rank || r >= static_cast<int>(procs_.size())) continue;
      const bool gone = world_size() == 2 || (procs_[r].host == procs_[env_.rank].host && !process_running(procs_[r].pid));
      if (gone)
        lost += (lost.empty() ? "" : ", ") + std::to_string(r) + " (pid " + std::to_string(procs_[r].pid) + " on " +
                procs_[r].host + ")";
    }
    return lost;
  }

  // Publishes this rank's host and pid in the store and reads every rank's (after the group is up).
  void exchange_processes(::c10d::Store& store) {
    const std::string mine = host_name() + " " + std::to_string(getpid());
    store.set("proc/" + std::to_string(env_.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
    for (int r = 0; r < world_size(); ++r) {
      const auto v = store.get("proc/" + std::to_string(r));
      const std::string text(v.begin(), v.end());
      const auto sp = text.rfind(' ');
      procs_.push_back({text.substr(0, sp), static_cast<pid_t>(std::stol(text.substr(sp + 1)))});
    }
  }

  struct Proc {
    std::string host;
    pid_t pid;
  };

  LaunchEnv env_;
  double timeout_s_;
  int nccl_device_;  // the CUDA device NCCL runs on; -1: no NCCL group
#if SGMCMC_HAVE_GLOO
  c10::intrusive_ptr<::c10d::ProcessGroupGloo> gloo_;
#endif
#if SGMCMC_HAVE_NCCL
  c10::intrusive_ptr<::c10d::ProcessGroupNCCL> nccl_;
#endif
  std::vector<Proc> procs_;
};

}  // namespace

CommunicatorPtr make_c10d_communicator(const LaunchEnv& env, const DistributedOptions& o, const std::string& device) {
  const int cuda = cuda_index(device, env);
  const std::string where = "distributed.backend: " + o.backend + ": ";
  if (o.backend == "nccl" && !c10d_has_nccl())
    throw std::invalid_argument(where + "this sgmcmc was built without c10d's NCCL (a CUDA build, -DSGMCMC_CUDA=ON, "
                                "against a LibTorch with NCCL)");
  if (o.backend == "nccl" && cuda < 0)
    throw std::invalid_argument(where + "NCCL needs device: cuda (this run's device is " + device + ")");
  if (o.backend == "gloo" && !c10d_has_gloo())
    throw std::invalid_argument(where + "this sgmcmc was built without c10d's Gloo");
  const bool nccl = c10d_has_nccl() && cuda >= 0 && o.backend != "gloo";
  if (!nccl && !c10d_has_gloo())
    throw std::invalid_argument("distributed: this sgmcmc has c10d's NCCL but not Gloo: a run on device " + device +
                                " cannot be distributed (use device: cuda)");
  return std::make_shared<C10dCommunicator>(env, o, nccl ? cuda : -1);
}

#else  // built without c10d

CommunicatorPtr make_c10d_communicator(const LaunchEnv& env, const DistributedOptions&, const std::string&) {
  throw std::invalid_argument(env.source + ": a distributed launch (world size " + std::to_string(env.world_size) +
                              "), but this sgmcmc was built without c10d (configure with libtorch's c10d "
                              "headers and libgloo, -DSGMCMC_DISTRIBUTED=ON)");
}

#endif

}  // namespace sgmcmc
