#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Statistical tests run single-threaded so results do not depend on the core count: runs started
  // in-process (train.threads: 0) and the binaries the CLI tests start then keep one intra-op thread
  // (runtime/cpu.h: resolve_cpu_threads), and ctest -j does not oversubscribe the cores.
  setenv("OMP_NUM_THREADS", "1", /*overwrite=*/0);
  torch::set_num_threads(1);
  return RUN_ALL_TESTS();
}
