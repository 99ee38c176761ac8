#include "config/experiment_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/load.h"
#include "models/factory.h"
#include "samplers/registry.h"
#include "samplers/schedules.h"

namespace sgmcmc {
namespace {

const std::vector<std::string> kBlocks = {"data",  "model", "prior",  "sampler",
                                          "schedule", "train", "output", "distributed", "kernels"};
const std::vector<std::string> kTopLevel = {"name", "seed", "device", "chains"};

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw std::invalid_argument(source + ": " + what);
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  std::string near = nearest(word, candidates);
  return near.empty() ? "" : " (did you mean '" + near + "'?)";
}

std::string scalar_or_list(const YAML::Node& node, const std::string& source, const std::string& path) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsNull()) return "";
  if (node.IsSequence()) {
    std::string out;
    for (const auto& item : node) {
      if (!item.IsScalar()) fail(source, path + ": list items must be scalars");
      out += (out.empty() ? "" : ",") + item.Scalar();
    }
    return out;
  }
  if (path == "prior.groups") {  // the one mapping-valued key: {group: pattern, ...} in order
    std::string out;
    for (const auto& item : node) {
      if (!item.first.IsScalar() || !item.second.IsScalar())
        fail(source, path + ": expected a mapping of group names to name patterns");
      out += (out.empty() ? "" : ",") + item.first.Scalar() + "=" + item.second.Scalar();
    }
    return out;
  }
  fail(source, path + ": expected a value or a list, got a mapping (nesting is one level: block.key)");
}

void check_block(const std::string& source, const std::string& block) {
  if (std::find(kBlocks.begin(), kBlocks.end(), block) == kBlocks.end()) {
    std::vector<std::string> all = kBlocks;
    all.insert(all.end(), kTopLevel.begin(), kTopLevel.end());
    fail(source, block + ": unknown key" + suggestion(block, all));
  }
}

void check_positive_int(const std::string& where, int64_t v) {
  if (v <= 0) throw std::invalid_argument(where + ": must be > 0, got " + std::to_string(v));
}
void check_nonneg_int(const std::string& where, int64_t v) {
  if (v < 0) throw std::invalid_argument(where + ": must be >= 0, got " + std::to_string(v));
}
void check_positive(const std::string& where, double v) {
  if (!(v > 0)) {
    std::ostringstream s;
    s << where << ": must be > 0, got " << v;
    throw std::invalid_argument(s.str());
  }
}

}  // namespace

std::string ExperimentConfig::sampler_name() const { return sampler.get_string("name", ""); }

namespace {

// A key given twice in one mapping (yaml-cpp keeps both; the last would silently win): an error
// naming both lines.
void check_no_duplicates(const YAML::Node& map, const std::string& source, const std::string& where) {
  std::map<std::string, int> first_line;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) continue;
    const std::string key = kv.first.Scalar();
    const int line = kv.first.Mark().line + 1;
    auto [it, fresh] = first_line.emplace(key, line);
    if (!fresh)
      fail(source, (where.empty() ? "" : where + ".") + key + ": given twice (lines " + std::to_string(it->second) +
                       " and " + std::to_string(line) + ")");
  }
}

// The blocks of a parsed YAML document into `raw`.
void read_blocks(const YAML::Node& root, const std::string& source, RawConfig& raw) {
  check_no_duplicates(root, source, "");
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) fail(source, "keys must be plain names (data, model, sampler, ...)");
    std::string key = kv.first.as<std::string>();
    const YAML::Node& value = kv.second;
    if (std::find(kTopLevel.begin(), kTopLevel.end(), key) != kTopLevel.end()) {
      if (!value.IsScalar()) fail(source, key + ": expected a scalar value");
      raw.blocks[""].set(key, value.Scalar());
      continue;
    }
    check_block(source, key);
    if (value.IsNull()) continue;
    if (!value.IsMap()) fail(source, key + ": expected a mapping of options");
    check_no_duplicates(value, source, key);
    for (const auto& item : value) {
      if (!item.first.IsScalar()) fail(source, key + ": keys must be plain names");
      std::string k = item.first.as<std::string>();
      raw.blocks[key].set(k, scalar_or_list(item.second, source, key + "." + k));
    }
  }
}

}  // namespace

