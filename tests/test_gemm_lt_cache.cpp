// kernels/cuda_mlp/gemm_lt_cache.h: cublaslt's measured choices kept in a file between processes. Host code, so
// checked here on every build; tests/test_mlp_fused.cpp checks on a GPU that a remembered choice is
// taken (inside a capture too) and gives the measuring call's bits.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "core/remove_tree.h"
#include "kernels/cuda_mlp/gemm_lt_cache.h"

namespace {

using sgmcmc::kernels::GemmLtCache;
using sgmcmc::kernels::GemmLtRecord;

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("sgmcmc_gemm_lt_cache_" + name + "_" + std::to_string(::getpid()));
  sgmcmc::remove_tree(dir);
  return dir.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

GemmLtRecord record(uint64_t first) {
  // the words as cuBLASLt fills them use the whole 64 bits
  return GemmLtRecord{{first, 0, UINT64_MAX, 1, 2, 3, 4, 0x8000000000000001ull}, 4194304, "algo 20, tile 15, split-K 4", 21,
                      10.4, 11.3};
}

// An environment variable set for a scope and put back after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved_) ::setenv(name_, saved_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

}  // namespace

TEST(GemmLtCache, PathOfEachSetting) {
  using sgmcmc::kernels::gemm_lt_cache_path;
  EXPECT_EQ(gemm_lt_cache_path("off"), "");
  EXPECT_EQ(gemm_lt_cache_path("/data/choices.json"), "/data/choices.json");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg"), home("HOME", "/home/u");
    EXPECT_EQ(gemm_lt_cache_path("auto"), "/xdg/sgmcmc/gemm_lt.json");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr), home("HOME", "/home/u");
    EXPECT_EQ(gemm_lt_cache_path("auto"), "/home/u/.cache/sgmcmc/gemm_lt.json");
  }
  {  // relative values are not the convention's: ignored, as an unset one
    ScopedEnv xdg("XDG_CACHE_HOME", "rel"), home("HOME", nullptr);
    EXPECT_EQ(gemm_lt_cache_path("auto"), "");
  }
}

// What one process adds (its directory created), the next finds word for word; a key is never replaced.
TEST(GemmLtCache, KeepsTheFirstChoiceOfEachKey) {
  const auto dir = fresh_dir("keeps");
  const auto path = dir + "/sub/gemm_lt.json";
  {
    GemmLtCache cache(path);
    ASSERT_TRUE(cache.on());
    EXPECT_FALSE(cache.find("H100 | 500 100 784").has_value());
    cache.add("H100 | 500 100 784", record(7));
  }
  ASSERT_TRUE(std::filesystem::exists(path));
  {
    GemmLtCache cache(path);
    const auto r = cache.find("H100 | 500 100 784");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->algo, record(7).algo);
    EXPECT_EQ(r->workspace, 4194304u);
    EXPECT_EQ(r->kernel, "algo 20, tile 15, split-K 4");
    EXPECT_EQ(r->candidates, 21);
    EXPECT_DOUBLE_EQ(r->us, 10.4);
    EXPECT_DOUBLE_EQ(r->heuristic_us, 11.3);
    EXPECT_FALSE(cache.find("H100 | 100 784 500").has_value());
    cache.add("H100 | 500 100 784", record(8));  // measured again elsewhere: the first stays
    cache.add("H100 | 100 784 500", record(9));
  }
  GemmLtCache cache(path);
  EXPECT_EQ(cache.find("H100 | 500 100 784")->algo, record(7).algo);
  EXPECT_EQ(cache.find("H100 | 100 784 500")->algo, record(9).algo);
  sgmcmc::remove_tree(dir);
}

// The lock is held for the object's life (another process's look-up and measurement wait for it) and
// released after.
TEST(GemmLtCache, HoldsItsLockForItsLife) {
  const auto dir = fresh_dir("lock");
  const auto path = dir + "/gemm_lt.json";
  const auto probe = [&] {
    const int fd = ::open((path + ".lock").c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return free;
  };
  {
    GemmLtCache cache(path);
    ASSERT_TRUE(cache.on());
    EXPECT_FALSE(probe());
  }
  EXPECT_TRUE(probe());
  sgmcmc::remove_tree(dir);
}

// A file that is not such a cache is left as it is and the cache is off, with one line naming the file;
// so is a directory that cannot be created. An empty path is off without a word.
TEST(GemmLtCache, OffWithAWarningWhereItCannotBeUsed) {
  const auto dir = fresh_dir("bad");
  std::filesystem::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"not json", "not a gemm_lt choice cache"},
      {"[1, 2]", "not a JSON object"},
      {R"({"k": {"algo": [-1], "workspace": 0, "kernel": "", "candidates": 1, "us": 1, "heuristic_us": 1}})",
       "entry \"k\": \"algo\" is not a list of unsigned integers"},
      {R"({"k": {"algo": [1], "kernel": "", "candidates": 1, "us": 1, "heuristic_us": 1}})", "no \"workspace\""}};
  for (size_t i = 0; i < bad.size(); ++i) {
    const auto path = dir + "/c" + std::to_string(i) + ".json";
    std::ofstream(path) << bad[i].first;
    testing::internal::CaptureStderr();
    {
      GemmLtCache cache(path);
      EXPECT_FALSE(cache.on());
      cache.add("k", record(1));
    }
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(path + ": "), std::string::npos) << err;
    EXPECT_NE(err.find(bad[i].second), std::string::npos) << err;
    EXPECT_NE(err.find("kernels.cuda_gemm_cache is off"), std::string::npos) << err;
    EXPECT_EQ(read(path), bad[i].first);  // nothing of the user's overwritten
  }
  {  // its directory would be under a regular file
    std::ofstream(dir + "/plain") << "x";
    const auto path = dir + "/plain/gemm_lt.json";
    testing::internal::CaptureStderr();
    GemmLtCache cache(path);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(cache.on());
    EXPECT_NE(err.find(path + ": cannot create its directory"), std::string::npos) << err;
  }
  testing::internal::CaptureStderr();
  {
    GemmLtCache cache("");
    EXPECT_FALSE(cache.on());
    EXPECT_FALSE(cache.find("k").has_value());
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  sgmcmc::remove_tree(dir);
}
