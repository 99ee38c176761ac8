// CSV regression data (src/data/csv.h): reading (quoted headers, one-line file:line errors), seeded
// 90/10 splits, standardization on the training split, and the trainer reporting RMSE / NLL in the
// original units.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "compat.h"
#include "config/experiment_config.h"
#include "data/csv.h"
#include "data/load.h"
#include "data/tensors.h"
#include "tiny_idx.h"
#include "train/trainer.h"
#include "error_of.h"

namespace fs = std::filesystem;
using namespace sgmcmc;
using test_util::error_of;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

OptionMap data_block(const std::string& path, std::vector<std::pair<std::string, std::string>> kv = {}) {
  OptionMap o("data");
  o.set("path", path);
  for (auto& [k, v] : kv) o.set(k, v);
  return o;
}

// y = 3 x1 − 2 x2 + 50 + N(0, 1) noise, x ~ U(0, 4): n rows.
std::string linear_csv(const std::string& dir, int64_t n) {
  auto gen = compat::make_generator(torch::kCPU, 3);
  auto x = at::rand({n, 2}, gen, torch::TensorOptions().dtype(torch::kFloat64)) * 4.0;
  auto e = at::randn({n}, gen, torch::TensorOptions().dtype(torch::kFloat64));
  auto y = 3 * x.select(1, 0) - 2 * x.select(1, 1) + 50 + e;
  std::string path = dir + "/lin.csv";
  std::ofstream out(path);
  out << "\"x1\",\"x2\",\"y\"\n";
  out.precision(10);
  for (int64_t i = 0; i < n; ++i)
    out << x[i][0].item<double>() << "," << x[i][1].item<double>() << "," << y[i].item<double>() << "\n";
  return path;
}

// SGHMC on a 2-20-1 ReLU MLP with a Gibbs-sampled noise precision, on the CSV at `path`.
RawConfig linear_run_config(const std::string& path) {
  std::string text = R"(
name: lin
seed: 2
data: {format: csv, path: PATH, val_fraction: 0.1}
model: {name: mlp, hidden: [20], activation: relu, noise_prior: gamma}
prior: {precision: 1, hyperprior: gamma, gibbs_every_steps: 20}
sampler: {name: sghmc, lr: 1.0e-4, alpha: 0.1}
train: {steps: 1500, batch_size: 32, burn_in_steps: 500, thin: 5, eval_every_steps: 500}
output: {progress: false}
)";
  text.replace(text.find("PATH"), 4, path);
  return parse_raw_config(text, "lin.yaml");
}

}  // namespace

TEST(Csv, ReadsQuotedHeaderAndNumbers) {
  auto dir = test_util::temp_dir("csv_read");
  write(dir + "/a.csv", "\"crim\",\"zn\", medv\n0.5,18,24\n\n1e-2, -3 ,21.6\n");
  auto t = read_csv(dir + "/a.csv");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"crim", "zn", "medv"}));
  ASSERT_EQ(t.values.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_DOUBLE_EQ(t.values[1][0].item<double>(), 0.01);
  EXPECT_DOUBLE_EQ(t.values[1][1].item<double>(), -3);
  EXPECT_DOUBLE_EQ(t.values[0][2].item<double>(), 24);
}

