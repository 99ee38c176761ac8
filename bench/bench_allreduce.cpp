// The cost of the data-parallel gradient all-reduce (DistributedRun::reduce_gradient's collective)
// for gradients of a given size: start W copies with the launch contract, e.g.
//   bench/allreduce.sh 2        (or by hand: RANK=r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=p)
//   bench/allreduce.sh 2 50 cuda   (tensors on cuda:LOCAL_RANK: NCCL in CUDA builds, else Gloo via the host)
// Rank 0 prints, per size: float32 elements, MB, microseconds per all-reduce (median of R), GB/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "distributed/process_group.h"

int main(int argc, char** argv) {
  using namespace sgmcmc;
  const LaunchEnv env = read_launch_env(process_env());
  DistributedOptions opts;
  const std::string device_arg = argc > 2 ? argv[2] : "cpu";
  const std::string device = device_arg == "cuda" ? "cuda:" + std::to_string(env.local_rank) : device_arg;
  auto comm = join_process_group(env, opts, device);
  const auto on = torch::TensorOptions().device(torch::Device(device));
  // 79,510: the MNIST BNN (784-100-10); 300,000: BPMF d=30 on MovieLens-small's 610 + 9,724 rows
  // (≈ 310k); 1M, 10M: a mid-size CNN and a 10M-parameter one.
  std::vector<int64_t> sizes = {1, 79510, 310020, 1000000, 10000000};
  const int reps = argc > 1 ? std::atoi(argv[1]) : 50;
  if (comm->rank() == 0) std::printf("world_size %d, tensors on %s\n%12s %10s %12s %8s\n", comm->world_size(), device.c_str(), "elements", "MB", "us", "GB/s");
  for (int64_t n : sizes) {
    std::vector<torch::Tensor> t = {torch::ones({n}, on), torch::ones({1}, on)};  // the gradient and the batch nll
    for (int i = 0; i < 3; ++i) comm->all_reduce_sum(t);
    std::vector<double> us;
    for (int i = 0; i < reps; ++i) {
      comm->barrier();
      const auto t0 = std::chrono::steady_clock::now();
      comm->all_reduce_sum(t);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    const double med = us[us.size() / 2], mb = 4.0 * (n + 1) / 1e6;
    if (comm->rank() == 0) std::printf("%12lld %10.3f %12.1f %8.2f\n", static_cast<long long>(n), mb, med, mb / 1e3 / (med / 1e6));
  }
  // Back to back, no barrier between: what a loop with one small collective per step sees.
  for (const bool gather : {false, true}) {
    auto x = torch::zeros({1}, on.dtype(torch::kInt64));
    std::vector<torch::Tensor> v = {x};
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps * 10; ++i) {
      if (gather) comm->all_gather(x);
      else comm->all_reduce_sum(v);
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / (reps * 10);
    if (comm->rank() == 0) std::printf("back-to-back %s of one int64: %.1f us\n", gather ? "all-gather" : "all-reduce", us);
  }
  return 0;
}
