#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "compat.h"
#include "config/experiment_config.h"
#include "data/libsvm.h"
#include "data/load.h"
#include "models/factory.h"
#include "samplers/hmc.h"
#include "samplers/registry.h"
#include "samplers/santa.h"
#include "samplers/sghmc.h"
#include "samplers/sgld.h"
#include "samplers/sgnht.h"
#include "samplers/schedules.h"
#include "tiny_idx.h"
#include "error_of.h"
#include "torchscript_fixtures.h"

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

  // Sampler keys are checked with every other key when the config is built (they used to be checked
  // only when the trainer built the sampler), and by the registry when a sampler is built directly.
  auto samp = write_config("samp", kBase);
  m = error_of([&] { load_config(samp, {"sampler.lrr=0.1"}); });
  EXPECT_NE(m.find(samp + ": sampler.lrr: unknown key (did you mean 'lr'?)"), std::string::npos) << m;
  OptionMap so("sampler");
  so.set("lrr", "0.1");
  auto p = torch::zeros({2}, torch::requires_grad());
  m = error_of([&] { make_sampler("sgld", {ParamGroup({p})}, so, compat::make_generator(torch::kCPU, 1)); });
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
  m = error_of([&] { load_config(path, {"prior.gibbs_start_steps=-2"}); });
  EXPECT_NE(m.find("prior.gibbs_start_steps: must be >= 0, got -2"), std::string::npos) << m;
  m = error_of([&] { load_config(path, {"prior.init=scale"}); });
  EXPECT_NE(m.find("prior.init"), std::string::npos) << m;
  // lr_scaling: per_datum only where the step is lr times the gradient.
  m = error_of([&] { load_config(path, {"sampler.name=psgld", "sampler.lr_scaling=per_datum"}); });
  EXPECT_NE(m.find(path + ": sampler.lr_scaling: per_datum is defined for sgld, sghmc, sgd, sgd-momentum (a step "
                          "of lr times the gradient), not for psgld"),
            std::string::npos) << m;
  m = error_of([&] { load_config(path, {"sampler.lr_scaling=per_batch"}); });
  EXPECT_NE(m.find("sampler.lr_scaling"), std::string::npos) << m;
  EXPECT_EQ(load_config(path, {"sampler.lr_scaling=per_datum"}).lr_scaling, "per_datum");
  EXPECT_EQ(load_config(path).lr_scaling, "total");
  // A cold posterior with a learned λ diverges; with a fixed λ it is allowed.
  m = error_of([&] { load_config(path, {"sampler.temperature=0.3"}); });
  EXPECT_NE(m.find(path + ": sampler.temperature: T = 0.3 < 1 with prior.hyperprior: gamma"), std::string::npos) << m;
  EXPECT_EQ(load_config(path, {"sampler.temperature=0.3", "prior.hyperprior=none"}).prior.hyperprior, "none");
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

// --- the order of the checks: keys, then values, then data -----------------------------------------

TEST(ConfigOrder, TypoedKeyBeatsTheBurnInCheckOnItsDefault) {
  // burn_in 50 >= the default epochs (10): the typo is the real error.
  auto path = write_config("epohcs", "data: {dir: /tmp/nowhere}\nsampler: {name: sgld}\n"
                                     "train: {epohcs: 100, burn_in: 50}\n");
  auto m = error_of([&] { load_config(path); });
  EXPECT_EQ(m, path + ": train.epohcs: unknown key (did you mean 'epochs'?)");
  m = error_of([&] { load_config(write_config("set_epohcs", kBase), {"train.epohcs=100", "train.burn_in=50"}); });
  EXPECT_NE(m.find(": train.epohcs: unknown key (did you mean 'epochs'?)"), std::string::npos) << m;
}

