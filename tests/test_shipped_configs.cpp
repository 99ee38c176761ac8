// The shipped configs run as they are: each configs/*.yaml for a few steps through the real binary,
// from the repository root (their data paths are relative to it), with the data cut down
// (data.train_limit / test_limit for IDX, one fold for ratings) and the schedule shortened
// (train.steps, burn-in 0, an evaluation every 2 steps). IDX configs read Fashion-MNIST
// (/usr/share/datasets/fashion-mnist); a config whose data is missing is skipped, by name.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "proc_util.h"
#include "tiny_idx.h"

namespace fs = std::filesystem;
using namespace sgmcmc::test_util;

namespace {

const char* kIdxDir = "/usr/share/datasets/fashion-mnist";

struct Job {
  std::string name;
  std::vector<std::string> args;
};

}  // namespace

TEST(ShippedConfigs, EachRunsAFewSteps) {
  const fs::path root = SGMCMC_SOURCE_DIR;
  const std::string tmp = temp_dir("shipped_configs");
  std::vector<Job> jobs;
  std::vector<std::string> skipped;
  for (const auto& entry : fs::directory_iterator(root / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = entry.path().stem().string();
    const YAML::Node cfg = YAML::LoadFile(entry.path().string());
    const YAML::Node data = cfg["data"];
    const std::string format = data && data["format"] ? data["format"].as<std::string>() : "idx";
    std::vector<std::string> sets = {"train.steps=4", "train.burn_in_steps=0", "train.eval_every_steps=2",
                                     "train.threads=1", "output.progress=false"};
    if (format == "idx") {
      if (!fs::exists(fs::path(kIdxDir) / "train-images-idx3-ubyte") &&
          !fs::exists(fs::path(kIdxDir) / "train-images-idx3-ubyte.gz")) {
        skipped.push_back(name);
        continue;
      }
      for (const char* s : {"data.train_limit=600", "data.test_limit=100", "data.val_size=100"}) sets.push_back(s);
      sets.push_back(std::string("data.dir=") + kIdxDir);
    } else {
      const std::string path = data["path"].as<std::string>();
      if (!fs::exists(root / path)) {
        skipped.push_back(name);
        continue;
      }
      if (format == "ratings") sets.push_back("data.fold=0");
    }
    Job j{name, {"train", entry.path().string(), "--out", tmp + "/" + name, "--quiet"}};
    for (const auto& s : sets) j.args.insert(j.args.end(), {"--set", s});
    jobs.push_back(j);
  }
  ASSERT_GE(jobs.size() + skipped.size(), 30u);
  for (const auto& s : skipped) std::cout << "[ skipped  ] " << s << " (data not here)\n";
  std::cout << std::flush;
  std::fflush(stdout);  // the children must not inherit (and write out) a buffered copy
  // Two at a time, from the repository root.
  std::map<pid_t, size_t> running;
  std::vector<int> status(jobs.size(), -1);
  size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && running.size() < 2) {
      const pid_t pid = fork();
      if (pid == 0) {
        if (chdir(root.c_str()) != 0) _exit(126);
        const std::string log = tmp + "/" + jobs[next].name;
        freopen((log + ".out").c_str(), "w", stdout);
        freopen((log + ".err").c_str(), "w", stderr);
        std::vector<char*> argv;
        std::string bin = SGMCMC_BINARY;
        argv.push_back(bin.data());
        for (auto& a : jobs[next].args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(bin.c_str(), argv.data());
        _exit(127);
      }
      running[pid] = next++;
    }
    int st = 0;
    const pid_t done = waitpid(-1, &st, 0);
    auto it = running.find(done);
    if (it == running.end()) continue;
    status[it->second] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    running.erase(it);
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    // 4: finished worse than the trivial predictor, expected after 4 steps
    EXPECT_TRUE(status[i] == 0 || status[i] == 4) << jobs[i].name << ": exit " << status[i] << ": "
                                                  << read_text(tmp + "/" + jobs[i].name + ".err");
    EXPECT_TRUE(fs::exists(tmp + "/" + jobs[i].name + "/summary.json")) << jobs[i].name;
  }
}
