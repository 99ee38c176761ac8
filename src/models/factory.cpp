#include "models/factory.h"

#include <stdexcept>

#include "compat.h"
#include "models/mlp_chains.h"

namespace sgmcmc {
namespace {

int64_t dim_or(const Dataset& d, const std::string& key, int64_t fallback) {
  auto it = d.dims.find(key);
  return it == d.dims.end() ? fallback : it->second;
}

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& what) {
  throw std::invalid_argument(where + "." + key + ": " + what);
}

std::string int_list_text(const std::vector<int64_t>& v) {
  std::string out;
  for (int64_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

// Each model's keys beside its parser; the defaults are its options struct's.
std::vector<OptionDoc> mlp_docs() {
  const MlpOptions d;
  std::vector<OptionDoc> docs = {
      {"hidden", "list", int_list_text(d.hidden), "hidden layer widths, e.g. 400,400", {}, "> 0 each"},
      {"activation", "choice", d.activation, "sigmoid | relu | tanh", {"sigmoid", "relu", "tanh"}, ""},
  };
  for (auto& l : likelihood_option_docs()) docs.push_back(l);
  return docs;
}

void parse_mlp(const OptionMap& o, Task task, const std::string& where, MlpOptions& m) {
  m.hidden = parse_int_list(o.get_string("hidden", int_list_text(m.hidden)), where + ".hidden");
  m.activation = o.get_choice("activation", m.activation, {"sigmoid", "relu", "tanh"});
  parse_likelihood_options(o, task, m);
}

std::vector<OptionDoc> cnn_docs() {
  const CnnOptions d;
  return {
      {"conv1", "integer", std::to_string(d.conv1), "channels of the first 5x5 convolution", {}, "> 0"},
      {"conv2", "integer", std::to_string(d.conv2), "channels of the second 5x5 convolution", {}, "> 0"},
      {"fc", "integer", std::to_string(d.fc), "units of the fully connected layer", {}, "> 0"},
  };
}

void parse_cnn(const OptionMap& o, CnnOptions& c) {
  c.conv1 = o.get_int("conv1", c.conv1);
  c.conv2 = o.get_int("conv2", c.conv2);
  c.fc = o.get_int("fc", c.fc);
}

std::vector<OptionDoc> torchscript_docs() {
  std::vector<OptionDoc> docs = {
      {"path", "text", "(required)", "the module's file: torch.jit.script(m).save(path)", {}, ""},
  };
  for (auto& l : likelihood_option_docs()) docs.push_back(l);
  return docs;
}

void validate_mlp(const MlpOptions& m, const std::string& where) {
  for (int64_t w : m.hidden)
    if (w <= 0) bad(where, "hidden", "layer widths must be > 0, got " + std::to_string(w));
  validate_likelihood_options(m, where);
}

void parse_torchscript(const OptionMap& o, Task task, TorchScriptOptions& t) {
  t.path = o.get_string("path", "");
  parse_likelihood_options(o, task, t);
}

void validate_torchscript(const TorchScriptOptions& t, const std::string& where) {
  if (t.path.empty()) bad(where, "path", "required for model.name: torchscript (a torch.jit.script(...).save file)");
  validate_likelihood_options(t, where);
}

ModelPtr make_torchscript(const TorchScriptOptions& opts, const Dataset& data, uint64_t seed, int64_t chains,
                          const std::string& where) {
  TorchScriptOptions t = opts;
  t.outputs = t.classification() ? data.num_classes : 1;
  if (chains > 0) {
    auto model = std::make_shared<TorchScriptChains>(t, chains, seed, where);
    model->check_outputs(data.train);
    return model;
  }
  auto model = std::make_shared<TorchScriptModel>(t, where);
  model->check_outputs(data.train);
  return model;
}

void validate_cnn(const CnnOptions& c, const std::string& where) {
  for (auto [key, v] : {std::pair<const char*, int64_t>{"conv1", c.conv1}, {"conv2", c.conv2}, {"fc", c.fc}})
    if (v <= 0) bad(where, key, "must be > 0, got " + std::to_string(v));
}

}  // namespace

const std::vector<ModelEntry>& model_registry() {
  // Keys: exactly what parse_model_options reads for the model (tests/test_config.cpp checks it),
  // from the docs beside each parser.
  static const std::vector<ModelEntry> registry = {
      {"mlp", "multilayer perceptron, softmax or Gaussian likelihood (000 App. H.1, 001 FNN, 002 §5.2)", mlp_docs()},
      {"cnn", "LeNet-style convnet: 2 x (conv 5x5, ReLU, maxpool 2), fc, softmax (001 CNN)", cnn_docs()},
      {"bpmf", "Bayesian probabilistic matrix factorisation (000 §4.3, App. H.2)", bpmf_option_docs()},
      {"torchscript", "a TorchScript module of your own (torch.jit.script(m).save(path)): logits or means",
       torchscript_docs()},
      {"logistic", "Bayesian logistic regression, binary (sigmoid) or multinomial (softmax) (002 §5.1, Table 2)",
       {}},
      {"lda", "semi-collapsed latent Dirichlet allocation on a bag-of-words corpus (002 §5.1, Table 1)",
       lda_option_docs()},
      {"dpfa", "deep Poisson factor analysis: topics under a sigmoid belief network (002 §5.2, Fig. 5)",
       dpfa_option_docs()},
  };
  return registry;
}

ModelEntry::ModelEntry(std::string name_, std::string summary_, std::vector<OptionDoc> options_)
    : name(std::move(name_)), summary(std::move(summary_)), options(std::move(options_)) {
  keys = {"name"};
  for (const auto& d : options) keys.push_back(d.key);
}

std::vector<std::pair<std::string, std::string>> model_names() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& m : model_registry()) out.emplace_back(m.name, m.summary);
  return out;
}

