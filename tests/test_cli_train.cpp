#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tiny_idx.h"

namespace fs = std::filesystem;

namespace {
std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
// Runs the sgmcmc binary with `args`; returns the exit status, stderr into *err.
int run_cli(const std::string& args, const std::string& tmp, std::string* err = nullptr, const std::string& env = "") {
  std::string cmd = env + std::string(SGMCMC_BINARY) + " " + args + " >" + tmp + "/stdout.txt 2>" + tmp + "/stderr.txt";
  int rc = std::system(cmd.c_str());
  if (err) *err = slurp(tmp + "/stderr.txt");
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
// A tiny IDX data set in dir/data and a config for it, dir/tiny.yaml (4 epochs of SGLD).
void write_tiny_run(const std::string& dir, bool gzip) {
  sgmcmc::test_util::write_tiny_idx_dir(dir + "/data", 300, 100, 4, gzip);
  std::ofstream(dir + "/tiny.yaml") << "seed: 2\n"
                                       "data: {dir: " << dir << "/data, val_size: 50}\n"
                                       "model: {name: mlp, hidden: [10], activation: relu}\n"
                                       "sampler: {name: sgld, lr: 1.0e-3}\n"
                                       "train: {epochs: 4, burn_in: 1, batch_size: 50}\n";
}
}  // namespace

TEST(CliTrain, TrainsOnTinyIdxDirectory) {
  auto dir = sgmcmc::test_util::temp_dir("cli_train");
  write_tiny_run(dir, /*gzip=*/true);
  std::string err;
  ASSERT_EQ(run_cli("train " + dir + "/tiny.yaml --out " + dir + "/run --set train.epochs=3 --quiet", dir, &err), 0) << err;
  auto summary = slurp(dir + "/run/summary.json");
  for (const char* k : {"\"test_error\"", "\"test_nll\"", "\"val_error\"", "\"samples\": 2", "\"steps\": 15",
                        "\"wall_seconds\"", "\"steps_per_second\""})
    EXPECT_NE(summary.find(k), std::string::npos) << k << "\n" << summary;
  EXPECT_NE(slurp(dir + "/run/config.yaml").find("epochs: 3"), std::string::npos);
  // The launcher `sgmcmc` set short OpenMP and OpenBLAS spins before it executed sgmcmc-main
  // (src/launcher/main.cpp), unless the user set them; summary.json records what the run had.
  EXPECT_NE(summary.find("GOMP_SPINCOUNT=3000"), std::string::npos) << summary;
  EXPECT_NE(summary.find("OPENBLAS_THREAD_TIMEOUT=8"), std::string::npos) << summary;
  ASSERT_EQ(run_cli("train " + dir + "/tiny.yaml --out " + dir + "/run_env --set train.epochs=2 --quiet", dir, &err,
                    "OPENBLAS_THREAD_TIMEOUT=5 "), 0) << err;
  const auto env_summary = slurp(dir + "/run_env/summary.json");
  EXPECT_NE(env_summary.find("OPENBLAS_THREAD_TIMEOUT=5"), std::string::npos) << env_summary;
  EXPECT_NE(env_summary.find("GOMP_SPINCOUNT=3000"), std::string::npos) << env_summary;
  // The same directory again: refused without --overwrite, accepted with it.
  EXPECT_EQ(run_cli("train " + dir + "/tiny.yaml --out " + dir + "/run --quiet", dir, &err), 2);
  EXPECT_NE(err.find("--overwrite"), std::string::npos) << err;
  EXPECT_EQ(run_cli("train " + dir + "/tiny.yaml --out " + dir + "/run --quiet --overwrite", dir, &err), 0) << err;
  // Stop early, resume, predict.
  EXPECT_EQ(run_cli("train " + dir + "/tiny.yaml --out " + dir + "/run2 --quiet --stop-after 7", dir, &err), 0) << err;
  EXPECT_NE(slurp(dir + "/run2/summary.json").find("\"finished\": false"), std::string::npos);
  EXPECT_EQ(run_cli("train --resume " + dir + "/run2 --quiet", dir, &err), 0) << err;
  EXPECT_NE(slurp(dir + "/run2/summary.json").find("\"steps\": 20"), std::string::npos);
  EXPECT_EQ(run_cli("predict " + dir + "/run2 --quiet", dir, &err), 0) << err;
  EXPECT_NE(slurp(dir + "/run2/predict.json").find("\"test_error\""), std::string::npos);
}

TEST(CliTrain, ErrorsAreOneLineAndNonZero) {
  auto dir = sgmcmc::test_util::temp_dir("cli_err");
  std::ofstream(dir + "/c.yaml") << "data: {dir: " << dir << "}\nsampler: {name: sgld}\n";
  std::string err;
  EXPECT_NE(run_cli("train " + dir + "/c.yaml --bogus", dir, &err), 0);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("bogus"), std::string::npos) << err;
  EXPECT_EQ(run_cli("train " + dir + "/c.yaml --set train.epoch=3", dir, &err), 2);
  EXPECT_NE(err.find("train.epoch: unknown key (did you mean 'epochs'?)"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // No IDX files in the directory: the missing file is named.
  EXPECT_EQ(run_cli("train " + dir + "/c.yaml --out " + dir + "/r", dir, &err), 2);
  EXPECT_NE(err.find(dir + "/train-"), std::string::npos) << err;
  EXPECT_NE(err.find("no such file"), std::string::npos) << err;
  EXPECT_NE(run_cli("frobnicate", dir, &err), 0);
  EXPECT_EQ(run_cli("list", dir, &err), 0);
  EXPECT_NE(slurp(dir + "/stdout.txt").find("sgld"), std::string::npos);
  for (const char* c : {"list", "train", "predict", "sweep"}) EXPECT_EQ(run_cli(std::string(c) + " --help", dir), 0) << c;
}

// The program proper run directly sets the same spins by re-executing itself (runtime/cpu.cpp); the
// launcher without sgmcmc-main beside it fails with one line naming the path, status 127.
TEST(CliTrain, LauncherAndProgramProper) {
  auto dir = sgmcmc::test_util::temp_dir("cli_launcher");
  write_tiny_run(dir, /*gzip=*/false);
  const std::string main_binary = fs::path(SGMCMC_BINARY).parent_path() / "sgmcmc-main";
  ASSERT_TRUE(fs::exists(main_binary));
  const std::string cmd = "env -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT -u OMP_WAIT_POLICY " + main_binary +
                          " train " + dir + "/tiny.yaml --out " + dir + "/run --quiet 2>" + dir + "/err.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir + "/err.txt");
  const auto summary = slurp(dir + "/run/summary.json");
  EXPECT_NE(summary.find("GOMP_SPINCOUNT=3000"), std::string::npos) << summary;
  EXPECT_NE(summary.find("OPENBLAS_THREAD_TIMEOUT=8"), std::string::npos) << summary;
  fs::create_directories(dir + "/alone");
  fs::copy_file(SGMCMC_BINARY, dir + "/alone/sgmcmc");
  const int rc = std::system((dir + "/alone/sgmcmc list >/dev/null 2>" + dir + "/alone.txt").c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 127);
  const auto err = slurp(dir + "/alone.txt");
  EXPECT_EQ(err, "sgmcmc: cannot execute " + dir + "/alone/sgmcmc-main: No such file or directory\n");
}