TEST(ConfigOrder, SamplerValueBeforeTheData) {
  // data.dir /tmp/nowhere does not exist: the bad lr is reported by the config, before any file.
  auto path = write_config("lr", kBase);
  auto bare = path.substr(0, path.rfind('/')) + "/bare.yaml";  // a model block without mlp keys
  std::ofstream(bare) << "data: {dir: /tmp/nowhere}\nsampler: {name: sgld}\n";
  auto m = error_of([&] { load_config(path, {"sampler.lr=-1"}); });
  EXPECT_EQ(m, path + ": sgld.lr: must be a finite number > 0, got -1");
  m = error_of([&] { load_config(path, {"sampler.name=sghmc", "sampler.alpha=1.5"}); });
  EXPECT_EQ(m, path + ": sghmc.alpha: must be in (0, 1], got 1.5");
  m = error_of([&] { load_config(path, {"schedule.type=polynomial", "schedule.gamma=2"}); });
  EXPECT_EQ(m, path + ": schedule.gamma: must be in [0, 1], got 2");
  m = error_of([&] { load_config(path, {"schedule.type=step"}); });
  EXPECT_EQ(m, path + ": schedule.every: step schedule needs every > 0 or every_epochs > 0");
  m = error_of([&] { load_config(path, {"model.hidden=10,0"}); });
  EXPECT_EQ(m, path + ": model.hidden: layer widths must be > 0, got 0");
  m = error_of([&] { load_config(bare, {"model.name=cnn", "model.fc=0"}); });
  EXPECT_EQ(m, bare + ": model.fc: must be > 0, got 0");
  m = error_of([&] { load_config(bare, {"model.name=bpmf", "model.dim=0"}); });
  EXPECT_EQ(m, bare + ": model.dim: must be at least 1, got 0");
  m = error_of([&] { load_config(path, {"model.likelihood=gaussian"}); });
  EXPECT_EQ(m, path + ": model.likelihood: gaussian needs a regression data set");
  m = error_of([&] { load_config(path, {"data.format=csv", "data.path=x.csv", "data.test_fraction=1.5"}); });
  EXPECT_EQ(m, path + ": data.test_fraction: must be in (0, 1), got 1.5");
  m = error_of([&] { load_config(path, {"data.format=csv"}); });
  EXPECT_EQ(m, path + ": data.path: missing (the CSV file)");
  m = error_of([&] { load_config(path, {"data.format=ratings", "data.path=r.dat", "data.folds=1"}); });
  EXPECT_EQ(m, path + ": data.folds: must be at least 2, got 1");
  m = error_of([&] { load_config(path, {"chains=2", "model.noise_prior=gamma"}); });
  EXPECT_EQ(m, path + ": model.noise_prior: gamma is not available with parallel chains (use fixed)");
  // Single values before the cross-field checks: epochs=abc is reported, not the burn-in.
  m = error_of([&] { load_config(path, {"train.burn_in=50", "train.epochs=abc"}); });
  EXPECT_EQ(m, path + ": train.epochs: expected an integer, got 'abc'");
}

TEST(ConfigOrder, UnknownKeyInAPluginBlockBeforeAnyValueError) {
  auto path = write_config("order", kBase);
  // A value error in each block (the data block is first in the file, output last) ...
  const std::vector<std::string> bad_values = {"data.val_size=-3", "model.hidden=0", "prior.precision=-1",
                                               "sampler.lr=-1",   "train.epochs=abc", "train.burn_in=9",
                                               "output.progress=maybe", "seed=-1"};
  // ... loses against an unknown key in any plug-in block.
  const std::vector<std::pair<std::string, std::string>> unknown = {
      {"sampler.lrr=1", "sampler.lrr: unknown key (did you mean 'lr'?)"},
      {"schedule.gama=1", "schedule.gama: unknown key"},
      {"model.hiden=4", "model.hiden: unknown key (did you mean 'hidden'?)"},
      {"data.val_sise=4", "data.val_sise: unknown key (did you mean 'val_size'?)"},
      {"output.save_sample=true", "output.save_sample: unknown key (did you mean 'save_samples'?)"},
  };
  for (const auto& bad : bad_values)
    for (const auto& [set, expect] : unknown) {
      auto m = error_of([&] { load_config(path, {bad, set}); });
      EXPECT_EQ(m, path + ": " + expect) << bad << " + " << set;
    }
  // Keys of another plug-in are unknown to the chosen one: gamma is polynomial's, not constant's.
  auto m = error_of([&] { load_config(path, {"schedule.gamma=0.5"}); });
  EXPECT_EQ(m, path + ": schedule.gamma: unknown key");
  m = error_of([&] { load_config(path, {"data.folds=3"}); });
  EXPECT_EQ(m, path + ": data.folds: unknown key");
  // The plug-in's name is the one value read in phase 1; an unknown one is reported there.
  m = error_of([&] { load_config(path, {"sampler.name=sghcm", "train.epochs=abc"}); });
  EXPECT_NE(m.find(path + ": sampler.name: unknown sampler 'sghcm'"), std::string::npos) << m;
}

