// CPU runtime settings: the default thread count of a run (train.threads: 0).
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <string>

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