RawConfig parse_raw_config(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(source, "YAML syntax error at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  RawConfig raw;
  raw.source = source;
  raw.blocks[""] = OptionMap(source + ":");
  for (const auto& b : kBlocks) raw.blocks[b] = OptionMap(source + ": " + b);
  if (root.IsNull()) return raw;
  if (!root.IsMap()) fail(source, "expected a mapping of blocks (data:, model:, sampler:, ...)");
  try {
    read_blocks(root, source, raw);
  } catch (const YAML::Exception& e) {
    // Keys that are not scalars (`? [a, b]: 1`), and the like: still one line naming the file.
    fail(source, "YAML error at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return raw;
}

RawConfig read_raw_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::invalid_argument(path + ": is a directory, not a config file (give a YAML file; --resume DIR continues a run)");
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open config file");
  std::stringstream ss;
  ss << in.rdbuf();
  RawConfig raw = parse_raw_config(ss.str(), path);
  // Default run name: the file stem.
  if (!raw.blocks[""].has("name")) raw.blocks[""].set("name", std::filesystem::path(path).stem().string());
  return raw;
}

void apply_override(RawConfig& raw, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("--set " + assignment + ": expected key=value (e.g. train.epochs=5)");
  std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  auto dot = key.find('.');
  if (dot == std::string::npos) {
    if (std::find(kTopLevel.begin(), kTopLevel.end(), key) == kTopLevel.end()) {
      std::vector<std::string> all = kTopLevel;
      for (const auto& b : kBlocks) all.push_back(b + ".");
      throw std::invalid_argument("--set " + assignment + ": unknown key '" + key + "'" + suggestion(key, all));
    }
    raw.blocks[""].set(key, value);
    return;
  }
  std::string block = key.substr(0, dot), sub = key.substr(dot + 1);
  if (std::find(kBlocks.begin(), kBlocks.end(), block) == kBlocks.end())
    throw std::invalid_argument("--set " + assignment + ": unknown block '" + block + "'" +
                                suggestion(block, kBlocks));
  if (sub.empty() || sub.find('.') != std::string::npos)
    throw std::invalid_argument("--set " + assignment + ": expected block.key=value");
  // Unknown keys inside a block are caught by build_config (phase 1, before any value is read).
  raw.blocks[block].set(sub, value);
}

namespace {

// The keys of the typed blocks: exactly what the read_* functions below read (tests/test_config.cpp
// checks it). The data block's format-specific keys are declared in data/load.cpp (data_formats()).
const std::vector<std::string> kDataKeys = {"format",    "dir", "val_size",    "train_limit", "test_limit",
                                            "normalize", "ood", "ood_classes", "ood_dir"};
const std::vector<std::string> kPriorKeys = {"precision",         "hyperprior",         "alpha",
                                             "beta",              "init",               "gibbs_every_epochs",
                                             "gibbs_every_steps", "gibbs_start_epochs", "gibbs_start_steps",
                                             "groups"};
const std::vector<std::string> kTrainKeys = {"epochs", "steps", "batch_size", "burn_in", "burn_in_steps", "thin",
                                             "eval_every", "eval_every_steps", "eval_batch_size", "eval_lag", "chain_minibatch", "threads",
                                             "fused", "tf32", "flush_denormal", "graph", "graph_steps", "graph_epoch",
                                             "backward", "require_healthy"};
const std::vector<std::string> kOutputKeys = {"dir",        "save_samples",  "max_samples", "max_sample_mb",
                                              "checkpoint", "checkpoint_every_seconds", "progress"};

}  // namespace

const std::vector<std::string>& typed_block_keys(const std::string& block) {
  static const std::vector<std::string> none;
  if (block.empty()) return kTopLevel;
  if (block == "data") return kDataKeys;
  if (block == "prior") return kPriorKeys;
  if (block == "train") return kTrainKeys;
  if (block == "output") return kOutputKeys;
  if (block == "distributed") return distributed_keys();
  if (block == "kernels") return kernel_setting_keys();
  return none;
}

namespace {

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The plug-ins a config chose, known after phase 1.
struct Plugins {
  const DataFormat* data = nullptr;
  const ModelEntry* model = nullptr;
  const SamplerEntry* sampler = nullptr;
  const ScheduleType* schedule = nullptr;
  Task task = Task::kClassification;  // of the data set (data_task, once the data block is read)
};

// Phase 1: every key of every block is known (reads only the plug-in choices: data.format,
// model.name, sampler.name, schedule.type).
Plugins check_keys(std::map<std::string, OptionMap>& b, const std::string& src) {
  Plugins p;
  b[""].check_known(kTopLevel);
  p.data = &find_data_format(b["data"]);
  b["data"].check_known(concat(kDataKeys, p.data->keys));
  p.model = &find_model(b["model"]);
  b["model"].check_known(p.model->keys);
  b["prior"].check_known(kPriorKeys);
  const std::string sampler = b["sampler"].get_string("name", "");
  if (sampler.empty()) fail(src, "sampler.name: missing (e.g. sampler: {name: sgld, lr: 1e-5})");
  p.sampler = &find_sampler(sampler, b["sampler"]);
  b["sampler"].check_known(sampler_keys(*p.sampler));
  p.schedule = &find_schedule_type(b["schedule"]);
  b["schedule"].check_known(p.schedule->keys);
  b["train"].check_known(kTrainKeys);
  b["output"].check_known(kOutputKeys);
  b["distributed"].check_known(distributed_keys());
  b["kernels"].check_known(kernel_setting_keys());
  return p;
}

// Phase 2, one function per block: values that need no data.
void read_top(const OptionMap& top, ExperimentConfig& c) {
  const std::string& src = c.source;
  c.name = top.get_string("name", "run");
  int64_t seed = top.get_int("seed", 1);
  check_nonneg_int(src + ": seed", seed);
  c.seed = static_cast<uint64_t>(seed);
  c.device = top.get_string("device", "cpu");
  if (c.device != "cpu" && c.device.rfind("cuda", 0) != 0)
    fail(src, "device: must be cpu, cuda or cuda:N, got '" + c.device + "'");
  if (auto chains = top.get_optional_int("chains")) {  // no default: 0 means "not set"
    c.chains = *chains;
    if (c.chains < 1 || c.chains > 100000)
      fail(src, "chains: must be between 1 and 100000, got " + std::to_string(c.chains));
  }
}

// A key whose value is a non-negative integer or `auto` (the default; returned as -1): resolved from
// the data set's size once it is loaded (train/run_plan.h, data/load.h).
int64_t int_or_auto(const OptionMap& o, const std::string& key) {
  if (o.get_string(key, "auto") == "auto") return -1;
  const int64_t v = o.get_int(key, 0);
  check_nonneg_int(o.context() + "." + key, v);
  return v;
}

void read_data(const OptionMap& d, DataConfig& data) {
  data.format = d.get_string("format", "idx");  // checked in phase 1
  // The image keys (and val_size where the format splits by its own keys) are read for the formats they
  // apply to, or where given: a CSV run's config.yaml then carries no IDX directory or pixel scaling.
  const bool idx = data.format == "idx";
  const auto applies = [&](const std::string& key, bool format_uses) { return format_uses || d.has(key); };
  if (applies("dir", idx)) data.dir = d.get_string("dir", "/usr/share/datasets/fashion-mnist");
  if (applies("val_size", idx || data.format == "tensors" || data.format == "libsvm" || data.format == "bow"))
    data.val_size = int_or_auto(d, "val_size");
  data.train_limit = d.get_int("train_limit", 0);
  check_nonneg_int(d.context() + ".train_limit", data.train_limit);
  data.test_limit = d.get_int("test_limit", 0);
  check_nonneg_int(d.context() + ".test_limit", data.test_limit);
  if (applies("normalize", idx)) data.normalize = d.get_bool("normalize", true);
  const bool ood = applies("ood", idx || data.format == "tensors" || data.format == "libsvm");
  data.ood.kind = ood ? d.get_choice("ood", "none", ood_kinds()) : "none";
  const std::string classes = applies("ood_classes", ood) ? d.get_string("ood_classes", "") : "";
  data.ood.classes = classes.empty() ? std::vector<int64_t>{} : parse_int_list(classes, d.context() + ".ood_classes");
  data.ood.dir = applies("ood_dir", ood) ? d.get_string("ood_dir", "") : "";
  data.ood.normalize = data.normalize;
  if (data.ood.kind == "classes" && data.ood.classes.empty())
    throw std::invalid_argument(d.context() + ".ood_classes: needed for ood: classes (e.g. [5, 6, 7, 8, 9])");
  if (data.ood.kind == "idx" && data.ood.dir.empty())
    throw std::invalid_argument(d.context() + ".ood_dir: needed for ood: idx (another IDX directory)");
  data.options = d;
  parse_data_format_options(data);  // csv / ratings keys, typed and validated
}

// "name=pattern,name=pattern" (a YAML mapping, or --set prior.groups=conv=*conv*,rest=*).
std::vector<std::pair<std::string, std::string>> parse_group_patterns(const std::string& text, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw std::invalid_argument(where + ": expected per_tensor, single, model or a mapping {group: pattern}, got '" +
                                  text + "'");
    const std::string name = item.substr(0, eq);
    for (const auto& [n, _] : out)
      if (n == name) throw std::invalid_argument(where + ": group '" + name + "' is named twice");
    out.emplace_back(name, item.substr(eq + 1));
  }
  if (out.empty()) throw std::invalid_argument(where + ": no group given");
  return out;
}

void read_prior(const OptionMap& p, PriorConfig& prior) {
  prior.precision = p.get_double("precision", 1.0);
  check_positive(p.context() + ".precision", prior.precision);
  prior.hyperprior = p.get_choice("hyperprior", "gamma", {"gamma", "none"});
  prior.alpha = p.get_double("alpha", 1.0);
  check_positive(p.context() + ".alpha", prior.alpha);
  prior.beta = p.get_double("beta", 1.0);
  check_positive(p.context() + ".beta", prior.beta);
  prior.gibbs_every_epochs = p.get_int("gibbs_every_epochs", 1);
  check_nonneg_int(p.context() + ".gibbs_every_epochs", prior.gibbs_every_epochs);
  prior.gibbs_every_steps = p.get_int("gibbs_every_steps", 0);
  check_nonneg_int(p.context() + ".gibbs_every_steps", prior.gibbs_every_steps);
  prior.gibbs_start_epochs = p.get_int("gibbs_start_epochs", 0);
  check_nonneg_int(p.context() + ".gibbs_start_epochs", prior.gibbs_start_epochs);
  prior.gibbs_start_steps = p.get_int("gibbs_start_steps", -1);
  if (prior.gibbs_start_steps < -1)
    throw std::invalid_argument(p.context() + ".gibbs_start_steps: must be >= 0, got " +
                                std::to_string(prior.gibbs_start_steps));
  prior.init = p.get_choice("init", "precision", {"precision", "prior_draw", "init_scale"});
  prior.groups = p.get_string("groups", "per_tensor");
  prior.group_patterns.clear();
  if (prior.groups == "per_tensor" || prior.groups == "single" || prior.groups == "model") return;
  prior.group_patterns = parse_group_patterns(prior.groups, p.context() + ".groups");
  prior.groups = "patterns";
}

void read_train(const OptionMap& t, TrainConfig& train, const std::string& src) {
  train.epochs = int_or_auto(t, "epochs");
  if (train.epochs == 0) check_positive_int(t.context() + ".epochs", train.epochs);
  train.steps = t.get_int("steps", 0);
  check_nonneg_int(t.context() + ".steps", train.steps);
  train.batch_size = int_or_auto(t, "batch_size");
  if (train.batch_size == 0) check_positive_int(t.context() + ".batch_size", train.batch_size);
  train.burn_in = t.get_string("burn_in", "auto") == "auto" ? -1.0 : t.get_double("burn_in", 0);
  if (train.burn_in < 0 && train.burn_in != -1.0) fail(src, "train.burn_in: must be >= 0 epochs (or auto)");
  train.burn_in_steps = t.get_int("burn_in_steps", -1);
  train.thin = t.get_int("thin", 0);
  check_nonneg_int(t.context() + ".thin", train.thin);
  train.eval_every = t.get_int("eval_every", 1);
  check_positive_int(t.context() + ".eval_every", train.eval_every);
  train.eval_every_steps = t.get_int("eval_every_steps", 0);
  check_nonneg_int(t.context() + ".eval_every_steps", train.eval_every_steps);
  train.eval_lag = int_or_auto(t, "eval_lag");
  train.chain_minibatch_shared = t.get_choice("chain_minibatch", "own", {"own", "shared"}) == "shared";
  train.eval_batch_size = t.get_int("eval_batch_size", 10000);
  check_positive_int(t.context() + ".eval_batch_size", train.eval_batch_size);
  train.threads = t.get_int("threads", 0);
  check_nonneg_int(t.context() + ".threads", train.threads);
  // A bound, not the machine's count: a config may be written on one machine and run on a larger one; past
  // this, threads are an error of the value (100000 started 18,760 threads and 2.2 GB of stacks).
  if (train.threads > kMaxThreads)
    throw std::invalid_argument(t.context() + ".threads: " + std::to_string(train.threads) + " is more than " +
                                std::to_string(kMaxThreads) + " (0 leaves LibTorch's default: one per core)");
  train.fused = t.get_bool("fused", true);
  train.tf32 = t.get_bool("tf32", false);
  train.flush_denormal = t.get_bool("flush_denormal", true);
  train.graph_auto = t.get_string("graph", "auto") == "auto";
  train.graph = train.graph_auto ? false : t.get_bool("graph", false);
  if (const std::string gs = t.get_string("graph_steps", "auto"); gs == "auto" || gs == "epoch") {
    train.graph_steps = gs == "auto" ? -1 : 0;
  } else {
    char* end = nullptr;
    const long long v = std::strtoll(gs.c_str(), &end, 10);
    if (end == gs.c_str() || *end != '\0' || v < 1 || v > (1LL << 30))
      fail(src, "train.graph_steps: expected a number of steps >= 1, epoch or auto, got '" + gs + "'");
    train.graph_steps = v;
  }
  train.graph_epoch_auto = t.get_string("graph_epoch", "auto") == "auto";
  train.graph_epoch = train.graph_epoch_auto ? false : t.get_bool("graph_epoch", false);
  train.backward = t.get_choice("backward", "auto", {"auto", "autograd"});
  train.require_healthy = t.get_bool("require_healthy", true);
}

void read_output(const OptionMap& o, OutputConfig& output) {
  output.dir = o.get_string("dir", "");
  output.save_samples = o.get_string("save_samples", "auto");
  if (output.save_samples != "auto") output.save_samples = o.get_bool("save_samples", false) ? "true" : "false";
  output.max_samples = o.get_int("max_samples", 100);
  if (output.max_samples < 1)
    throw std::invalid_argument(o.context() + ".max_samples: must be >= 1, got " + std::to_string(output.max_samples));
  output.max_sample_mb = o.get_double("max_sample_mb", 1024);
  if (!(output.max_sample_mb > 0))
    throw std::invalid_argument(o.context() + ".max_sample_mb: must be > 0");
  output.checkpoint = o.get_bool("checkpoint", true);
  output.checkpoint_every_seconds = o.get_double("checkpoint_every_seconds", 60);
  if (!(output.checkpoint_every_seconds >= 0)) {
    std::ostringstream m;
    m << "output.checkpoint_every_seconds: must be >= 0, got " << output.checkpoint_every_seconds;
    throw std::invalid_argument(m.str());
  }
  output.progress = o.get_bool("progress", true);
}

// Runs `f`; an std::invalid_argument from it is rethrown naming the config file first (the
// plug-ins' own messages start with their name: "sgld.lr: ...", "schedule.b: ...").
template <class F>
void in_file(const std::string& src, F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    if (what.rfind(src, 0) == 0) throw;
    fail(src, what);
  }
}

// Phase 2 for the plug-in blocks: the chosen model's, sampler's and schedule's options, parsed and
// validated by the same parsers their factories use. Returns the parsed model options.
ModelOptions check_plugin_values(const Plugins& p, std::map<std::string, OptionMap>& b, const std::string& src) {
  ModelOptions model;
  in_file(src, [&] { model = parse_model_options(b["model"], p.task); });
  in_file(src, [&] { p.sampler->check(b["sampler"]); });
  in_file(src, [&] { parse_schedule_options(b["schedule"]); });
  return model;
}

std::string read_lr_scaling(const OptionMap& sampler, const SamplerEntry& entry) {
  const std::string scaling = sampler.get_choice("lr_scaling", "total", {"total", "per_datum"});
  if (scaling == "per_datum" && !entry.lr_per_datum) {
    std::string names;  // the samplers it applies to, from the registry
    for (const auto& e : sampler_registry())
      if (e.lr_per_datum) names += (names.empty() ? "" : ", ") + e.name;
    throw std::invalid_argument(sampler.context() + ".lr_scaling: per_datum is defined for " + names +
                                " (a step of lr times the gradient), not for " + entry.name);
  }
  return scaling;
}

// Phase 2, last: checks across fields and blocks, once every single value is known to be valid.
void check_cross_fields(const ExperimentConfig& c, const ModelOptions& model, const Plugins& p,
                        const OptionMap& train_block) {
  const std::string& src = c.source;
  if (c.train.steps == 0 && c.train.epochs > 0 && c.train.burn_in >= static_cast<double>(c.train.epochs))
    fail(src, "train.burn_in: burn-in (" + train_block.get_string("burn_in", "") +
                  " epochs) must be shorter than train.epochs (" + std::to_string(c.train.epochs) + ")");
  in_file(src, [&] { check_model_task(model, p.task, c.model.context()); });
  if (c.chains > 0 && model.name != "mlp" && model.name != "torchscript")
    fail(src, "chains: parallel chains are available for model.name: mlp and torchscript only (got " + model.name + ")");
  if (c.chains > 0 && (model.name == "mlp" ? model.mlp.sample_noise : model.torchscript.sample_noise))
    fail(src, "model.noise_prior: gamma is not available with parallel chains (use fixed)");
  // exp(−U/T) with a Gamma hyperprior on λ: in directions the data do not constrain, θ's scale is
  // T/λ, the Gibbs step answers λ/T, and λ grows geometrically (the tempered joint is improper in λ).
  if (c.prior.hyperprior == "gamma" && c.sampler.has("temperature") && c.sampler.get_double("temperature", 1) < 1)
    fail(src, "sampler.temperature: T = " + c.sampler.get_string("temperature", "") +
                  " < 1 with prior.hyperprior: gamma has no stationary distribution (λ grows without bound; "
                  "docs/uncertainty.md); fix λ with prior.hyperprior: none");
  if (c.chains > 1 && !p.sampler->chains) fail(src, "chains: " + chains_refusal(p.sampler->name));
}

}  // namespace

