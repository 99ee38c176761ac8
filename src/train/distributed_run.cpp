#include "train/distributed_run.h"

#include <cstring>

#include "train/checkpoint_check.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <regex>
#include <set>
#include <stdexcept>

#include "distributed/process_group.h"

namespace fs = std::filesystem;

namespace sgmcmc {

DistributedRun::DistributedRun(CommunicatorPtr comm, DistributedOptions options)
    : comm_(std::move(comm)), options_(std::move(options)) {}

std::string DistributedRun::device_for(const std::string& device) const {
  return active() && device == "cuda" ? "cuda:" + std::to_string(comm_->local_rank()) : device;
}

torch::Tensor DistributedRun::shard(const torch::Tensor& idx) const {
  if (!data_parallel()) return idx;
  const int64_t share = idx.size(0) / world_size();
  return idx.narrow(0, rank() * share, share);
}

void DistributedRun::reduce_gradient(const std::vector<torch::Tensor>& params, torch::Tensor& batch_nll) {
  if (!data_parallel()) return;
  std::vector<torch::Tensor> parts;
  for (const auto& p : params)
    if (p.grad().defined()) parts.push_back(p.grad());
  parts.push_back(batch_nll);
  comm_->all_reduce_sum(parts);
}

void DistributedRun::check_in_sync(const std::vector<torch::Tensor>& params, int64_t step) {
  if (!data_parallel()) return;
  torch::NoGradGuard no_grad;
  // Σθ, Σθ² and Σ iθ over the parameters in order, in float64: equal bits on equal parameters.
  auto sum = torch::zeros({3}, torch::kFloat64);
  int64_t offset = 0;
  for (const auto& p : params) {
    auto x = p.detach().reshape({-1}).to(torch::kCPU, torch::kFloat64);
    auto i = torch::arange(offset, offset + x.numel(), torch::kFloat64);
    sum += torch::stack({x.sum(), x.square().sum(), (x * i).sum()});
    offset += x.numel();
  }
  const auto all = comm_->all_gather(sum);
  std::string differ;
  for (int r = 1; r < world_size(); ++r)
    if (!torch::equal(all[r], all[0])) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (!differ.empty())
    throw std::runtime_error("distributed: the parameters of rank(s) " + differ + " differ from rank 0's at step " +
                             std::to_string(step) + " (distributed.mode: data keeps them equal; Σθ " +
                             std::to_string(all[0][0].item<double>()) + " on rank 0)");
}

int DistributedRun::agree_on_signal(int signal, int64_t step) {
  if (!active()) return signal;
  if (step % kSignalEvery != 0) return 0;  // the flag stays pending until the next agreement
  const auto all = comm_->all_gather(torch::tensor({static_cast<int64_t>(signal)}, torch::kInt64));
  for (const auto& s : all)
    if (s.item<int64_t>() != 0) return static_cast<int>(s.item<int64_t>());
  return 0;
}

bool DistributedRun::agree_any(bool flag) {
  if (!active()) return flag;
  const auto all = comm_->all_gather(torch::tensor({static_cast<int64_t>(flag)}, torch::kInt64));
  for (const auto& s : all)
    if (s.item<int64_t>() != 0) return true;
  return false;
}

namespace {

// The step a checkpoint file is at (its "counters" entry, train/checkpoint.cpp), -1 when absent or
// unreadable.
int64_t checkpoint_step(const std::string& file) {
  if (!fs::exists(file)) return -1;
  try {
    torch::serialize::InputArchive ar;
    ar.load_from(file);
    torch::Tensor counters;
    ar.read("counters", counters, true);
    return counters[0].item<int64_t>();
  } catch (const c10::Error&) {
    return -1;
  }
}

}  // namespace

std::string DistributedRun::agreed_checkpoint(const std::string& latest, const std::string& previous) {
  if (!active()) return latest;
  const int64_t mine[2] = {checkpoint_step(latest), checkpoint_step(previous)};
  const auto all = comm_->all_gather(torch::tensor({mine[0], mine[1]}, torch::kInt64));
  int64_t target = INT64_MAX;
  for (const auto& a : all) target = std::min(target, std::max(a[0].item<int64_t>(), a[1].item<int64_t>()));
  if (target >= 0 && mine[0] == target) return latest;
  if (target >= 0 && mine[1] == target) return previous;
  throw std::invalid_argument(latest + ": no checkpoint of step " + std::to_string(target) +
                              " (the latest step every rank has) on rank " + std::to_string(rank()));
}

void DistributedRun::check_same_step(int64_t step, const std::string& file) {
  if (!active()) return;
  const auto all = comm_->all_gather(torch::tensor({step}, torch::kInt64));
  std::string steps;
  bool same = true;
  for (int r = 0; r < world_size(); ++r) {
    same = same && all[r].item<int64_t>() == step;
    steps += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + ": " + std::to_string(all[r].item<int64_t>());
  }
  if (!same) throw std::invalid_argument(file + ": the ranks' checkpoints are at different steps (" + steps + ")");
}

DistributedRun join_distributed(const ExperimentConfig& config, const std::string& resume_dir) {
  const DistributedOptions& o = config.distributed;
  LaunchEnv env;
  try {
    env = read_launch_env(process_env(), /*needs_master=*/o.file_store_path().empty());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("distributed launch: ") + e.what());
  }
  check_distributed_config(config, env.world_size);
  if (!resume_dir.empty()) check_resume_world_size(resume_dir, env.world_size);
  DistributedRun run(join_process_group(env, o, config.device), o);
  check_same_config(run, config);
  return run;
}

