// model.name: torchscript, data.format: tensors, prior groups by pattern, and the parameter files
// Python opens (samples/, final.pt, predictive.pt). The Python side (a scripted convnet with batch
// norm, the samples loaded by torch.load) is tests/python/torchscript_roundtrip.py.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/experiment_config.h"
#include "data/load.h"
#include "data/tensors.h"
#include "error_of.h"
#include "models/factory.h"
#include "priors/gaussian_prior.h"
#include "tiny_idx.h"
#include "torchscript_fixtures.h"
#include "train/model_io.h"
#include "train/run_setup.h"
#include "train/trainer.h"

using namespace sgmcmc;
using namespace sgmcmc::test_util;
namespace fs = std::filesystem;

namespace {

// 600 train (100 validation) / 200 test blobs of 16x16, 4 classes (tiny_idx.h).
ExperimentConfig config_for(const std::string& data_dir, const std::string& model_block, std::vector<std::string> extra = {}) {
  std::string text = "name: ts\nseed: 5\ndata: {dir: " + data_dir + ", val_size: 100}\nmodel: " + model_block + R"(
prior: {precision: 1, hyperprior: gamma, gibbs_every_epochs: 1}
sampler: {name: sghmc, lr: 1.0e-3, alpha: 0.1}
train: {steps: 200, burn_in_steps: 100, thin: 10, batch_size: 50, eval_every_steps: 50}
output: {progress: false, save_samples: true}
)";
  auto raw = parse_raw_config(text, "ts.yaml");
  for (auto& a : extra) apply_override(raw, a);
  return build_config(raw);
}

Dataset tiny_dataset(const std::string& data_dir) {
  return load_dataset(config_for(data_dir, "{name: mlp}").data, 5);
}

// The built-in mlp of `config` and the same network as a TorchScript file with its initial weights.
std::string script_of_mlp(const ExperimentConfig& mlp_config, const Dataset& data, const std::string& path) {
  auto mlp = make_model(mlp_config.model, data, mlp_config.seed);
  std::vector<torch::Tensor> w, b;
  for (const auto& item : mlp->named_parameters())
    (item.key().find("weight") != std::string::npos ? w : b).push_back(item.value());
  write_bytes(path, module_bytes(scripted_mlp(w, b)));
  return path;
}

std::map<std::string, torch::Tensor> tensors_of(const std::string& path) { return read_tensor_dict(path); }

}  // namespace

// The scripted copy of the built-in mlp computes the same loss and gradients.
TEST(TorchScript, SameLossAndGradientsAsMlp) {
  const std::string dir = temp_dir("ts_grad");
  write_tiny_idx_dir(dir + "/data");
  const Dataset data = tiny_dataset(dir + "/data");
  const auto cfg = config_for(dir + "/data", "{name: mlp, hidden: [20]}");
  auto mlp = make_model(cfg.model, data, cfg.seed);
  const auto ts_cfg = config_for(dir + "/data", "{name: torchscript, path: " + script_of_mlp(cfg, data, dir + "/m.pt") + "}");
  auto ts = make_model(ts_cfg.model, data, cfg.seed);
  ASSERT_EQ(ts->named_parameters().keys(), mlp->named_parameters().keys());
  Batch batch{data.train.inputs.slice(0, 0, 50), data.train.targets.slice(0, 0, 50)};
  auto l1 = mlp->nll(batch), l2 = ts->nll(batch);
  l1.backward();
  l2.backward();
  // The built-in mlp's products run on oneDNN where built, the script's on ATen's BLAS: equal to float
  // rounding, not bit for bit. A sum of K = 50 rows (or 784 inputs) of float32 terms errs by at most
  // ~K·u ≈ 3e-6 (5e-5) of the terms' magnitude; 1e-4 of each tensor's largest element bounds that here,
  // and a wrong layer, transpose or activation misses it by orders of magnitude.
  EXPECT_NEAR(l1.item<double>(), l2.item<double>(), 1e-6 * std::abs(l2.item<double>()));
  auto close = [](const torch::Tensor& a, const torch::Tensor& b) {
    return (a - b).abs().max().item<double>() <= 1e-4 * b.abs().max().item<double>();
  };
  auto p1 = mlp->parameters(), p2 = ts->parameters();
  for (size_t i = 0; i < p1.size(); ++i) EXPECT_TRUE(close(p1[i].grad(), p2[i].grad())) << i;
  EXPECT_TRUE(close(mlp->predict(batch.inputs), ts->predict(batch.inputs)));
}

