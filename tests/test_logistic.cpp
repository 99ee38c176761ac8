// Bayesian logistic regression (models/logistic.h) and the LIBSVM reader (data/libsvm.h):
// - the reader on a real file (bench/logistic/data/breast_cancer_train.libsvm: Debian's copy of the
//   Wisconsin breast cancer set, standardized, as bench/logistic/reference.py writes it) and on broken
//   lines, each one line naming the file and line;
// - the hand-derived backward pass against autograd (binary and multinomial, added and overwritten);
// - the posterior against NumPyro's NUTS on that set (bench/logistic/breast_cancer_nuts.json).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "config/experiment_config.h"
#include "core/remove_tree.h"
#include "data/libsvm.h"
#include "error_of.h"
#include "models/logistic.h"
#include "tiny_idx.h"
#include "train/model_io.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace sgmcmc;
using namespace sgmcmc::test_util;

namespace {

const std::string kData = std::string(SGMCMC_SOURCE_DIR) + "/bench/logistic/data/breast_cancer_";

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

}  // namespace

TEST(Libsvm, ReadsARealFile) {
  const LibsvmRows r = read_libsvm(kData + "train.libsvm");
  EXPECT_EQ(r.inputs.sizes(), torch::IntArrayRef({455, 30}));
  EXPECT_EQ(r.labels.size(), 455u);
  for (double y : r.labels) EXPECT_TRUE(y == 0 || y == 1) << y;
  // standardized over all 569 rows: the training rows' columns are near mean 0, sd 1
  EXPECT_LT(r.inputs.mean(0).abs().max().item<double>(), 0.2);
  const double sd = r.inputs.std(0).mean().item<double>();
  EXPECT_GT(sd, 0.9);
  EXPECT_LT(sd, 1.1);
}

TEST(Libsvm, SparseRowsCommentsAndLabels) {
  const std::string dir = temp_dir("libsvm_rows");
  const auto f = write(dir, "a.txt", "+1 2:0.5 7:-1  # a comment\n\n-1 1:2\n# only a comment\n+1\n");
  const LibsvmRows r = read_libsvm(f, 10);
  EXPECT_EQ(r.inputs.sizes(), torch::IntArrayRef({3, 10}));
  EXPECT_EQ(r.labels, (std::vector<double>{1, -1, 1}));
  EXPECT_EQ(r.inputs[0][1].item<float>(), 0.5f);
  EXPECT_EQ(r.inputs[0][6].item<float>(), -1.0f);
  EXPECT_EQ(r.inputs[1][0].item<float>(), 2.0f);
  EXPECT_EQ(r.inputs.sum().item<float>(), 1.5f);
  // ±1 labels become classes 0 and 1; a test file's features may stop short of the training file's
  const auto t = write(dir, "t.txt", "-1 1:1\n+1 3:1\n");
  LibsvmOptions o;
  o.path(f).test_path(t);
  const Dataset ds = load_libsvm_dataset(o, 0, 1);
  EXPECT_EQ(ds.num_classes, 2);
  EXPECT_EQ(ds.dims.at("features"), 7);
  EXPECT_EQ(ds.test.targets[0].item<int64_t>(), 0);
  EXPECT_EQ(ds.test.targets[1].item<int64_t>(), 1);
  EXPECT_EQ(ds.train.targets[1].item<int64_t>(), 0);
  remove_tree(dir);
}

TEST(Libsvm, BadLinesAreOneLineNamingFileAndLine) {
  const std::string dir = temp_dir("libsvm_bad");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1 1:1\nx 1:1\n", ":2: label 'x' is not a number"},
      {"1 1:1\n1 3:1 2:1\n", ":2: index 2 after 3 (indices must increase)"},
      {"1 0:1\n", ":1: index 0 is not an integer from 1"},
      {"1 2:abc\n", ":1: '2:abc' is not <index>:<value>"},
      {"1 2\n", ":1: '2' is not <index>:<value>"},
      {"1 1.5:1\n", ":1: index 1.5 is not an integer from 1"},
  };
  for (const auto& [text, want] : cases) {
    const auto f = write(dir, "bad.txt", text);
    const std::string m = error_of([&] { read_libsvm(f); });
    EXPECT_NE(m.find(f + want), std::string::npos) << text << " -> " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_NE(error_of([&] { read_libsvm(write(dir, "empty.txt", "# nothing\n")); }).find("no examples"), std::string::npos);
  LibsvmOptions o;
  o.path(write(dir, "one.txt", "1 1:1\n1 2:1\n"));
  EXPECT_NE(error_of([&] { load_libsvm_dataset(o, 0, 1); }).find("one label (1) in every example"), std::string::npos);
  o.path(write(dir, "train.txt", "1 1:1\n2 2:1\n")).test_path(write(dir, "test.txt", "3 1:1\n"));
  EXPECT_NE(error_of([&] { load_libsvm_dataset(o, 0, 1); }).find("test.txt: example 1: label 3 is not among"),
            std::string::npos);
  remove_tree(dir);
}