// --- declared keys == the keys the parsers and factories read ---------------------------------------

namespace {

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

Dataset tiny_dataset(const std::string& model) {
  Dataset d;
  if (model == "bpmf") {
    d.task = Task::kRegression;
    d.dims = {{"users", 3}, {"items", 4}};
    d.train = Batch{torch::tensor({0, 1, 2, 3, 2, 0}, torch::kInt64).reshape({3, 2}), torch::tensor({1.0f, 2.0f, 3.0f})};
  } else if (model == "lda" || model == "dpfa") {  // a bag-of-words split (data/bow.h): document, word ids
    d.task = Task::kClassification;
    d.num_classes = 2;
    d.dims = {{"words", 5}, {"classes", 2}, {"documents", 2}};
    d.train = Batch{torch::tensor({0, 1, 4, 1, 2, -1}, torch::kInt64).reshape({2, 3}), torch::zeros({2}, torch::kInt64)};
  } else {
    d.task = Task::kClassification;
    d.num_classes = 2;
    d.dims = {{"channels", 1}, {"height", 16}, {"width", 16}, {"features", 256}};
    d.train = Batch{torch::rand({2, 1, 16, 16}), torch::tensor({0, 1}, torch::kInt64)};
  }
  return d;
}

}  // namespace

TEST(ConfigDeclarations, SamplerKeysAreWhatTheParserReads) {
  for (const auto& e : sampler_registry()) {
    OptionMap checked("sampler");
    e.check(checked);
    EXPECT_EQ(checked.read_keys(), as_set(e.keys)) << e.name;
    OptionMap built("sampler");
    auto p = torch::zeros({3}, torch::requires_grad());
    e.make({ParamGroup({p})}, built, compat::make_generator(torch::kCPU, 1));
    EXPECT_EQ(built.read_keys(), as_set(e.keys)) << e.name;
    // make_sampler: the same, plus `name` and `lr_scaling` (checked, read by the config, not the sampler).
    OptionMap named("sampler");
    named.set("name", e.name);
    make_sampler(e.name, {ParamGroup({p})}, named, compat::make_generator(torch::kCPU, 1));
    auto keys = as_set(e.keys);
    EXPECT_EQ(named.read_keys(), keys) << e.name;
    keys.insert("name");
    keys.insert("lr_scaling");
    EXPECT_EQ(as_set(sampler_keys(e)), keys) << e.name;
  }
}