// 200 SGHMC steps with Gibbs steps and 10 averaged samples: the same trajectory (to float
// rounding: the same ops in the same order give the same bits here, but the tolerance allows for
// a JIT that fuses differently) and the same posterior-averaged test error.
TEST(TorchScript, SameTrajectoryAsMlpOver200SghmcSteps) {
  const std::string dir = temp_dir("ts_traj");
  write_tiny_idx_dir(dir + "/data");
  const Dataset data = tiny_dataset(dir + "/data");
  auto cfg = config_for(dir + "/data", "{name: mlp, hidden: [20]}");
  auto ts_cfg = config_for(dir + "/data", "{name: torchscript, path: " + script_of_mlp(cfg, data, dir + "/m.pt") + "}");
  RunOptions a, b;
  a.out_dir = dir + "/mlp";
  b.out_dir = dir + "/ts";
  a.quiet = b.quiet = true;
  auto ra = run_training(cfg, a), rb = run_training(ts_cfg, b);
  EXPECT_EQ(ra.values.at("samples"), 10);
  EXPECT_EQ(ra.values.at("test_error"), rb.values.at("test_error"));
  EXPECT_NEAR(ra.values.at("test_nll"), rb.values.at("test_nll"), 1e-5);
  auto fa = tensors_of(a.out_dir + "/final.pt"), fb = tensors_of(b.out_dir + "/final.pt");
  for (const char* k : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"})
    EXPECT_TRUE(torch::allclose(fa.at(k), fb.at(k), 1e-5, 1e-6)) << k;
  EXPECT_NEAR(ra.values.at("lambda.fc1.weight"), rb.values.at("lambda.fc1.weight"),
              1e-4 * ra.values.at("lambda.fc1.weight"));
}

// Exact resume of a TorchScript run (checkpoint, RNG, sampler state through the mirrored parameters).
TEST(TorchScript, ResumeEqualsUninterruptedRun) {
  const std::string dir = temp_dir("ts_resume");
  write_tiny_idx_dir(dir + "/data");
  write_bytes(dir + "/m.pt", module_bytes(random_scripted_mlp({256, 12, 4})));
  auto cfg = config_for(dir + "/data", "{name: torchscript, path: " + dir + "/m.pt}");
  RunOptions whole, part;
  whole.out_dir = dir + "/whole";
  part.out_dir = dir + "/part";
  whole.quiet = part.quiet = true;
  auto rw = run_training(cfg, whole);
  part.stop_after_steps = 130;
  EXPECT_FALSE(run_training(cfg, part).finished);
  part.stop_after_steps = -1;
  part.resume = true;
  auto rp = run_training(cfg, part);
  EXPECT_EQ(rw.values.at("test_nll"), rp.values.at("test_nll"));
  auto fw = tensors_of(whole.out_dir + "/final.pt"), fp = tensors_of(part.out_dir + "/final.pt");
  EXPECT_TRUE(torch::equal(fw.at("fc1.weight"), fp.at("fc1.weight")));
}

// A chain of its own (a distributed chains-mode rank's seed) starts from the file's weights plus a
// perturbation of 0.1 × each tensor's rms, drawn from its seed; the run's own seed keeps them as saved.
TEST(TorchScript, ChainsOfTheirOwnStartFromPerturbedWeights) {
  const std::string dir = temp_dir("ts_jitter");
  write_tiny_idx_dir(dir + "/data");
  write_bytes(dir + "/m.pt", module_bytes(random_scripted_mlp({256, 12, 4})));
  auto cfg = config_for(dir + "/data", "{name: torchscript, path: " + dir + "/m.pt}");
  auto saved = load_data_and_model(cfg).model->named_parameters();
  auto same = load_data_and_model(cfg, {"", cfg.seed}).model->named_parameters();
  auto a = load_data_and_model(cfg, {"", 101}).model->named_parameters();
  auto a2 = load_data_and_model(cfg, {"", 101}).model->named_parameters();
  auto b = load_data_and_model(cfg, {"", 102}).model->named_parameters();
  for (const auto& item : saved) {
    const auto& k = item.key();
    const torch::Tensor w = item.value();
    EXPECT_TRUE(torch::equal(w, same[k])) << k;
    EXPECT_TRUE(torch::equal(a[k], a2[k])) << k;  // a function of the seed
    EXPECT_FALSE(torch::equal(a[k], b[k])) << k;
    EXPECT_FALSE(torch::equal(a[k], w)) << k;
    // the perturbation's size: rms(Δ) / rms(w) = 0.1·sqrt(χ²_n / n), sd ≈ 0.1/sqrt(2n): within 0.04 is
    // 4 sd for the weights (n = 48 and 3,072); the biases (4 and 12 entries) are too few to check it
    if (w.numel() < 48) continue;
    const double rel = (a[k] - w).pow(2).mean().sqrt().item<double>() / w.pow(2).mean().sqrt().item<double>();
    EXPECT_NEAR(rel, kChainJitter, 0.04) << k;
  }
  remove_tree(dir);
}

// chains: C in one process. Each chain's gradient is its own slice's: two chains set to the same
// values, fed two different batches, get the single model's gradient on each batch in their slice.
// Chain 0 starts at the saved weights, chain 1 at them plus the stated perturbation; a run with three
// chains saves stacked samples and reports R̂ over them.
TEST(TorchScript, ChainsInOneProcess) {
  const std::string dir = temp_dir("ts_chains");
  write_tiny_idx_dir(dir + "/data");
  const Dataset data = tiny_dataset(dir + "/data");
  const auto mlp_cfg = config_for(dir + "/data", "{name: mlp, hidden: [20]}");
  const std::string path = script_of_mlp(mlp_cfg, data, dir + "/m.pt");
  const auto cfg = config_for(dir + "/data", "{name: torchscript, path: " + path + "}", {"chains=2"});
  auto chains = make_model(cfg.model, data, cfg.seed, 2);
  auto single = make_model(cfg.model, data, cfg.seed);
  ASSERT_EQ(chains->chains(), 2);
  ASSERT_EQ(chains->named_parameters().keys(), single->named_parameters().keys());
  for (const auto& item : single->named_parameters()) {
    const auto& stacked = chains->named_parameters()[item.key()];
    ASSERT_EQ(stacked.size(0), 2);
    EXPECT_TRUE(torch::equal(stacked[0], item.value())) << item.key();
    EXPECT_FALSE(torch::equal(stacked[1], item.value())) << item.key();
    if (item.value().numel() >= 48) {  // rms(Δ)/rms(w) = 0.1·sqrt(χ²_n/n): within 0.04 is 4 sd at n = 48
      const double rel = (stacked[1] - stacked[0]).pow(2).mean().sqrt().item<double>() /
                         stacked[0].pow(2).mean().sqrt().item<double>();
      EXPECT_NEAR(rel, kTorchScriptChainJitter, 0.04) << item.key();
    }
    torch::NoGradGuard g;
    stacked[1].copy_(stacked[0]);
  }
  Batch a{data.train.inputs.slice(0, 0, 50), data.train.targets.slice(0, 0, 50)};
  Batch b{data.train.inputs.slice(0, 50, 100), data.train.targets.slice(0, 50, 100)};
  Batch both{torch::cat({a.inputs, b.inputs}), torch::cat({a.targets, b.targets})};
  chains->nll(both).backward();
  std::map<std::string, torch::Tensor> grad_a, grad_b;
  single->nll(a).backward();
  for (const auto& item : single->named_parameters()) grad_a[item.key()] = item.value().grad().clone();
  single->zero_grad();
  single->nll(b).backward();
  for (const auto& item : single->named_parameters()) grad_b[item.key()] = item.value().grad().clone();
  for (const auto& item : chains->named_parameters()) {
    const auto& g = item.value().grad();
    EXPECT_TRUE(torch::allclose(g[0], grad_a[item.key()], 1e-5, 1e-6)) << item.key();
    EXPECT_TRUE(torch::allclose(g[1], grad_b[item.key()], 1e-5, 1e-6)) << item.key();
  }
  EXPECT_EQ(chains->predict_chains(a.inputs).sizes(), (std::vector<int64_t>{2, 50, 4}));
  // train.chain_minibatch: shared: one batch of n for both chains, each chain's gradient its own on it.
  ASSERT_TRUE(chains->share_minibatch(true));
  EXPECT_EQ(chains->minibatch_chains(), 1);
  chains->zero_grad();
  chains->nll(b).backward();
  for (const auto& item : chains->named_parameters())
    for (int64_t c = 0; c < 2; ++c)
      EXPECT_TRUE(torch::allclose(item.value().grad()[c], grad_b[item.key()], 1e-5, 1e-6)) << item.key() << " " << c;

  auto run_cfg = config_for(dir + "/data", "{name: torchscript, path: " + path + "}", {"chains=3"});
  RunOptions o;
  o.out_dir = dir + "/run";
  o.quiet = true;
  const auto s = run_training(run_cfg, o);
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.values.at("chains"), 3);
  EXPECT_TRUE(std::isfinite(s.values.at("rhat_test_loglik"))) << "R̂ over the three chains";
  RunOptions shared = o;
  shared.out_dir = dir + "/run_shared";
  const auto s_shared = run_training(
      config_for(dir + "/data", "{name: torchscript, path: " + path + "}", {"chains=3", "train.chain_minibatch=shared"}),
      shared);
  EXPECT_TRUE(s_shared.finished);
  EXPECT_TRUE(std::isfinite(s_shared.values.at("rhat_test_loglik")));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(o.out_dir + "/samples")) files.push_back(e.path());
  ASSERT_FALSE(files.empty());
  std::ifstream in(files.front(), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto dict = torch::pickle_load(bytes).toGenericDict();
  EXPECT_EQ(dict.at("fc1.weight").toTensor().size(0), 3);
  remove_tree(dir);
}