ExperimentConfig build_config(RawConfig raw) {
  ExperimentConfig c;
  c.source = raw.source;
  const std::string& src = raw.source;
  for (const auto& b : kBlocks) raw.blocks.try_emplace(b, OptionMap(src + ": " + b));
  raw.blocks.try_emplace("", OptionMap(src + ":"));
  auto& b = raw.blocks;

  // Phase 1: keys. Phase 2: values, block by block, then across blocks. (Phase 3, the data, is
  // load_dataset's.)
  Plugins plugins = check_keys(b, src);
  if (b["sampler"].get_string("lr", "auto") == "auto") {  // the step size is the pilot's (train/lr_pilot.h)
    c.lr_auto = true;
    b["sampler"].erase("lr");
  }
  read_top(b[""], c);
  read_data(b["data"], c.data);
  plugins.task = data_task(c.data);
  read_prior(b["prior"], c.prior);
  read_train(b["train"], c.train, src);
  in_file(src, [&] { read_output(b["output"], c.output); });
  c.distributed = parse_distributed_options(b["distributed"]);
  c.kernels = parse_kernel_settings(b["kernels"]);
  // A Gaussian likelihood's τ is Gibbs-sampled by default, except for parallel chains in one model, which
  // hold one fixed τ (models/mlp_chains.h): there the default is fixed (config.yaml records it).
  if (c.chains > 0 && !b["model"].has("noise_prior")) b["model"].set("noise_prior", "fixed");
  const ModelOptions model = check_plugin_values(plugins, b, src);
  c.lr_scaling = read_lr_scaling(b["sampler"], *plugins.sampler);
  c.model = b["model"];
  c.sampler = b["sampler"];
  c.schedule = b["schedule"];
  check_cross_fields(c, model, plugins, b["train"]);

  c.typed_blocks[""] = b[""];
  c.typed_blocks["prior"] = b["prior"];
  c.typed_blocks["train"] = b["train"];
  c.typed_blocks["output"] = b["output"];
  c.typed_blocks["distributed"] = b["distributed"];
  c.typed_blocks["kernels"] = b["kernels"];
  return c;
}

ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  RawConfig raw = read_raw_config(path);
  for (const auto& a : overrides) apply_override(raw, a);
  return build_config(std::move(raw));
}

