#include "distributed/process_group.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <cstdlib>
#include <stdexcept>

#if SGMCMC_HAVE_C10D
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

namespace sgmcmc {
namespace {

int env_int(const EnvLookup& env, const std::string& name, int lo, int hi) {
  const auto v = env(name);
  if (!v) throw std::invalid_argument(name + ": not set (needed for a distributed run)");
  char* end = nullptr;
  const long x = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || x < lo || x > hi)
    throw std::invalid_argument(name + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got '" + *v + "'");
  return static_cast<int>(x);
}

// RANK / WORLD_SIZE / LOCAL_RANK, or Slurm's SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID.
bool read_ranks(const EnvLookup& env, LaunchEnv& e) {
  const bool torch_vars = env("WORLD_SIZE").has_value();
  const bool slurm = !torch_vars && env("SLURM_NTASKS") && env("SLURM_PROCID") && env("MASTER_ADDR");
  if (!torch_vars && !slurm) return false;
  const std::string world = torch_vars ? "WORLD_SIZE" : "SLURM_NTASKS";
  const std::string rank = torch_vars ? "RANK" : "SLURM_PROCID";
  const std::string local = torch_vars ? "LOCAL_RANK" : "SLURM_LOCALID";
  e.world_size = env_int(env, world, 1, 1 << 20);
  if (e.world_size == 1) return false;
  e.rank = env_int(env, rank, 0, e.world_size - 1);
  e.local_rank = env(local) ? env_int(env, local, 0, e.world_size - 1) : e.rank;
  e.source = rank + "/" + world;
  return true;
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

LaunchEnv read_launch_env(const EnvLookup& env, bool needs_master) {
  LaunchEnv e;
  if (!read_ranks(env, e)) return LaunchEnv{};
  if (needs_master) {
    const auto addr = env("MASTER_ADDR");
    if (!addr || addr->empty()) throw std::invalid_argument("MASTER_ADDR: not set (needed with " + e.source + ")");
    e.master_addr = *addr;
    if (env("MASTER_PORT") || e.source.rfind("RANK", 0) == 0) e.master_port = env_int(env, "MASTER_PORT", 1, 65535);
  }
  const auto agent = env("TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = agent && (*agent == "True" || *agent == "true" || *agent == "1");
  if (const auto ifname = env("GLOO_SOCKET_IFNAME")) e.socket_ifname = ifname->substr(0, ifname->find(','));
  return e;
}

#if SGMCMC_HAVE_C10D

bool c10d_available() { return true; }

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

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const LaunchEnv& env, const DistributedOptions& o) : env_(env), timeout_s_(o.timeout_s) {
    try {
      join(o);
    } catch (...) {
      rethrow_distributed("joining the process group (" + env.source + ")", env.rank, o.timeout_s);
    }
  }

  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }
  int local_rank() const override { return env_.local_rank; }

  void all_reduce_sum(std::vector<torch::Tensor>& tensors) override {
    // One flat buffer per dtype: one collective instead of one per tensor.
    std::map<c10::ScalarType, std::vector<torch::Tensor*>> by_dtype;
    for (auto& t : tensors) by_dtype[t.scalar_type()].push_back(&t);
    for (auto& [dtype, ts] : by_dtype) {
      std::vector<torch::Tensor> flat_parts;
      for (auto* t : ts) flat_parts.push_back(t->detach().reshape({-1}));
      std::vector<torch::Tensor> buf = {torch::cat(flat_parts).cpu().contiguous()};
      run("an all-reduce", [&] { return pg_->allreduce(buf); });
      int64_t off = 0;
      for (auto* t : ts) {
        const int64_t n = t->numel();
        t->detach().copy_(buf[0].narrow(0, off, n).view(t->sizes()));
        off += n;
      }
    }
  }

  std::vector<torch::Tensor> all_gather(const torch::Tensor& t) override {
    std::vector<torch::Tensor> in = {t.detach().cpu().contiguous()};
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int r = 0; r < world_size(); ++r) out[0].push_back(torch::empty_like(in[0]));
    run("an all-gather", [&] { return pg_->allgather(out, in); });
    for (auto& x : out[0]) x = x.to(t.device());
    return out[0];
  }

  void broadcast(torch::Tensor& t, int root) override {
    std::vector<torch::Tensor> buf = {t.detach().cpu().contiguous()};
    ::c10d::BroadcastOptions opts;
    opts.rootRank = root;
    run("a broadcast", [&] { return pg_->broadcast(buf, opts); });
    t.detach().copy_(buf[0]);
  }

  void barrier() override {
    run("a barrier", [&] { return pg_->barrier(); });
  }

 private:
  void join(const DistributedOptions& o) {
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
    auto opts = ::c10d::ProcessGroupGloo::Options::create(timeout);
    opts->devices.push_back(make_device());
    pg_ = c10::make_intrusive<::c10d::ProcessGroupGloo>(prefixed, env_.rank, env_.world_size, opts);
    exchange_processes(*prefixed);
  }

  std::shared_ptr<::gloo::transport::Device> make_device() const {
    if (!env_.socket_ifname.empty()) return ::c10d::ProcessGroupGloo::createDeviceForInterface(env_.socket_ifname);
    if (env_.master_addr == "127.0.0.1" || env_.master_addr == "localhost")
      return ::c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    return ::c10d::ProcessGroupGloo::createDefaultDevice();
  }

  template <typename F>
  void run(const std::string& what, F&& start) {
    try {
      start()->wait();
    } catch (...) {
      rethrow_distributed(what, env_.rank, timeout_s_, lost_ranks());
    }
  }

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
  c10::intrusive_ptr<::c10d::ProcessGroupGloo> pg_;
  std::vector<Proc> procs_;
};

}  // namespace

CommunicatorPtr join_process_group(const LaunchEnv& env, const DistributedOptions& options) {
  if (!env.distributed()) return std::make_shared<LocalCommunicator>();
  return std::make_shared<GlooCommunicator>(env, options);
}

#else  // built without c10d

bool c10d_available() { return false; }

CommunicatorPtr join_process_group(const LaunchEnv& env, const DistributedOptions&) {
  if (!env.distributed()) return std::make_shared<LocalCommunicator>();
  throw std::invalid_argument(env.source + ": a distributed launch (world size " + std::to_string(env.world_size) +
                              "), but this sgmcmc was built without c10d (configure with libtorch's c10d "
                              "headers and libgloo, -DSGMCMC_DISTRIBUTED=ON)");
}

#endif

}  // namespace sgmcmc