// Samples are dicts: parameters by name, the step, the λ's (torch.load gives the same dict).
TEST(TorchScript, SampleFilesAreDictsWithStepAndPrecisions) {
  const std::string dir = temp_dir("ts_samples");
  write_tiny_idx_dir(dir + "/data");
  auto cfg = config_for(dir + "/data", "{name: mlp, hidden: [8]}");
  RunOptions o;
  o.out_dir = dir + "/run";
  o.quiet = true;
  run_training(cfg, o);
  std::ifstream in(o.out_dir + "/samples/sample_000010.pt", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto dict = torch::pickle_load(bytes).toGenericDict();
  EXPECT_EQ(dict.at("step").toInt(), 200);
  EXPECT_GT(dict.at("lambda.fc1.weight").toDouble(), 0);
  EXPECT_EQ(dict.at("fc1.weight").toTensor().sizes(), (std::vector<int64_t>{8, 256}));
  // predict re-averages them to the run's own figures.
  auto p = predict_run(o.out_dir, {}, "", true);
  EXPECT_EQ(p.at("samples"), 10);
}

// A run directory written before the dict format (final.pt a torch archive) still predicts.
TEST(TorchScript, PredictReadsOldArchiveParameterFiles) {
  const std::string dir = temp_dir("ts_old");
  write_tiny_idx_dir(dir + "/data");
  auto cfg = config_for(dir + "/data", "{name: mlp, hidden: [8]}", {"output.save_samples=false"});
  RunOptions o;
  o.out_dir = dir + "/run";
  o.quiet = true;
  run_training(cfg, o);
  PredictOptions po{{}, "", "", "", false, true};
  po.last_sample = true;  // no samples/: the run's final.pt, in both formats
  const auto now = predict_run(o.out_dir, po);
  auto model = make_model(cfg.model, tiny_dataset(dir + "/data"), 99);
  load_parameter_file(o.out_dir + "/final.pt", *model, torch::kCPU);
  torch::serialize::OutputArchive ar;
  save_model(ar, *model, "");
  ar.save_to(o.out_dir + "/final.pt");
  const auto old = predict_run(o.out_dir, po);
  EXPECT_EQ(now.at("test_nll"), old.at("test_nll"));
  EXPECT_EQ(now.at("samples"), 1);
}

TEST(TorchScript, PriorGroupsByPattern) {
  const std::string dir = temp_dir("ts_groups");
  write_tiny_idx_dir(dir + "/data");
  const Dataset data = tiny_dataset(dir + "/data");
  auto cfg = config_for(dir + "/data", "{name: mlp, hidden: [6, 5]}",
                        {"prior.groups=weights=*.weight,first_bias=fc1.bias,rest=*"});
  EXPECT_EQ(cfg.prior.groups, "patterns");
  auto model = make_model(cfg.model, data, 1);
  auto groups = make_prior_groups(*model, cfg.prior.groups, cfg.prior.group_patterns);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].name, "weights");
  EXPECT_EQ(groups[0].numel(), 6 * 256 + 5 * 6 + 4 * 5);
  EXPECT_EQ(groups[1].numel(), 6);
  EXPECT_EQ(groups[2].numel(), 5 + 4);  // fc2.bias, fc3.bias: first match wins
  EXPECT_EQ(error_of([&] { make_prior_groups(*model, "patterns", {{"conv", "*conv*"}, {"rest", "*"}}); }),
            "prior.groups.conv: pattern '*conv*' matches no parameter (or only parameters an earlier group took)");
  EXPECT_EQ(error_of([&] { make_prior_groups(*model, "patterns", {{"w", "*.weight"}}); }),
            "prior.groups: parameter 'fc1.bias' matches no pattern (add a last group such as rest: \"*\")");
  // The YAML mapping form, in order.
  auto raw = parse_raw_config("prior: {groups: {b: '*.bias', w: '*'}}\nsampler: {name: sgld, lr: 0.1}\n", "g.yaml");
  auto c = build_config(raw);
  ASSERT_EQ(c.prior.group_patterns.size(), 2u);
  EXPECT_EQ(c.prior.group_patterns[0], (std::pair<std::string, std::string>{"b", "*.bias"}));
  EXPECT_EQ(error_of([&] { build_config(parse_raw_config("prior: {groups: bogus}\nsampler: {name: sgld, lr: 0.1}\n", "g.yaml")); }),
            "g.yaml: prior.groups: expected per_tensor, single, model or a mapping {group: pattern}, got 'bogus'");
}