const ModelEntry& find_model(const OptionMap& o) {
  std::vector<std::string> names;
  for (const auto& m : model_registry()) names.push_back(m.name);
  const std::string name = o.get_choice("name", "mlp", names);
  for (const auto& m : model_registry())
    if (m.name == name) return m;
  throw std::logic_error("find_model: " + name);  // unreachable: get_choice checked the name
}

void ModelOptions::validate(const std::string& where) const {
  if (name == "mlp") validate_mlp(mlp, where);
  else if (name == "cnn") validate_cnn(cnn, where);
  else if (name == "bpmf") bpmf.validate();
  else if (name == "torchscript") validate_torchscript(torchscript, where);
  else if (name == "lda") lda.validate(where);
  else if (name == "dpfa") dpfa.validate(where);
  else if (name != "logistic")
    bad(where, "name", "model '" + name + "' is not available in this build (have: mlp, cnn, bpmf, torchscript, logistic, lda, dpfa)");
}

ModelOptions parse_model_options(const OptionMap& o, Task task) {
  const std::string where = o.context().empty() ? "model" : o.context();
  ModelOptions m;
  m.name = find_model(o).name;
  if (m.name == "mlp") parse_mlp(o, task, where, m.mlp);
  else if (m.name == "cnn") parse_cnn(o, m.cnn);
  else if (m.name == "bpmf") m.bpmf = parse_bpmf_options(o);
  else if (m.name == "torchscript") parse_torchscript(o, task, m.torchscript);
  else if (m.name == "lda") m.lda = parse_lda_options(o);
  else if (m.name == "dpfa") m.dpfa = parse_dpfa_options(o);
  m.validate(where);
  return m;
}

void check_model_task(const ModelOptions& m, Task task, const std::string& where) {
  if (m.name != "mlp" && m.name != "torchscript") return;
  const LikelihoodOptions& l = m.name == "mlp" ? static_cast<const LikelihoodOptions&>(m.mlp) : m.torchscript;
  if (l.likelihood == "categorical" && task != Task::kClassification)
    bad(where, "likelihood", "categorical needs a classification data set");
  if (l.likelihood == "gaussian" && task != Task::kRegression)
    bad(where, "likelihood", "gaussian needs a regression data set");
}

ModelPtr make_model(const ModelOptions& opts, const Dataset& data, uint64_t seed, int64_t chains,
                    const std::string& where) {
  opts.validate(where);
  auto gen = compat::make_generator(torch::kCPU, seed * 0xD1B54A32D192ED03ULL + 0x2545F4914F6CDD1DULL);
  if (chains > 0 && opts.name != "mlp" && opts.name != "torchscript")
    throw std::invalid_argument("chains: parallel chains are available for model.name: mlp and torchscript only (got " +
                                opts.name + ")");
  if (opts.name == "mlp") {
    MlpOptions m = opts.mlp;
    m.inputs = dim_or(data, "features", 0);
    if (m.inputs <= 0) bad(where, "name", "mlp needs a data set with a 'features' size");
    check_model_task(opts, data.task, where);
    m.outputs = m.likelihood == "categorical" ? data.num_classes : 1;
    if (chains > 0) return std::make_shared<MlpChains>(m, chains, gen);
    return std::make_shared<Mlp>(m, gen);
  }
  if (opts.name == "cnn") {
    if (data.task != Task::kClassification) bad(where, "name", "cnn needs a classification data set");
    CnnOptions c = opts.cnn;
    c.channels = dim_or(data, "channels", 0);
    c.height = dim_or(data, "height", 0);
    c.width = dim_or(data, "width", 0);
    if (c.channels <= 0 || c.height <= 0 || c.width <= 0)
      bad(where, "name", "cnn needs an image data set (channels/height/width)");
    c.classes = data.num_classes;
    return std::make_shared<Cnn>(c, gen);
  }
  if (opts.name == "torchscript") {
    check_model_task(opts, data.task, where);
    return make_torchscript(opts.torchscript, data, seed, chains, where);
  }
  if (opts.name == "logistic") {
    if (data.task != Task::kClassification) bad(where, "name", "logistic needs a classification data set");
    const int64_t features = dim_or(data, "features", 0);
    if (features <= 0) bad(where, "name", "logistic needs a data set with a 'features' size");
    return std::make_shared<LogisticRegression>(features, data.num_classes);
  }
  if (opts.name == "lda") {
    LdaOptions l = opts.lda;
    l.words = dim_or(data, "words", 0);
    l.documents = dim_or(data, "documents", 0);
    if (l.words <= 0) bad(where, "name", "lda needs a bag-of-words data set (data.format: bow)");
    return std::make_shared<Lda>(l, seed);
  }
  if (opts.name == "dpfa") {
    DpfaOptions d = opts.dpfa;
    d.words = dim_or(data, "words", 0);
    d.documents = dim_or(data, "documents", 0);
    if (d.words <= 0) bad(where, "name", "dpfa needs a bag-of-words data set (data.format: bow)");
    return std::make_shared<Dpfa>(d, seed);
  }
  return make_bpmf(data, opts.bpmf, gen);
}

ModelPtr make_model(const OptionMap& o, const Dataset& data, uint64_t seed, int64_t chains) {
  o.check_known(find_model(o).keys);
  const std::string where = o.context().empty() ? "model" : o.context();
  return make_model(parse_model_options(o, data.task), data, seed, chains, where);
}

}  // namespace sgmcmc
