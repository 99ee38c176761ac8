// Distributed runs over c10d (src/distributed): the launch contract, the config block, and 2-rank
// runs of the built sgmcmc binary as child processes of this test (FileStore rendezvous in a
// temporary directory, so no port is involved, and --nproc over TCPStore on 127.0.0.1). Skipped
// when the build has no c10d.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "compat.h"
#include "data/tensors.h"
#include "distributed/c10d_communicator.h"
#include "train/distributed_run.h"
#include "distributed/process_group.h"
#include "metrics/convergence.h"
#include "proc_util.h"
#include "tiny_idx.h"

using namespace sgmcmc;
namespace fs = std::filesystem;

namespace {

using Env = std::map<std::string, std::string>;

EnvLookup lookup_in(const Env& env) {
  return [env](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// Starts SGMCMC_BINARY with `args` and `env` added to this process's environment (the launch
// variables of an outer launcher removed); stdout / stderr to `log`.out / .err.
pid_t spawn_with_env(const std::vector<std::string>& args, const Env& env, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_NTASKS",
                          "SLURM_PROCID", "TORCHELASTIC_USE_AGENT_STORE"})
      unsetenv(v);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    setenv("OMP_NUM_THREADS", "1", 1);
    int out = open((log + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open((log + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<std::string> copy = args;
    std::string bin = SGMCMC_BINARY;
    std::vector<char*> argv = {bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for every child, killing all of them once `deadline_s` has passed (a hung test fails, it
// does not hang); exit statuses in order (128 + signal when killed).
std::vector<int> wait_all(const std::vector<pid_t>& pids, double deadline_s = 120) {
  std::vector<int> status(pids.size(), -1);
  const auto t0 = std::chrono::steady_clock::now();
  size_t left = pids.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      int st = 0;
      if (status[i] < 0 && waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        --left;
      }
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > deadline_s)
      for (size_t i = 0; i < pids.size(); ++i)
        if (status[i] < 0) kill(pids[i], SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

struct Fixture {
  std::string dir, config;
  int runs = 0;
};

// A tiny classification problem and a config for it (sghmc, 60 steps of 50 examples, Gibbs steps,
// samples from step 20, evaluations every 20 steps).
Fixture make_fixture(const std::string& name, const std::string& sampler = "{name: sghmc, lr: 1.0e-4, alpha: 0.1}") {
  Fixture f;
  f.dir = test_util::temp_dir(name);
  test_util::write_tiny_idx_dir(f.dir + "/data");
  f.config = f.dir + "/dist.yaml";
  std::ofstream(f.config) << "name: dist\nseed: 5\ndata: {dir: " << f.dir << "/data, val_size: 100}\n"
                          << "model: {name: mlp, hidden: [20], activation: relu}\n"
                          << "prior: {precision: 1, hyperprior: gamma, gibbs_every_steps: 10}\n"
                          << "sampler: " << sampler << "\n"
                          << "train: {steps: 60, burn_in_steps: 20, thin: 5, batch_size: 50, eval_every_steps: 20, "
                             "threads: 1}\n"
                          << "output: {progress: false, checkpoint_every_seconds: 0}\n"  // the kill test resumes from any evaluation
                          << "distributed: {timeout_s: 30}\n";
  return f;
}

// `sgmcmc train CONFIG --out OUT args...` on `world` ranks (FileStore rendezvous); exit statuses.
std::vector<int> train_ranks(Fixture& f, const std::string& out, int world, std::vector<std::string> args,
                             bool resume = false) {
  const std::string store = f.dir + "/store-" + std::to_string(f.runs++);
  std::vector<std::string> all = {"train"};
  if (resume) {
    all.insert(all.end(), {"--resume", out});
  } else {
    all.insert(all.end(), {f.config, "--out", out});
  }
  all.insert(all.end(), {"-q", "--set", "distributed.init=file://" + store});
  all.insert(all.end(), args.begin(), args.end());
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    Env env;
    if (world > 1) env = {{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(world)}};
    pids.push_back(spawn_with_env(all, env, out + ".rank" + std::to_string(r)));
  }
  return wait_all(pids);
}

nlohmann::json summary_of(const std::string& run) {
  return nlohmann::json::parse(test_util::read_text(run + "/summary.json"));
}

std::string stderr_of(const std::string& out, int rank = 0) {
  return test_util::read_text(out + ".rank" + std::to_string(rank) + ".err");
}

#define SKIP_WITHOUT_C10D() \
  if (!c10d_available()) GTEST_SKIP() << "built without c10d (SGMCMC_DISTRIBUTED off)"

// Several ranks on device cpu need c10d's Gloo. A CUDA build against a PyTorch wheel has NCCL only
// (the wheel ships no gloo/ headers), and there these runs are refused with a one-line error.
#if defined(SGMCMC_HAVE_GLOO)
#define SKIP_WITHOUT_GLOO() SKIP_WITHOUT_C10D()
#else
#define SKIP_WITHOUT_GLOO() GTEST_SKIP() << "this build's c10d has no Gloo: CPU ranks cannot be run"
#endif

}  // namespace

TEST(LaunchEnv, TorchrunVariables) {
  auto e = read_launch_env(lookup_in({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"},
                                      {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29400"},
                                      {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"GLOO_SOCKET_IFNAME", "eth1,eth2"}}));
  EXPECT_TRUE(e.distributed());
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.master_addr, "node7");
  EXPECT_EQ(e.master_port, 29400);
  EXPECT_TRUE(e.agent_store);
  EXPECT_EQ(e.socket_ifname, "eth1");
}

TEST(LaunchEnv, SlurmVariablesNeedMasterAddr) {
  const Env slurm = {{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}, {"SLURM_LOCALID", "1"}};
  EXPECT_FALSE(read_launch_env(lookup_in(slurm)).distributed());  // an allocation alone is no launch
  Env with_master = slurm;
  with_master["MASTER_ADDR"] = "10.0.0.1";
  auto e = read_launch_env(lookup_in(with_master));
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 3);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_port, 29500);
  EXPECT_FALSE(e.agent_store);
}

TEST(LaunchEnv, NothingOrWorldSizeOneIsOneProcess) {
  EXPECT_FALSE(read_launch_env(lookup_in({})).distributed());
  EXPECT_FALSE(read_launch_env(lookup_in({{"WORLD_SIZE", "1"}, {"RANK", "0"}})).distributed());
  auto comm = join_process_group(LaunchEnv{}, DistributedOptions{});
  EXPECT_EQ(comm->world_size(), 1);
  EXPECT_FALSE(comm->distributed());
}

TEST(LaunchEnv, BadVariablesNameThemselves) {
  auto err = [](const Env& env, bool master = true) {
    try {
      read_launch_env(lookup_in(env), master);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err({{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}).find("RANK"),
            std::string::npos);
  EXPECT_NE(err({{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}).find("RANK: not set"),
            std::string::npos);
  EXPECT_NE(err({{"WORLD_SIZE", "x"}}).find("WORLD_SIZE"), std::string::npos);
  EXPECT_NE(err({{"WORLD_SIZE", "2"}, {"RANK", "0"}}).find("MASTER_ADDR"), std::string::npos);
  EXPECT_NE(err({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "a"}}).find("MASTER_PORT"), std::string::npos);
  EXPECT_EQ(err({{"WORLD_SIZE", "2"}, {"RANK", "0"}}, /*master=*/false), "");  // FileStore: no MASTER_*
}

TEST(DistributedConfig, BlockIsCheckedAndOptional) {
  auto parse = [](const std::string& block) {
    return build_config(parse_raw_config("sampler: {name: sgld}\n" + block, "d.yaml"));
  };
  EXPECT_EQ(parse("").distributed.mode, "chains");
  EXPECT_EQ(to_yaml(parse("")).find("distributed"), std::string::npos);  // single-process configs unchanged
  auto c = parse("distributed: {mode: data, init: file:///tmp/x, timeout_s: 5}\n");
  EXPECT_TRUE(c.distributed.data_parallel());
  EXPECT_EQ(c.distributed.file_store_path(), "/tmp/x");
  EXPECT_NE(to_yaml(c).find("distributed"), std::string::npos);
  auto err = [&](const std::string& block) {
    try {
      parse(block);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("distributed: {mdoe: data}\n").find("distributed.mdoe: unknown key"), std::string::npos);
  EXPECT_NE(err("distributed: {mode: both}\n").find("distributed.mode"), std::string::npos);
  EXPECT_NE(err("distributed: {init: tcp://x}\n").find("distributed.init"), std::string::npos);
  EXPECT_NE(err("distributed: {timeout_s: 0}\n").find("distributed.timeout_s"), std::string::npos);
  EXPECT_EQ(parse("").distributed.backend, "auto");
  EXPECT_EQ(parse("distributed: {backend: nccl}\n").distributed.backend, "nccl");
  EXPECT_NE(err("distributed: {backend: mpi}\n").find("distributed.backend"), std::string::npos);
  c = parse("train: {batch_size: 51}\ndistributed: {mode: data}\n");
  EXPECT_NO_THROW(check_distributed_config(c, 1));
  try {
    check_distributed_config(c, 2);
    ADD_FAILURE() << "an odd batch split over 2 ranks was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("train.batch_size"), std::string::npos) << e.what();
  }
}

// A backend this build or this run's device cannot give is refused before any rendezvous, in one
// line naming distributed.backend (NCCL: CUDA builds with a CUDA device; Gloo: every CPU build).
TEST(C10dCommunicator, BackendsOutOfReachAreOneLineErrors) {
  LaunchEnv env;
  env.world_size = 2;
  env.source = "RANK/WORLD_SIZE";
  auto err = [&](const std::string& backend, const std::string& device) {
    DistributedOptions o;
    o.backend = backend;
    o.timeout_s = 1;
    try {
      make_c10d_communicator(env, o, device);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(joined)");
  };
  const std::string cpu_nccl = err("nccl", "cpu");
  EXPECT_EQ(cpu_nccl.find("distributed.backend: nccl"), 0u) << cpu_nccl;
  EXPECT_EQ(cpu_nccl.find('\n'), std::string::npos);
  if (!c10d_has_nccl()) {
    EXPECT_NE(err("nccl", "cuda").find("built without c10d's NCCL"), std::string::npos);
  } else {
    EXPECT_NE(cpu_nccl.find("needs device: cuda"), std::string::npos) << cpu_nccl;
  }
  if (!c10d_has_gloo()) EXPECT_NE(err("gloo", "cpu").find("without c10d's Gloo"), std::string::npos);
}

// A one-rank c10d group (FileStore) on each backend the build and machine have: every collective
// is the identity, on CPU and on CUDA tensors, through Gloo and (CUDA builds with a GPU) NCCL; the
// group of auto on a CUDA device carries CUDA tensors through NCCL and CPU ones through Gloo.
TEST(C10dCommunicator, OneRankGroupOnEachBackend) {
  SKIP_WITHOUT_C10D();
  std::vector<std::pair<std::string, std::string>> cases;  // (backend, device)
  if (c10d_has_gloo()) cases.push_back({"gloo", "cpu"});
  if (compat::cuda_available()) {
    if (c10d_has_gloo()) cases.push_back({"gloo", "cuda:0"});
    if (c10d_has_nccl()) cases.push_back({"nccl", "cuda:0"});
    if (c10d_has_nccl() && c10d_has_gloo()) cases.push_back({"auto", "cuda:0"});
  }
  const std::string dir = test_util::temp_dir("c10d_one_rank");
  int n = 0;
  for (const auto& [backend, device] : cases) {
    SCOPED_TRACE(backend + " on " + device);
    LaunchEnv env;
    env.source = "test";
    DistributedOptions o;
    o.backend = backend;
    o.timeout_s = 60;
    o.init = "file://" + dir + "/store" + std::to_string(n++);
    auto comm = make_c10d_communicator(env, o, device);
    ASSERT_EQ(comm->world_size(), 1);
    const auto dev = torch::Device(device);
    std::vector<torch::Tensor> ts = {torch::arange(6, torch::TensorOptions().dtype(torch::kFloat32).device(dev)).view({2, 3}),
                                     torch::tensor({7, 8}, torch::kInt64),
                                     torch::full({4}, 0.5, torch::TensorOptions().dtype(torch::kFloat32).device(dev))};
    const std::vector<torch::Tensor> before = {ts[0].clone(), ts[1].clone(), ts[2].clone()};
    comm->all_reduce_sum(ts);
    for (size_t i = 0; i < ts.size(); ++i) {
      EXPECT_EQ(ts[i].device(), before[i].device());
      EXPECT_TRUE(torch::equal(ts[i], before[i])) << i;
    }
    const auto gathered = comm->all_gather(ts[0]);
    ASSERT_EQ(gathered.size(), 1u);
    EXPECT_EQ(gathered[0].device(), dev);
    EXPECT_TRUE(torch::equal(gathered[0], before[0]));
    comm->broadcast(ts[2], 0);
    EXPECT_TRUE(torch::equal(ts[2], before[2]));
    comm->barrier();
  }
}

TEST(RankSeed, RankZeroKeepsTheSeedOthersDiffer) {
  EXPECT_EQ(rank_seed(5, 0), 5u);
  EXPECT_NE(rank_seed(5, 1), 5u);
  EXPECT_NE(rank_seed(5, 1), rank_seed(5, 2));
  EXPECT_EQ(rank_seed(5, 1), rank_seed(5, 1));
  EXPECT_LT(rank_seed(5, 3), 1ULL << 63);
}

// (a) distributed.mode: data on 2 ranks × 25 examples = one process × 50 examples: the same
// trajectory up to the order of the gradient's floating-point sum (sghmc with Gibbs steps, and sgld).
TEST(DistributedRun, DataModeEqualsOneProcess) {
  SKIP_WITHOUT_GLOO();
  for (const std::string sampler : {"sghmc", "sgld"}) {
    Fixture f = make_fixture("dist_data_" + sampler, sampler == "sgld" ? "{name: sgld, lr: 2.0e-4}" : "{name: sghmc, lr: 1.0e-4, alpha: 0.1}");
    // sgld names the backend (auto is Gloo on a CPU run): the key reaches the process group.
    std::vector<std::string> set = {"--set", "distributed.mode=data"};
    if (sampler == "sgld") set.insert(set.end(), {"--set", "distributed.backend=gloo"});
    const std::string one = f.dir + "/one-" + sampler, two = f.dir + "/two-" + sampler;
    ASSERT_EQ(train_ranks(f, one, 1, set), std::vector<int>({0})) << stderr_of(one);
    ASSERT_EQ(train_ranks(f, two, 2, set), std::vector<int>({0, 0})) << stderr_of(two) << stderr_of(two, 1);
    auto a = read_tensor_dict(one + "/final.pt"), b = read_tensor_dict(two + "/final.pt");
    for (const char* k : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) {
      EXPECT_TRUE(torch::allclose(a.at(k), b.at(k), 1e-5, 1e-6))
          << sampler << " " << k << " max |Δ| " << (a.at(k) - b.at(k)).abs().max().item<double>();
    }
    auto sa = summary_of(one), sb = summary_of(two);
    EXPECT_NEAR(sa["test_nll"].get<double>(), sb["test_nll"].get<double>(), 1e-5) << sampler;
    EXPECT_EQ(sb["world_size"].get<double>(), 2);
    EXPECT_EQ(sb["distributed_mode"], "data");
    EXPECT_FALSE(sa.contains("world_size"));
    EXPECT_TRUE(fs::exists(two + "/checkpoint.rank-0.pt") && fs::exists(two + "/checkpoint.rank-1.pt"));
    EXPECT_FALSE(fs::exists(two + "/final.rank-1.pt"));  // the parameters are rank 0's to write
  }
}

// (a, BPMF) The same for Bayesian PMF with Gibbs steps for λ and τ: the minibatch of ratings split
// over the ranks, U and V as one process computes them.
TEST(DistributedRun, DataModeEqualsOneProcessBpmf) {
  SKIP_WITHOUT_GLOO();
  Fixture f = make_fixture("dist_bpmf");
  {  // a rank-2 40×30 matrix around 3, ~60 % observed, as ratings.dat
    auto g = compat::make_generator(torch::kCPU, 7);
    auto full = torch::mm(at::randn({40, 2}, g, torch::kFloat32), at::randn({2, 30}, g, torch::kFloat32)) * 0.5 + 3.0;
    full = full.clamp(0.5, 5.0);
    auto keep = at::rand({40, 30}, g, torch::kFloat32) < 0.6;
    std::ofstream out(f.dir + "/ratings.dat");
    for (int64_t u = 0; u < 40; ++u)
      for (int64_t i = 0; i < 30; ++i)
        if (keep[u][i].item<bool>()) out << u + 1 << "::" << i + 1 << "::" << full[u][i].item<float>() << "::0\n";
  }
  f.config = f.dir + "/bpmf.yaml";
  std::ofstream(f.config) << "name: bpmf\nseed: 3\ndata: {format: ratings, path: " << f.dir << "/ratings.dat, fold: 1}\n"
                          << "model: {name: bpmf, dim: 4, tau: 4, sample_tau: true}\n"
                          << "prior: {groups: model, gibbs_every_steps: 20}\n"
                          << "sampler: {name: sghmc, lr: 1.0e-4, alpha: 0.1}\n"
                          << "train: {steps: 100, batch_size: 100, burn_in_steps: 50, thin: 5, eval_every_steps: 50, "
                             "threads: 1, require_healthy: false}\n"  // 100 steps: an equivalence, not a fit
                          << "distributed: {mode: data, timeout_s: 30}\n";
  const std::string one = f.dir + "/one", two = f.dir + "/two";
  ASSERT_EQ(train_ranks(f, one, 1, {}), std::vector<int>({0})) << stderr_of(one);
  ASSERT_EQ(train_ranks(f, two, 2, {}), std::vector<int>({0, 0})) << stderr_of(two) << stderr_of(two, 1);
  auto a = read_tensor_dict(one + "/final.pt"), b = read_tensor_dict(two + "/final.pt");
  ASSERT_GT(a.count("U"), 0u);
  for (const auto& [k, t] : a)
    if (t.is_floating_point())
      EXPECT_TRUE(torch::allclose(t, b.at(k), 1e-5, 1e-6)) << k << " max |Δ| " << (t - b.at(k)).abs().max().item<double>();
  EXPECT_NEAR(summary_of(one)["test_rmse"].get<double>(), summary_of(two)["test_rmse"].get<double>(), 1e-6);
}

// (b) distributed.mode: chains: rank 0 runs the single-process chain (seed 5); rank 0's summary
// reports the predictive averaged over both ranks' samples (what `sgmcmc predict` computes from the
// samples of both ranks) and R̂ / ESS over both ranks' traces.
TEST(DistributedRun, ChainsModeAveragesEveryRanksChains) {
  SKIP_WITHOUT_GLOO();
  Fixture f = make_fixture("dist_chains");
  const std::vector<std::string> set = {"--set", "output.save_samples=true"};
  const std::string one = f.dir + "/one", two = f.dir + "/two";
  ASSERT_EQ(train_ranks(f, one, 1, set), std::vector<int>({0})) << stderr_of(one);
  ASSERT_EQ(train_ranks(f, two, 2, set), std::vector<int>({0, 0})) << stderr_of(two) << stderr_of(two, 1);
  auto sa = summary_of(one), sb = summary_of(two);
  EXPECT_EQ(sb["world_size"].get<double>(), 2);
  EXPECT_EQ(sb["chains_all_ranks"].get<double>(), 2);
  EXPECT_EQ(sb["distributed_mode"], "chains");
  // Rank 0's own chain is the single-process chain.
  EXPECT_DOUBLE_EQ(sa["sample_test_nll"].get<double>(), sb["sample_test_nll"].get<double>());
  auto fa = read_tensor_dict(one + "/final.pt"), fb = read_tensor_dict(two + "/final.pt");
  EXPECT_TRUE(torch::equal(fa.at("fc1.weight"), fb.at("fc1.weight")));
  EXPECT_FALSE(torch::equal(fb.at("fc1.weight"), read_tensor_dict(two + "/final.rank-1.pt").at("fc1.weight")));
  // The averaged predictive covers both ranks: predict over both ranks' samples gives the same numbers.
  EXPECT_NE(sa["test_nll"].get<double>(), sb["test_nll"].get<double>());
  std::vector<pid_t> p = {spawn_with_env({"predict", two, "-q", "--out", two + "/predict.json"}, {}, two + ".predict")};
  ASSERT_EQ(wait_all(p), std::vector<int>({0})) << test_util::read_text(two + ".predict.err");
  auto pj = nlohmann::json::parse(test_util::read_text(two + "/predict.json"));
  EXPECT_EQ(pj["samples"].get<double>(), 2 * sb["samples"].get<double>());
  for (const char* k : {"test_nll", "test_error", "val_nll"})
    EXPECT_NEAR(pj[k].get<double>(), sb[k].get<double>(), 1e-6) << k;
  // R̂ over both ranks' traces, side by side ([S, 2]).
  auto trace = [](const std::string& file) {
    torch::serialize::InputArchive ar;
    ar.load_from(file);
    torch::Tensor t;
    ar.read("trace_ll", t, true);
    return t;
  };
  auto ll = torch::cat({trace(two + "/checkpoint.rank-0.pt"), trace(two + "/checkpoint.rank-1.pt")}, 1);
  ASSERT_EQ(ll.size(1), 2);
  EXPECT_NEAR(sb["rhat_test_loglik"].get<double>(), split_rhat(ll), 1e-9);
  EXPECT_NEAR(sb["ess_test_loglik"].get<double>(), effective_sample_size(ll), 1e-6);
}

// (c) A world size other than the checkpoint's is refused, naming both (the resume itself:
// DistributedFaults below).
// Ranks started with different configs (here rank 1 with another step size) are refused before any
// step, by every rank, with one line naming the first key that differs.
TEST(DistributedRun, RanksWithDifferentConfigsAreRefused) {
  SKIP_WITHOUT_GLOO();
  Fixture f = make_fixture("dist_mismatch");
  const std::string out = f.dir + "/run", store = f.dir + "/store-mismatch";
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> args = {"train", f.config, "--out", out, "-q", "--set", "distributed.init=file://" + store};
    if (r == 1) args.insert(args.end(), {"--set", "sampler.lr=2.0e-4"});
    pids.push_back(spawn_with_env(args, {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}}, out + ".rank" + std::to_string(r)));
  }
  const auto status = wait_all(pids);
  EXPECT_EQ(status, std::vector<int>({2, 2})) << stderr_of(out) << stderr_of(out, 1);
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(stderr_of(out, r).find("rank 1's config differs from rank 0's at sampler.lr"), std::string::npos)
        << stderr_of(out, r);
  EXPECT_FALSE(fs::exists(out + "/metrics.csv"));
}

// Rank 0 whose MASTER_PORT another program holds (as a second rank 0 of the same launch would):
// one line naming the port, exit 1 at once (not after the timeout), nothing written.
TEST(DistributedRun, APortInUseIsOneLineNamingIt) {
  SKIP_WITHOUT_GLOO();
  Fixture f = make_fixture("dist_port");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  const std::string out = f.dir + "/run";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = spawn_with_env({"train", f.config, "--out", out, "-q"},
                                   {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}},
                                   out + ".rank0");
  const auto status = wait_all({pid});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  EXPECT_EQ(status, std::vector<int>({1})) << stderr_of(out);
  const std::string err = stderr_of(out);
  EXPECT_NE(err.find("MASTER_PORT " + port + " on 127.0.0.1 is in use"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_LT(seconds, 20.0) << "the fixture's distributed.timeout_s is 30";
  EXPECT_FALSE(fs::exists(out + "/metrics.csv"));
}

TEST(DistributedRun, ResumeNeedsTheSameWorldSize) {
  const std::string dir = test_util::temp_dir("dist_world");
  auto refusal = [&](int world) {
    try {
      check_resume_world_size(dir, world);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::ofstream(dir + "/checkpoint.pt") << "x";
  EXPECT_EQ(refusal(1), "");
  EXPECT_NE(refusal(2).find("written by 1 process(es) and this run has world size 2"), std::string::npos) << refusal(2);
  fs::remove(dir + "/checkpoint.pt");
  for (const char* f : {"checkpoint.rank-0.pt", "checkpoint.rank-0.prev.pt", "checkpoint.rank-1.prev.pt",
                        "checkpoint.rank-2.pt.tmp"})
    std::ofstream(dir + "/" + f) << "x";
  EXPECT_EQ(refusal(2), "");  // rank 1 lost its latest checkpoint before it was replaced: still 2 ranks
  EXPECT_NE(refusal(1).find("written by 2 process(es) and this run has world size 1"), std::string::npos) << refusal(1);
  EXPECT_NE(refusal(3).find("world size 3"), std::string::npos);
}

// (d) Without WORLD_SIZE (or with WORLD_SIZE=1) nothing changes: the same files, the same numbers.
TEST(DistributedRun, WorldSizeOneChangesNothing) {
  SKIP_WITHOUT_C10D();
  Fixture f = make_fixture("dist_none");
  const std::string plain = f.dir + "/plain", one = f.dir + "/one";
  std::vector<pid_t> p = {spawn_with_env({"train", f.config, "--out", plain, "-q"}, {}, plain + ".rank0"),
                          spawn_with_env({"train", f.config, "--out", one, "-q"}, {{"WORLD_SIZE", "1"}, {"RANK", "0"}},
                                         one + ".rank0")};
  ASSERT_EQ(wait_all(p), std::vector<int>({0, 0})) << stderr_of(plain) << stderr_of(one);
  for (const auto& d : {plain, one}) {
    EXPECT_TRUE(fs::exists(d + "/checkpoint.pt"));
    EXPECT_FALSE(fs::exists(d + "/checkpoint.rank-0.pt"));
    EXPECT_FALSE(summary_of(d).contains("world_size"));
  }
  EXPECT_EQ(summary_of(plain)["test_nll"], summary_of(one)["test_nll"]);
  auto a = read_tensor_dict(plain + "/final.pt"), b = read_tensor_dict(one + "/final.pt");
  EXPECT_TRUE(torch::equal(a.at("fc1.weight"), b.at("fc1.weight")));
}

// `sgmcmc train --nproc 2` starts both ranks itself (TCPStore on 127.0.0.1, a free port).
TEST(DistributedRun, NprocLaunchesLocalRanks) {
  SKIP_WITHOUT_GLOO();
  Fixture f = make_fixture("dist_nproc");
  const std::string out = f.dir + "/run";
  std::vector<pid_t> p = {spawn_with_env({"train", f.config, "--out", out, "--nproc", "2"}, {}, out + ".rank0")};
  ASSERT_EQ(wait_all(p), std::vector<int>({0})) << stderr_of(out);
  EXPECT_EQ(summary_of(out)["world_size"].get<double>(), 2);
  EXPECT_TRUE(fs::exists(out + "/checkpoint.rank-1.pt"));
  // Printed once (rank 0), not once per rank.
  const std::string printed = test_util::read_text(out + ".rank0.out");
  EXPECT_EQ(printed.find("run directory:"), printed.rfind("run directory:")) << printed;
  // A failing rank fails the launch: bad input on every rank is exit status 2.
  p = {spawn_with_env({"train", f.config, "--out", out, "--nproc", "2"}, {}, out + ".again")};
  EXPECT_EQ(wait_all(p), std::vector<int>({2}));
  EXPECT_NE(test_util::read_text(out + ".again.err").find("run directory exists"), std::string::npos);
}

namespace {

// Starts `world` ranks of a long data-mode run (120 steps, an evaluation and checkpoint every 20)
// into `out`; returns their pids once rank 0 has written 3 metrics rows.
std::vector<pid_t> start_long_run(Fixture& f, const std::string& out, const std::vector<std::string>& extra) {
  const std::string store = f.dir + "/store-" + std::to_string(f.runs++);
  std::vector<std::string> args = {"train", f.config, "--out", out, "-q", "--set", "distributed.init=file://" + store,
                                   "--set", "distributed.mode=data", "--set", "train.steps=120"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r)
    pids.push_back(spawn_with_env(args, {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}}, out + ".rank" + std::to_string(r)));
  return pids;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// A rank killed mid-run: rank 0 stops at once with one line naming it, the checkpoints are whole,
// and resuming both ranks reproduces the uninterrupted run; so does a run stopped by --stop-after,
// which one process may not resume.
TEST(DistributedFaults, KilledRankStopsTheOthersAndResumeReproduces) {
  SKIP_WITHOUT_GLOO();
  Fixture f = make_fixture("dist_kill");
  const std::string whole = f.dir + "/whole", cut = f.dir + "/cut", part = f.dir + "/part";
  auto pids = start_long_run(f, whole, {});
  ASSERT_EQ(wait_all(pids), std::vector<int>({0, 0})) << stderr_of(whole);
  pids = start_long_run(f, cut, {});
  ASSERT_TRUE(test_util::wait_for_lines(pids[0], cut + "/metrics.csv", 3)) << stderr_of(cut);
  // Rank 0 has evaluated step 40, so rank 1 has written its step-20 checkpoint and is within a step
  // of rank 0 (the gradient all-reduce keeps them in step): 80 steps remain.
  kill(pids[1], SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  const auto status = wait_all(pids);
  EXPECT_LT(seconds_since(t0), 10.0);  // a closed connection is noticed at the next collective
  EXPECT_EQ(status[0], 1);
  EXPECT_EQ(status[1], 128 + SIGKILL);
  const std::string err = stderr_of(cut);
  EXPECT_NE(err.find("distributed: rank 0: lost rank 1 (pid " + std::to_string(pids[1])), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(train_ranks(f, cut, 2, {}, /*resume=*/true), std::vector<int>({0, 0})) << stderr_of(cut) << stderr_of(cut, 1);

  pids = start_long_run(f, part, {"--stop-after", "60"});
  ASSERT_EQ(wait_all(pids), std::vector<int>({0, 0})) << stderr_of(part);
  ASSERT_EQ(train_ranks(f, part, 1, {}, /*resume=*/true), std::vector<int>({2}));
  EXPECT_NE(stderr_of(part).find("written by 2 process(es) and this run has world size 1"), std::string::npos)
      << stderr_of(part);
  ASSERT_EQ(train_ranks(f, part, 2, {}, /*resume=*/true), std::vector<int>({0, 0})) << stderr_of(part);

  auto a = read_tensor_dict(whole + "/final.pt");
  for (const auto& run : {cut, part}) {
    auto b = read_tensor_dict(run + "/final.pt");
    for (const char* k : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"})
      EXPECT_TRUE(torch::equal(a.at(k), b.at(k))) << run << " " << k;
    EXPECT_EQ(test_util::count_lines(whole + "/metrics.csv"), test_util::count_lines(run + "/metrics.csv")) << run;
  }
}

// A rank that stops answering (SIGSTOP) makes the others fail after distributed.timeout_s.
TEST(DistributedFaults, HungRankTimesOut) {
  SKIP_WITHOUT_GLOO();
  Fixture f = make_fixture("dist_hang");
  const std::string out = f.dir + "/run";
  auto pids = start_long_run(f, out, {"--set", "distributed.timeout_s=2"});
  ASSERT_TRUE(test_util::wait_for_lines(pids[0], out + "/metrics.csv", 3)) << stderr_of(out);
  kill(pids[1], SIGSTOP);
  const auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  bool exited = false;
  while (!(exited = waitpid(pids[0], &st, WNOHANG) == pids[0]) && seconds_since(t0) < 60)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double waited = seconds_since(t0);
  kill(pids[1], SIGKILL);
  if (!exited) kill(pids[0], SIGKILL);
  wait_all(exited ? std::vector<pid_t>{pids[1]} : pids);
  ASSERT_TRUE(exited) << "rank 0 still running 60 s after rank 1 stopped";
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << stderr_of(out);
  EXPECT_GT(waited, 1.5);
  EXPECT_LT(waited, 20.0);
  EXPECT_NE(stderr_of(out).find("lost rank 1"), std::string::npos) << stderr_of(out);
  EXPECT_NE(stderr_of(out).find("distributed.timeout_s = 2 s"), std::string::npos) << stderr_of(out);
}
