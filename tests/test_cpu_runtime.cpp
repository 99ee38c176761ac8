// CPU runtime settings: the default thread count of a run (train.threads: 0).
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <string>

#include <torch/torch.h>

#include "runtime/cpu.h"

using namespace sgmcmc;

namespace {
// Sets (or unsets, for nullptr) an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }
  const char* name_;
  std::string old_;
  bool had_ = false;
};
}  // namespace

TEST(CpuRuntime, AffinityCpusCountsTheMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(affinity_cpus(), CPU_COUNT(&set));
  EXPECT_GE(affinity_cpus(), 1);
}

TEST(CpuRuntime, ThreadsZeroMeansTheAffinityMaskUnlessOmpNumThreadsIsSet) {
  {
    ScopedEnv omp("OMP_NUM_THREADS", nullptr);
    EXPECT_EQ(resolve_cpu_threads(0), affinity_cpus());
    EXPECT_EQ(resolve_cpu_threads(3), 3);
  }
  {
    ScopedEnv omp("OMP_NUM_THREADS", "1");
    EXPECT_EQ(resolve_cpu_threads(0), 0);  // the user's (or launcher's) setting stands
    EXPECT_EQ(resolve_cpu_threads(5), 5);  // an explicit train.threads wins
  }
}

// Denormals flushed on the calling thread and on every intra-op pool thread: a float32 tensor of
// denormals (1e-39, below FLT_MIN ≈ 1.18e-38) times 1 is all zeros with the flush on (DAZ reads the
// operand as 0) and unchanged with it off. Each of the pool's threads multiplies a chunk of the 2^20
// elements (ATen splits an elementwise op this size across the pool), so a thread the setting missed
// leaves its chunk nonzero.
TEST(CpuRuntime, FlushDenormalReachesEveryPoolThread) {
  torch::set_num_threads(2);
  const auto denormal = torch::full({1 << 20}, 1e-39f);
  ASSERT_GT(denormal[0].item<float>(), 0.0f);
  if (!set_flush_denormal(true)) GTEST_SKIP() << "no flush-to-zero mode on this CPU";
  EXPECT_EQ((denormal * 1.0f).count_nonzero().item<int64_t>(), 0);
  EXPECT_TRUE(set_flush_denormal(false));
  EXPECT_EQ((denormal * 1.0f).count_nonzero().item<int64_t>(), 1 << 20);
  torch::set_num_threads(1);
}