TEST(TorchScript, TensorsFormatLoadsSplitsAndChecks) {
  const std::string dir = temp_dir("ts_tensors");
  auto x = torch::rand({50, 1, 4, 4});
  auto y = torch::randint(0, 3, {50}, torch::kInt64);
  write_bytes(dir + "/d.pt", tensor_dict_bytes({{"x_train", x.slice(0, 0, 40)}, {"y_train", y.slice(0, 0, 40)},
                                                {"x_test", x.slice(0, 40)}, {"y_test", y.slice(0, 40)}}));
  auto raw = parse_raw_config("data: {format: tensors, path: " + dir + "/d.pt, val_size: 10}\nsampler: {name: sgld, lr: 0.1}\n", "t.yaml");
  auto cfg = build_config(raw);
  Dataset d = load_dataset(cfg.data, 1);
  EXPECT_EQ(d.train.size(), 30);
  EXPECT_EQ(d.val.size(), 10);
  EXPECT_EQ(d.test.size(), 10);
  EXPECT_EQ(d.dims.at("features"), 16);
  EXPECT_EQ(d.dims.at("channels"), 1);
  EXPECT_EQ(d.num_classes, y.max().item<int64_t>() + 1);
  TensorsOptions o;
  o.path = dir + "/bad.pt";
  auto bad = [&](std::map<std::string, torch::Tensor> t) {
    write_bytes(o.path, tensor_dict_bytes(t));
    return error_of([&] { load_tensors_dataset(o, 0, 1); });
  };
  const auto xt = x.slice(0, 40), yt = y.slice(0, 40);
  EXPECT_EQ(bad({{"x_train", x}, {"y_train", y}, {"x_test", xt}}),
            o.path + ": y_test: missing (expected x_train, y_train, x_test, y_test, optionally x_val, y_val)");
  EXPECT_EQ(bad({{"x_train", x}, {"y_train", y.slice(0, 0, 49)}, {"x_test", xt}, {"y_test", yt}}),
            o.path + ": y_train: 49 targets for 50 inputs in x_train");
  EXPECT_EQ(bad({{"x_train", x}, {"y_train", y.to(torch::kFloat32)}, {"x_test", xt}, {"y_test", yt}}),
            o.path + ": y_train: classification needs integer class labels, got Float (data.task: regression for real-valued targets)");
  auto xn = x.clone();
  xn[3][0][0][0] = std::nan("");
  EXPECT_EQ(bad({{"x_train", xn}, {"y_train", y}, {"x_test", xt}, {"y_test", yt}}), o.path + ": x_train: has non-finite values");
  EXPECT_EQ(bad({{"x_train", x}, {"y_train", y}, {"x_test", torch::rand({10, 2, 4, 4})}, {"y_test", yt}}),
            o.path + ": x_test: shape [10, 2, 4, 4] does not match x_train's [50, 1, 4, 4]");
  // Regression targets [n, 1] become [n].
  o.task = Task::kRegression;
  write_bytes(o.path, tensor_dict_bytes({{"x_train", x.flatten(1)}, {"y_train", torch::randn({50, 1})},
                                          {"x_test", xt.flatten(1)}, {"y_test", torch::randn({10})}}));
  auto r = load_tensors_dataset(o, 0, 1);
  EXPECT_EQ(r.train.targets.sizes(), (std::vector<int64_t>{50}));
  EXPECT_EQ(r.task, Task::kRegression);
}