// The option tables' defaults are what the parsers fall back to (the resolved options of an empty
// block), every key has a meaning, and the traits agree with the built samplers.
TEST(ConfigDeclarations, SamplerTablesAndTraitsAgreeWithTheSamplers) {
  for (const auto& e : sampler_registry()) {
    ASSERT_EQ(e.options.size(), e.keys.size()) << e.name;
    OptionMap o("sampler");
    auto p = torch::zeros({3}, torch::requires_grad());
    SamplerPtr s = e.make({ParamGroup({p})}, o, compat::make_generator(torch::kCPU, 1));
    const auto resolved = o.resolved();
    for (const auto& d : e.options) {
      EXPECT_FALSE(d.meaning.empty()) << e.name << "." << d.key;
      auto it = resolved.find(d.key);
      if (d.type == "optional real") {
        EXPECT_EQ(it, resolved.end()) << e.name << "." << d.key;  // unset unless given
        continue;
      }
      ASSERT_NE(it, resolved.end()) << e.name << "." << d.key;
      EXPECT_EQ(it->second, d.default_text) << e.name << "." << d.key;
      if (d.type == "choice")
        EXPECT_NE(std::find(d.choices.begin(), d.choices.end(), d.default_text), d.choices.end()) << d.key;
    }
    EXPECT_EQ(s->name(), e.name);
    EXPECT_EQ(s->is_sampler(), e.is_sampler) << e.name;
    EXPECT_EQ(s->runs_at_zero_temperature(), e.zero_temperature) << e.name;
    EXPECT_EQ(e.chains, e.coupled_by.empty()) << e.name;
    EXPECT_EQ(e.divergence_hint.find("{"), e.divergence_hint.rfind("{")) << e.name;  // at most one placeholder
  }
  // The hint's placeholder is the option's value, given or default.
  OptionMap o("sampler");
  o.set("alpha", "0.2");
  const SamplerEntry& sghmc = find_sampler("sghmc", o);
  sghmc.check(o);
  EXPECT_NE(divergence_hint(sghmc, o).find("friction alpha=0.2 "), std::string::npos) << divergence_hint(sghmc, o);
  OptionMap d("sampler");
  find_sampler("sgnht", d).check(d);
  EXPECT_NE(divergence_hint(find_sampler("sgnht", d), d).find("diffusion=1)"), std::string::npos);
}

// A table's range check is the message the samplers always gave, and its parser the reader's.
TEST(ConfigDeclarations, SamplerTableMessages) {
  EXPECT_EQ(error_of([] { SghmcOptions().alpha(0).validate(); }), "sghmc.alpha: must be in (0, 1], got 0");
  EXPECT_EQ(error_of([] { SghmcOptions().integrator("rk4").validate(); }),
            "sghmc.integrator: must be one of {euler, ssi}, got 'rk4'");
  EXPECT_EQ(error_of([] { HmcOptions().leapfrog_steps(0).validate(); }), "hmc.leapfrog_steps: must be >= 1, got 0");
  EXPECT_EQ(error_of([] { SgnhtOptions().xi_init(NAN).validate(); }), "sgnht.xi_init: must be finite, got nan");
  EXPECT_EQ(error_of([] { SgldOptions().lr(-1).validate(); }), "sgld.lr: must be a finite number > 0, got -1");
  EXPECT_EQ(error_of([] { SantaOptions().thermostat_init("fixed_point").validate(); }),
            "santa.thermostat_init: fixed_point needs integrator: ssi (Euler's fixed point exists only for g < 1/2)");
  OptionMap o("sampler");
  o.set("integrator", "rk4");
  EXPECT_EQ(error_of([&] { sghmc_option_table().parse(o); }),
            "sampler.integrator: 'rk4' is not one of {euler, ssi}");
}

// The plug-ins' key docs (help-keys): one per declared key, each with a meaning; defaults where the
// parser has one are what it falls back to.
TEST(ConfigDeclarations, PluginKeyDocsCoverTheirKeys) {
  for (const auto& e : model_registry()) {
    std::vector<std::string> keys = {"name"};
    for (const auto& d : e.options) {
      keys.push_back(d.key);
      EXPECT_FALSE(d.meaning.empty()) << e.name << "." << d.key;
      EXPECT_FALSE(d.default_text.empty()) << e.name << "." << d.key;
    }
    EXPECT_EQ(keys, e.keys) << e.name;
  }
  for (const auto& t : schedule_types()) {
    OptionMap o("schedule");
    o.set("type", t.name);
    if (t.name == "step") o.set("every", "2");
    parse_schedule_options(o);
    const auto resolved = o.resolved();
    for (const auto& d : t.options)
      if (d.key != "every") EXPECT_EQ(resolved.at(d.key), d.default_text) << t.name << "." << d.key;
  }
  for (const auto& f : data_formats())
    for (const auto& d : f.options) EXPECT_FALSE(d.meaning.empty()) << f.name << "." << d.key;
}

