#include "distributed/process_group.h"

#include <cstdlib>
#include <stdexcept>

#include "distributed/c10d_communicator.h"

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

bool c10d_available() { return c10d_has_gloo() || c10d_has_nccl(); }

CommunicatorPtr join_process_group(const LaunchEnv& env, const DistributedOptions& options, const std::string& device) {
  if (!env.distributed()) return std::make_shared<LocalCommunicator>();
  return make_c10d_communicator(env, options, device);
}

}  // namespace sgmcmc