std::string to_yaml(const ExperimentConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  auto top_it = c.typed_blocks.find("");
  if (top_it != c.typed_blocks.end()) {
    for (const auto& [k, v] : top_it->second.resolved()) out << YAML::Key << k << YAML::Value << v;
  } else {
    out << YAML::Key << "name" << YAML::Value << c.name << YAML::Key << "seed" << YAML::Value << c.seed
        << YAML::Key << "device" << YAML::Value << c.device;
  }
  auto block = [&](const std::string& name, const OptionMap& m) {
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : m.resolved()) out << YAML::Key << k << YAML::Value << v;
    out << YAML::EndMap;
  };
  auto typed = [&](const std::string& name) {
    auto it = c.typed_blocks.find(name);
    block(name, it == c.typed_blocks.end() ? OptionMap() : it->second);
  };
  block("data", c.data.options);
  block("model", c.model);
  typed("prior");
  block("sampler", c.sampler);
  block("schedule", c.schedule);
  typed("train");
  typed("output");
  if (auto it = c.typed_blocks.find("distributed"); it != c.typed_blocks.end() && !it->second.values().empty())
    typed("distributed");  // only when the config has the block: single-process configs stay as they were
  if (auto it = c.typed_blocks.find("kernels"); it != c.typed_blocks.end() && !it->second.values().empty())
    typed("kernels");  // likewise; summary.json records the whole block either way
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}


}  // namespace sgmcmc