TEST(ConfigDeclarations, ScheduleKeysAreWhatTheParserReads) {
  for (const auto& t : schedule_types()) {
    auto opts = [&] {
      OptionMap o("schedule");
      o.set("type", t.name);
      if (t.name == "step") o.set("every", "2");  // step needs every or every_epochs
      return o;
    };
    OptionMap parsed = opts();
    parse_schedule_options(parsed);
    EXPECT_EQ(parsed.read_keys(), as_set(t.keys)) << t.name;
    OptionMap built = opts();
    make_schedule(built, 0.1, 100, 10);
    EXPECT_EQ(built.read_keys(), as_set(t.keys)) << t.name;
  }
}

TEST(ConfigDeclarations, ModelKeysAreWhatTheParserAndFactoryRead) {
  for (const auto& e : model_registry()) {
    const Dataset d = tiny_dataset(e.name);
    OptionMap parsed("model"), built("model");
    parsed.set("name", e.name);
    built.set("name", e.name);
    if (e.name == "torchscript") {  // the one model whose file is required
      const std::string path = test_util::temp_dir("decl_ts") + "/m.pt";
      test_util::write_bytes(path, test_util::module_bytes(test_util::random_scripted_mlp({256, 3, 2})));
      parsed.set("path", path);
      built.set("path", path);
    }
    parse_model_options(parsed, d.task);
    EXPECT_EQ(parsed.read_keys(), as_set(e.keys)) << e.name;
    make_model(built, d, 1);
    EXPECT_EQ(built.read_keys(), as_set(e.keys)) << e.name;
  }
}

TEST(ConfigDeclarations, DataFormatAndTypedBlockKeysAreWhatTheConfigReads) {
  for (const auto& f : data_formats()) {
    std::string text = "sampler: {name: sgld}\ndata: {format: " + f.name + (f.name == "idx" ? "" : ", path: x") + "}\n";
    if (f.name != "idx") text += "model: {name: bpmf}\n";  // a regression model for the regression formats
    auto c = build_config(parse_raw_config(text, "decl.yaml"));
    auto declared = as_set(typed_block_keys("data"));
    // the image format's keys are read for the formats they apply to (idx; val_size and ood also tensors
    // and libsvm), so that another format's resolved config.yaml does not carry them
    if (f.name != "idx")
      for (const char* k : {"dir", "normalize"}) declared.erase(k);
    if (f.name == "csv" || f.name == "ratings")
      for (const char* k : {"val_size", "ood", "ood_classes", "ood_dir"}) declared.erase(k);
    if (f.name == "bow")  // documents split by val_size; no out-of-distribution set
      for (const char* k : {"ood", "ood_classes", "ood_dir"}) declared.erase(k);
    declared.insert(f.keys.begin(), f.keys.end());
    EXPECT_EQ(c.data.options.read_keys(), declared) << f.name;
    // The format's parser alone reads exactly the format's own keys.
    OptionMap o("data");
    o.set("path", "x");
    if (f.name == "csv") parse_csv_options(o);
    if (f.name == "ratings") parse_ratings_options(o);
    if (f.name == "tensors") parse_tensors_options(o);
    if (f.name == "libsvm") parse_libsvm_options(o);
    if (f.name == "bow") parse_bow_options(o);
    EXPECT_EQ(o.read_keys(), as_set(f.keys)) << f.name;
  }
  auto c = build_config(parse_raw_config("sampler: {name: sgld}\n", "decl.yaml"));
  for (const char* block : {"", "prior", "train", "output"})
    EXPECT_EQ(c.typed_blocks.at(block).read_keys(), as_set(typed_block_keys(block))) << block;
}

// A key given twice is an error naming both lines (yaml-cpp keeps both, and the last would win).
TEST(Config, DuplicateKeysAreErrorsNamingBothLines) {
  try {
    parse_raw_config("seed: 1\nsampler: {name: sgld}\nseed: 2\n", "dup.yaml");
    ADD_FAILURE() << "a duplicate top-level key was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "dup.yaml: seed: given twice (lines 1 and 3)");
  }
  try {
    parse_raw_config("sampler:\n  name: sgld\n  lr: 1.0e-5\n  lr: 2.0e-5\n", "dup.yaml");
    ADD_FAILURE() << "a duplicate key inside a block was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "dup.yaml: sampler.lr: given twice (lines 3 and 4)");
  }
}