TEST(Csv, OneLineErrorsWithFileAndLine) {
  auto dir = test_util::temp_dir("csv_errors");
  write(dir + "/b.csv", "a,b,c\n1,2,3\n4,x5,6\n");
  EXPECT_EQ(error_of([&] { read_csv(dir + "/b.csv"); }),
            dir + "/b.csv:3: field 2 ('b') is not a finite number: 'x5'");
  write(dir + "/c.csv", "a,b,c\n1,2\n");
  EXPECT_EQ(error_of([&] { read_csv(dir + "/c.csv"); }), dir + "/c.csv:2: expected 3 fields (as in the header), got 2");
  write(dir + "/d.csv", "a,b\n1,\n");
  EXPECT_EQ(error_of([&] { read_csv(dir + "/d.csv"); }), dir + "/d.csv:2: field 2 ('b') is not a finite number: ''");
  write(dir + "/e.csv", "a,b\n");
  EXPECT_EQ(error_of([&] { read_csv(dir + "/e.csv"); }), dir + "/e.csv: no data rows after the header");
  EXPECT_EQ(error_of([&] { read_csv(dir + "/none.csv"); }), dir + "/none.csv: cannot open CSV file");
  write(dir + "/g.csv", "a,b,c\n1,2,3\n4,5,6\n7,8,9\n");
  auto msg = error_of([&] { load_csv_dataset(data_block(dir + "/g.csv", {{"target", "cc"}})); });
  EXPECT_NE(msg.find("data.target: no column 'cc'"), std::string::npos) << msg;
}

TEST(Csv, SplitsAndStandardization) {
  auto dir = test_util::temp_dir("csv_split");
  auto path = linear_csv(dir, 200);
  auto ds = load_csv_dataset(data_block(path, {{"val_fraction", "0.1"}}));
  // 200 rows: round(0.1·200) = 20 test, round(0.1·180) = 18 validation, 162 train.
  EXPECT_EQ(ds.test.size(), 20);
  EXPECT_EQ(ds.val.size(), 18);
  EXPECT_EQ(ds.train.size(), 162);
  EXPECT_EQ(ds.task, Task::kRegression);
  EXPECT_EQ(ds.dims.at("features"), 2);
  EXPECT_TRUE(ds.standardized_targets);
  // Standardized on the training split: exactly mean 0 and (population) std 1 there (float32).
  EXPECT_NEAR(ds.train.inputs.mean(0).abs().max().item<double>(), 0, 1e-5);
  EXPECT_NEAR(ds.train.inputs.std(0, false).sub(1).abs().max().item<double>(), 0, 1e-5);
  EXPECT_NEAR(ds.train.targets.mean().item<double>(), 0, 1e-5);
  EXPECT_NEAR(ds.train.targets.std(false).item<double>(), 1, 1e-5);
  // target_mean near 50 + 3·2 − 2·2 = 52; target_scale near sqrt(9·16/12 + 4·16/12 + 1) = 4.08.
  EXPECT_NEAR(ds.target_mean, 52, 1.0);
  EXPECT_NEAR(ds.target_scale, 4.08, 0.6);
  // Same split for the same (split_seed, split); another split index gives another test set.
  auto again = load_csv_dataset(data_block(path, {{"val_fraction", "0.1"}}));
  EXPECT_TRUE(torch::equal(ds.test.targets, again.test.targets));
  auto other = load_csv_dataset(data_block(path, {{"val_fraction", "0.1"}, {"split", "1"}}));
  EXPECT_FALSE(torch::equal(ds.test.targets, other.test.targets));
  // Target by name: x1 as the target leaves x2 and y as features.
  auto by_name = load_csv_dataset(data_block(path, {{"target", "x1"}}));
  EXPECT_EQ(by_name.dims.at("features"), 2);
  EXPECT_EQ(by_name.test.size(), 20);
  EXPECT_EQ(by_name.val.size(), 0);
}