// Every rank's config (to_yaml) gathered on every rank and compared with rank 0's: a rank started
// with another config (or other --set values) stops every rank with the same one-line error.
void check_same_config(DistributedRun& run, const ExperimentConfig& config) {
  if (!run.active()) return;
  const std::string mine = to_yaml(config);
  const auto lengths = run.comm().all_gather(torch::tensor({static_cast<int64_t>(mine.size())}, torch::kInt64));
  int64_t longest = 0;
  for (const auto& l : lengths) longest = std::max(longest, l.item<int64_t>());
  torch::Tensor bytes = torch::zeros({longest}, torch::kUInt8);
  std::memcpy(bytes.data_ptr(), mine.data(), mine.size());
  const auto all = run.comm().all_gather(bytes);
  auto text = [&](size_t r) {
    return std::string(static_cast<const char*>(all[r].data_ptr()), static_cast<size_t>(lengths[r].item<int64_t>()));
  };
  const std::string root = text(0);
  for (size_t r = 1; r < all.size(); ++r) {
    const std::string other = text(r);
    if (other == root) continue;
    std::string what;
    const std::string key = first_config_difference(root, other, &what);
    throw std::invalid_argument("distributed launch: rank " + std::to_string(r) + "'s config differs from rank 0's at " +
                                (key.empty() ? std::string("(formatting)") : key) + " (" + what +
                                "); start every rank with the same config and --set values");
  }
}

uint64_t rank_seed(uint64_t seed, int rank) {
  if (rank == 0) return seed;
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(rank);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return (z ^ (z >> 31)) >> 1;  // kept below 2^63: configs and summaries hold seeds as int64
}

void check_distributed_config(const ExperimentConfig& c, int world_size) {
  if (world_size <= 1 || !c.distributed.data_parallel()) return;
  const std::string& src = c.source;
  const std::string w = std::to_string(world_size);
  if (c.chains > 1)
    throw std::invalid_argument(src + ": chains: distributed.mode: data runs one chain over " + w +
                                " ranks (use distributed.mode: chains for chains: " + std::to_string(c.chains) + ")");
  if (c.train.batch_size < 0)
    throw std::invalid_argument(src + ": train.batch_size: distributed.mode: data needs an explicit global minibatch "
                                "(a multiple of the " + w + " ranks), not auto");
  if (c.train.batch_size % world_size != 0)
    throw std::invalid_argument(src + ": train.batch_size: the global minibatch (" + std::to_string(c.train.batch_size) +
                                ") must split evenly over the " + w + " ranks of distributed.mode: data");
  if (c.train.graph)
    throw std::invalid_argument(src + ": train.graph: a whole-step graph cannot hold the all-reduce of "
                                      "distributed.mode: data (use train.graph: false)");
}

void check_resume_world_size(const std::string& run_dir, int world_size) {
  // The ranks with a checkpoint: checkpoint.rank-R.pt or checkpoint.rank-R.prev.pt.
  static const std::regex rank_file(R"(checkpoint\.rank-([0-9]+)(\.prev)?\.pt)");
  std::set<std::string> ranks;
  std::smatch m;
  if (fs::is_directory(run_dir))
    for (const auto& f : fs::directory_iterator(run_dir)) {
      const std::string name = f.path().filename().string();
      if (std::regex_match(name, m, rank_file)) ranks.insert(m[1].str());
    }
  const int rank_files = static_cast<int>(ranks.size());
  const bool single = fs::exists(fs::path(run_dir) / "checkpoint.pt");
  const int written = rank_files > 0 ? rank_files : single ? 1 : 0;
  if (written == 0 || written == world_size) return;
  throw std::invalid_argument(run_dir + ": the checkpoint was written by " + std::to_string(written) +
                              " process(es) and this run has world size " + std::to_string(world_size) +
                              " (resume with the same number of processes)");
}

}  // namespace sgmcmc
