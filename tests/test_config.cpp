#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "compat.h"
#include "config/experiment_config.h"
#include "samplers/registry.h"
#include "tiny_idx.h"
#include "error_of.h"

using namespace sgmcmc;
using test_util::error_of;

namespace {
const char* kBase = R"(
name: demo
seed: 3
data: {dir: /tmp/nowhere, val_size: 100}
model: {name: mlp, hidden: [20, 10], activation: relu}
sampler: {name: sgld, lr: 1.0e-4}
train: {epochs: 5, burn_in: 1, batch_size: 50}
)";

std::string write_config(const std::string& name, const std::string& text) {
  auto dir = test_util::temp_dir("config");
  std::string path = dir + "/" + name + ".yaml";
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(Config, ParsesTypedBlocks) {
  auto path = write_config("ok", kBase);
  auto c = load_config(path);
  EXPECT_EQ(c.name, "demo");
  EXPECT_EQ(c.seed, 3u);
  EXPECT_EQ(c.data.dir, "/tmp/nowhere");
  EXPECT_EQ(c.data.val_size, 100);
  EXPECT_EQ(c.train.epochs, 5);
  EXPECT_DOUBLE_EQ(c.train.burn_in, 1.0);
  EXPECT_EQ(c.train.batch_size, 50);
  EXPECT_EQ(c.sampler_name(), "sgld");
  EXPECT_EQ(c.model.get_string("hidden", ""), "20,10");
  EXPECT_EQ(parse_int_list("20,10", "x"), (std::vector<int64_t>{20, 10}));
  EXPECT_EQ(c.prior.hyperprior, "gamma");  // default
  EXPECT_DOUBLE_EQ(c.prior.alpha, 1.0);
}

TEST(Config, UnknownKeysNameFileAndSuggest) {
  auto path = write_config("typo", std::string(kBase) + "output: {save_sample: true}\n");
  auto m = error_of([&] { load_config(path); });
  EXPECT_NE(m.find(path + ": output.save_sample: unknown key (did you mean 'save_samples'?)"), std::string::npos) << m;

  auto path2 = write_config("block", std::string(kBase) + "trian: {epochs: 3}\n");
  m = error_of([&] { load_config(path2); });
  EXPECT_NE(m.find(path2 + ": trian: unknown key (did you mean 'train'?)"), std::string::npos) << m;

  // Sampler keys are checked by the registry when the sampler is built.
  auto c = load_config(write_config("samp", kBase), {"sampler.lrr=0.1"});
  auto p = torch::zeros({2}, torch::requires_grad());
  m = error_of([&] { make_sampler("sgld", {ParamGroup({p})}, c.sampler, compat::make_generator(torch::kCPU, 1)); });
  EXPECT_NE(m.find("sampler.lrr: unknown key (did you mean 'lr'?)"), std::string::npos) << m;
}

TEST(Config, SetOverrides) {
  auto path = write_config("set", kBase);
  auto c = load_config(path, {"train.epochs=9", "seed=11", "data.dir=/x", "data.val_size=7", "train.burn_in=2",
                              "model.hidden=5,6"});
  EXPECT_EQ(c.train.epochs, 9);
  EXPECT_EQ(c.seed, 11u);
  EXPECT_EQ(c.data.dir, "/x");
  EXPECT_EQ(c.data.val_size, 7);
  EXPECT_DOUBLE_EQ(c.train.burn_in, 2.0);
  EXPECT_EQ(c.model.get_string("hidden", ""), "5,6");
  auto m = error_of([&] { load_config(path, {"train.epochz=3"}); });
  EXPECT_NE(m.find("train.epochz: unknown key (did you mean 'epochs'?)"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"trainn.epochs=3"}); });
  EXPECT_NE(m.find("unknown block 'trainn' (did you mean 'train'?)"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"seeed=3"}); });
  EXPECT_NE(m.find("unknown key 'seeed' (did you mean 'seed'?)"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"train.epochs"}); });
  EXPECT_NE(m.find("expected key=value"), std::string::npos) << m;
}

TEST(Config, TypeAndRangeErrors) {
  auto path = write_config("range", kBase);
  auto m = error_of([&] { load_config(path, {"train.epochs=abc"}); });
  EXPECT_NE(m.find(path + ": train.epochs: expected an integer, got 'abc'"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"train.batch_size=0"}); });
  EXPECT_NE(m.find("train.batch_size: must be > 0"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"train.burn_in=5"}); });
  EXPECT_NE(m.find("burn_in"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"prior.precision=-1"}); });
  EXPECT_NE(m.find("prior.precision: must be > 0"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"output.save_samples=maybe"}); });
  EXPECT_NE(m.find("expected true or false"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"prior.hyperprior=gama"}); });
  EXPECT_NE(m.find("did you mean 'gamma'"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"data.val_size=-3"}); });
  EXPECT_NE(m.find("data.val_size: must be >= 0"), std::string::npos) << m;
  auto bad = write_config("syntax", "train: {epochs: [1, 2\n");
  m = error_of([&] { load_config(bad); });
  EXPECT_NE(m.find(bad + ": YAML syntax error"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(Config, ResolvedYamlRoundTrips) {
  auto path = write_config("resolved", kBase);
  auto c = load_config(path, {"train.epochs=7"});
  std::string yaml = to_yaml(c);
  EXPECT_NE(yaml.find("gibbs_every_epochs: 1"), std::string::npos) << yaml;  // a default filled in
  auto again = build_config(parse_raw_config(yaml, "resolved"));
  EXPECT_EQ(again.train.epochs, 7);
  EXPECT_EQ(again.seed, 3u);
  EXPECT_EQ(again.name, "demo");
  EXPECT_EQ(again.data.dir, "/tmp/nowhere");
  EXPECT_EQ(again.model.get_string("hidden", ""), "20,10");
  EXPECT_EQ(to_yaml(again), yaml);
}

TEST(Config, ShippedConfigsParse) {
  // Every config in configs/ parses (keys of typed blocks checked; samplers not built here).
  int n = 0;
  for (auto& f : std::filesystem::directory_iterator(std::string(SGMCMC_SOURCE_DIR) + "/configs")) {
    if (f.path().extension() != ".yaml") continue;
    EXPECT_NO_THROW(load_config(f.path().string())) << f.path();
    ++n;
  }
  EXPECT_GT(n, 0);
}