// End to end: a linear-Gaussian CSV (noise σ = 1 in the original units, target std ≈ 4.1) through
// the trainer with SGHMC on a 2-20-1 ReLU MLP and a Gibbs-sampled noise precision. The reported
// test_rmse must be in the original units: about σ = 1 (a good fit; the RMSE of 40 N(0, 1) residuals
// has sd 1/sqrt(80) ≈ 0.11, model error adds a little), i.e. in [0.7, 1.5]; in standardized units it
// would be ≈ 1/4.1 ≈ 0.25. test_nll of the mixture of N(f_s, 1/τ_s): ≈ 0.5·log(2πe) = 1.42 for a
// calibrated fit, in [1.1, 1.9]; in standardized units it would be ≈ 1.42 − log 4.1 ≈ 0.0.
TEST(Csv, TrainerReportsOriginalUnits) {
  auto dir = test_util::temp_dir("csv_train");
  auto path = linear_csv(dir, 400);
  auto raw = linear_run_config(path);
  RunOptions ro;
  ro.out_dir = dir + "/run";
  ro.quiet = true;
  auto s = run_training(build_config(raw), ro);
  EXPECT_EQ(s.values.at("samples"), 200);
  EXPECT_GT(s.values.at("test_rmse"), 0.7);
  EXPECT_LT(s.values.at("test_rmse"), 1.5);
  EXPECT_GT(s.values.at("test_nll"), 1.1);
  EXPECT_LT(s.values.at("test_nll"), 1.9);
  EXPECT_GT(s.values.at("val_rmse"), 0.6);
  EXPECT_LT(s.values.at("val_rmse"), 1.6);
  // The run's config.yaml holds the CSV's keys, none of the image format's (data.dir, normalize, ood).
  const YAML::Node data = YAML::LoadFile(dir + "/run/config.yaml")["data"];
  EXPECT_EQ(data["format"].as<std::string>(), "csv");
  for (const char* k : {"dir", "normalize", "ood", "ood_classes", "ood_dir", "val_size"}) EXPECT_FALSE(data[k]) << k;
  // Resuming keeps the mixture sums (lse_test) in the checkpoint: equal to the uninterrupted run.
  RunOptions rb = ro;
  rb.out_dir = dir + "/run_b";
  rb.stop_after_steps = 777;
  run_training(build_config(raw), rb);
  rb.stop_after_steps = -1;
  rb.resume = true;
  auto sb = run_training(load_config(dir + "/run_b/config.yaml"), rb);
  for (const char* k : {"test_rmse", "test_nll", "val_rmse", "val_nll"}) EXPECT_EQ(s.values.at(k), sb.values.at(k)) << k;
}

// predict --data on a CSV run takes raw rows, as the CSV holds them: the run's standardization (kept in the
// run directory's standardization.json) is applied to x and y, and the metrics come back in the original
// units once. The check a user makes: the RMSE of predictive.pt's mean against the file's y equals the
// reported data_rmse; and on rows like the training data (the CSV's first 100, noise σ = 1) it is about σ
// (in [0.7, 1.5] as above), where raw inputs fed to the standardized model would be off by tens.
TEST(Csv, PredictOnRawRowsStandardizesThemAsTheRunDid) {
  auto dir = test_util::temp_dir("csv_predict");
  auto path = linear_csv(dir, 400);
  RunOptions ro;
  ro.out_dir = dir + "/run";
  ro.quiet = true;
  run_training(build_config(linear_run_config(path)), ro);
  ASSERT_TRUE(std::filesystem::exists(dir + "/run/standardization.json"));
  const auto table = read_csv(path);
  const auto rows = table.values.slice(0, 0, 100);
  c10::Dict<std::string, torch::Tensor> dict;
  dict.insert("x", rows.slice(1, 0, 2).to(torch::kFloat32));
  dict.insert("y", rows.select(1, 2).to(torch::kFloat32));
  write_pickle_file(dir + "/new.pt", c10::IValue(dict));
  PredictOptions po;
  po.quiet = true;
  po.data_file = dir + "/new.pt";
  po.predictive_out = dir + "/p.pt";
  const auto m = predict_run(dir + "/run", po);
  std::ifstream in(dir + "/p.pt", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto p = torch::pickle_load(bytes).toGenericDict();
  const auto mean = p.at("mean").toTensor().to(torch::kFloat64);
  const double user_rmse = (mean - rows.select(1, 2)).square().mean().sqrt().item<double>();
  EXPECT_NEAR(m.at("data_rmse"), user_rmse, 1e-4 * user_rmse);  // new data: its own prefix
  EXPECT_EQ(m.count("test_rmse"), 0u);
  EXPECT_GT(user_rmse, 0.7);
  EXPECT_LT(user_rmse, 1.5);
  remove_tree(dir);
}