// ∇ of scale·nll by the model's own pass equals autograd's, for both heads, added to and written over .grad.
TEST(LogisticRegression, OwnBackwardEqualsAutograd) {
  torch::manual_seed(3);
  for (const int64_t classes : {2, 4}) {
    LogisticRegression m(5, classes);
    torch::NoGradGuard no_grad_init;
    for (auto& p : m.parameters()) p.normal_(0, 0.5);
    const Batch b{torch::randn({17, 5}), torch::randint(0, classes, {17}, torch::kInt64)};
    std::vector<torch::Tensor> want;
    {
      torch::AutoGradMode on(true);
      for (auto& p : m.parameters()) p.mutable_grad() = torch::Tensor();
      const auto nll = m.nll(b);
      (2.5 * nll).backward();
      for (auto& p : m.parameters()) want.push_back(p.grad().clone());
      // the nll the pass returns
      for (auto& p : m.parameters()) p.mutable_grad() = torch::ones_like(p);
      const auto own = m.nll_backward(b, 2.5);
      ASSERT_TRUE(own.defined());
      EXPECT_NEAR(own.item<double>(), nll.item<double>(), 1e-4 * std::fabs(nll.item<double>()));
    }
    size_t i = 0;
    for (auto& p : m.parameters()) EXPECT_TRUE(torch::allclose(p.grad() - 1, want[i++], 1e-5, 1e-5)) << classes;
    m.nll_backward_overwrite(b, 2.5);
    i = 0;
    for (auto& p : m.parameters()) EXPECT_TRUE(torch::allclose(p.grad(), want[i++], 1e-5, 1e-5)) << classes;
    // the binary head is one weight vector: σ, not a two-class softmax
    EXPECT_EQ(m.parameters()[0].size(0), classes == 2 ? 1 : classes);
    const auto p = m.predict(b.inputs);
    EXPECT_EQ(p.sizes(), torch::IntArrayRef({17, classes}));
    EXPECT_TRUE(torch::allclose(p.sum(1), torch::ones({17}), 1e-6, 1e-6));
  }
}

// The posterior on a real binary set against NumPyro's NUTS (bench/logistic/reference.py: 4 chains x 2,000
// draws, R-hat < 1.01): the breast cancer set's 455 training rows, 30 standardized features, 002's prior
// N(0, 10) on every weight and the bias (prior.precision 0.1, fixed, one group). SGHMC full-batch, 100,000
// steps of lr 2e-3, a sample every 50 after 5,000: about 10 s on one core.
// Tolerances, from the chain's effective sample size (ESS ≥ 90 for the slowest traced weight at this seed):
// a mean's Monte Carlo error is sd/√ESS ≈ 0.1 sd, so every mean within 0.35 of the reference sd (3.5 errors,
// the largest of 31); an sd's relative error is ≈ 1/√(2·ESS) ≈ 0.075, so every sd within [0.78, 1.22] of the
// reference's (3 errors). A prior twice as wide or a likelihood scaled by 2 moves the sds by ≥ 25 %.
TEST(LogisticRegression, PosteriorMatchesNutsOnBreastCancer) {
  std::ifstream in(std::string(SGMCMC_SOURCE_DIR) + "/bench/logistic/breast_cancer_nuts.json");
  ASSERT_TRUE(in) << "bench/logistic/breast_cancer_nuts.json";
  const auto ref = nlohmann::json::parse(in);
  ASSERT_LT(ref["rhat_max"].get<double>(), 1.01);
  const std::string dir = temp_dir("logistic_nuts");
  std::ofstream(dir + "/bc.yaml") << "name: bc\nseed: 1\n"
      "data: {format: libsvm, path: " << kData << "train.libsvm, test_path: " << kData << "test.libsvm, val_size: 0}\n"
      "model: {name: logistic}\n"
      "prior: {precision: 0.1, hyperprior: none, groups: single}\n"
      "sampler: {name: sghmc, lr: 2.0e-3, alpha: 0.1}\n"
      "train: {steps: 100000, batch_size: 455, burn_in_steps: 5000, thin: 50, eval_every_steps: 5000, threads: 1}\n"
      "output: {progress: false, max_samples: 2000}\n";
  RunOptions ro;
  ro.quiet = true;
  ro.out_dir = dir + "/run";
  const RunSummary s = run_training(load_config(dir + "/bc.yaml", {}), ro);
  EXPECT_NEAR(s.values.at("test_nll"), ref["test_nll"].get<double>(), 0.01);
  std::vector<torch::Tensor> w, b;
  for (const auto& e : fs::directory_iterator(ro.out_dir + "/samples")) {
    LogisticRegression m(30, 2);
    load_parameter_file(e.path().string(), m, torch::kCPU);
    w.push_back(m.parameters()[0].detach().reshape(-1).to(torch::kFloat64));
    b.push_back(m.parameters()[1].detach().reshape(-1).to(torch::kFloat64));
  }
  ASSERT_GE(w.size(), 1000u);
  const auto ws = torch::cat({torch::stack(w), torch::stack(b)}, 1);  // [S, 31]
  std::vector<double> ref_mean = ref["weight_mean"].get<std::vector<double>>();
  std::vector<double> ref_sd = ref["weight_sd"].get<std::vector<double>>();
  ref_mean.push_back(ref["bias_mean"].get<double>());
  ref_sd.push_back(ref["bias_sd"].get<double>());
  const auto mean = ws.mean(0), sd = ws.std(0);
  for (int64_t j = 0; j < 31; ++j) {
    EXPECT_LT(std::fabs(mean[j].item<double>() - ref_mean[j]) / ref_sd[j], 0.35) << "parameter " << j;
    const double ratio = sd[j].item<double>() / ref_sd[j];
    EXPECT_GT(ratio, 0.78) << "parameter " << j;
    EXPECT_LT(ratio, 1.22) << "parameter " << j;
  }
  remove_tree(dir);
}