TEST(TorchScript, BadModulesAreRefusedBeforeTraining) {
  const std::string dir = temp_dir("ts_bad");
  write_tiny_idx_dir(dir + "/data");
  const Dataset data = tiny_dataset(dir + "/data");
  auto build = [&](const std::string& path, std::vector<std::string> extra = {}) {
    return error_of([&] { make_model(config_for(dir + "/data", "{name: torchscript, path: " + path + "}", extra).model, data, 1); });
  };
  EXPECT_EQ(build(dir + "/nope.pt"), "ts.yaml: model.path: '" + dir + "/nope.pt': no such file");
  write_bytes(dir + "/junk.pt", "not an archive");
  EXPECT_NE(build(dir + "/junk.pt").find("': not a TorchScript archive"), std::string::npos);
  write_bytes(dir + "/shape.pt", module_bytes(random_scripted_mlp({256, 5, 3})));
  EXPECT_EQ(build(dir + "/shape.pt"), "ts.yaml: model: forward returned shape [2, 3] for 2 inputs, expected [2, 4] logits");
  write_bytes(dir + "/dtype.pt", module_bytes(random_scripted_mlp({256, 5, 4}, "h.long()")));
  EXPECT_EQ(build(dir + "/dtype.pt"), "ts.yaml: model: forward returned dtype Long, expected a floating-point tensor");
  write_bytes(dir + "/tuple.pt", module_bytes(random_scripted_mlp({256, 5, 4}, "(h, h)")));
  EXPECT_EQ(build(dir + "/tuple.pt"), "ts.yaml: model: forward must return one Tensor, got Tuple");
  write_bytes(dir + "/in.pt", module_bytes(random_scripted_mlp({100, 5, 4})));
  EXPECT_NE(build(dir + "/in.pt").find("ts.yaml: model: forward failed on inputs of shape [2, 1, 16, 16]: "), std::string::npos);
  // Parallel chains of a model without them: one line.
  EXPECT_EQ(error_of([&] { config_for(dir + "/data", "{name: cnn}", {"chains=2"}); }),
            "ts.yaml: chains: parallel chains are available for model.name: mlp and torchscript only (got cnn)");
}
