// A tiny MNIST-layout IDX data set written by the tests: `classes` classes of 16x16 images, class k
// is a bright 4x4 block at a class-specific position plus uniform noise (easily separable).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/remove_tree.h"
#include "compat.h"
#include "config/experiment_config.h"
#include "data/idx.h"

namespace sgmcmc::test_util {

inline void make_blobs(int64_t n, int64_t classes, uint64_t seed, torch::Tensor& images, torch::Tensor& labels) {
  auto gen = compat::make_generator(torch::kCPU, seed);
  labels = at::randint(0, classes, {n}, gen, torch::TensorOptions().dtype(torch::kInt64));
  auto x = at::rand({n, 16, 16}, gen) * 100.0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = labels[i].item<int64_t>();
    int64_t r = 4 * (k / 2) + 2, c = 4 * (k % 2) + 6;
    x[i].slice(0, r, r + 4).slice(1, c, c + 4) += 150.0;
  }
  images = x.clamp(0, 255).to(torch::kUInt8);
}

// Writes train (n_train) and t10k (n_test) files into `dir` (gzip or plain).
inline void write_tiny_idx_dir(const std::string& dir, int64_t n_train = 600, int64_t n_test = 200,
                               int64_t classes = 4, bool gzip = true) {
  std::filesystem::create_directories(dir);
  torch::Tensor xi, yi;
  const std::string ext = gzip ? ".gz" : "";
  make_blobs(n_train, classes, 11, xi, yi);
  write_idx(dir + "/train-images-idx3-ubyte" + ext, xi, gzip);
  write_idx(dir + "/train-labels-idx1-ubyte" + ext, yi, gzip);
  make_blobs(n_test, classes, 12, xi, yi);
  write_idx(dir + "/t10k-images-idx3-ubyte" + ext, xi, gzip);
  write_idx(dir + "/t10k-labels-idx1-ubyte" + ext, yi, gzip);
}

// A fresh temporary directory for one test.
inline std::string temp_dir(const std::string& name) {
  auto base = std::filesystem::temp_directory_path() /
              ("sgmcmc_test_" + name + "_" + std::to_string(::getpid()));
  sgmcmc::remove_tree(base);
  std::filesystem::create_directories(base);
  return base.string();
}

// A config from the YAML `text` with every placeholder of `subs` replaced (once each), then the
// `key=value` overrides applied, as `sgmcmc train FILE --set ...` builds it.
inline ExperimentConfig config_from(std::string text, const std::vector<std::pair<std::string, std::string>>& subs,
                                    const std::vector<std::string>& overrides, const std::string& source) {
  for (const auto& [key, value] : subs) text.replace(text.find(key), key.size(), value);
  auto raw = parse_raw_config(text, source);
  for (const auto& a : overrides) apply_override(raw, a);
  return build_config(raw);
}

}  // namespace sgmcmc::test_util
