#include "models/factory.h"

#include <stdexcept>

#include "compat.h"
#include "config/experiment_config.h"
#include "models/bpmf.h"
#include "models/cnn.h"
#include "models/mlp.h"
#include "models/mlp_chains.h"

namespace sgmcmc {
namespace {

int64_t dim_or(const Dataset& d, const std::string& key, int64_t fallback) {
  auto it = d.dims.find(key);
  return it == d.dims.end() ? fallback : it->second;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> model_names() {
  return {{"mlp", "multilayer perceptron, softmax or Gaussian likelihood (000 App. H.1, 001 FNN, 002 §5.2)"},
          {"cnn", "LeNet-style convnet: 2 x (conv 5x5, ReLU, maxpool 2), fc, softmax (001 CNN)"},
          {"bpmf", "Bayesian probabilistic matrix factorisation (000 §4.3, App. H.2)"}};
}

ModelPtr make_model(const OptionMap& o, const Dataset& data, uint64_t seed, int64_t chains) {
  const std::string where = o.context().empty() ? "model" : o.context();
  std::string name = o.get_choice("name", "mlp", {"mlp", "cnn", "bpmf"});
  auto gen = compat::make_generator(torch::kCPU, seed * 0xD1B54A32D192ED03ULL + 0x2545F4914F6CDD1DULL);
  if (chains > 0 && name != "mlp")
    throw std::invalid_argument("chains: parallel chains are available for model.name: mlp only (got " + name + ")");
  ModelPtr model;
  if (name == "mlp") {
    MlpOptions m;
    m.inputs = dim_or(data, "features", 0);
    if (m.inputs <= 0) throw std::invalid_argument(where + ".name: mlp needs a data set with a 'features' size");
    m.hidden = parse_int_list(o.get_string("hidden", "100"), where + ".hidden");
    m.activation = o.get_choice("activation", "sigmoid", {"sigmoid", "relu", "tanh"});
    m.likelihood = o.get_choice("likelihood", data.task == Task::kRegression ? "gaussian" : "categorical",
                                {"categorical", "gaussian"});
    if (m.likelihood == "categorical" && data.task != Task::kClassification)
      throw std::invalid_argument(where + ".likelihood: categorical needs a classification data set");
    if (m.likelihood == "gaussian" && data.task != Task::kRegression)
      throw std::invalid_argument(where + ".likelihood: gaussian needs a regression data set");
    m.outputs = m.likelihood == "categorical" ? data.num_classes : 1;
    m.noise_precision = o.get_double("noise_precision", 1.0);
    if (!(m.noise_precision > 0)) throw std::invalid_argument(where + ".noise_precision: must be > 0");
    m.sample_noise = o.get_choice("noise_prior", "fixed", {"fixed", "gamma"}) == "gamma";
    m.noise_alpha = o.get_double("noise_alpha", 1.0);
    m.noise_beta = o.get_double("noise_beta", 1.0);
    if (!(m.noise_alpha > 0) || !(m.noise_beta > 0))
      throw std::invalid_argument(where + ".noise_alpha/noise_beta: must be > 0");
    if (chains > 0) model = std::make_shared<MlpChains>(m, chains, gen);
    else model = std::make_shared<Mlp>(m, gen);
  } else if (name == "cnn") {
    if (data.task != Task::kClassification) throw std::invalid_argument(where + ".name: cnn needs a classification data set");
    CnnOptions c;
    c.channels = dim_or(data, "channels", 0);
    c.height = dim_or(data, "height", 0);
    c.width = dim_or(data, "width", 0);
    if (c.channels <= 0 || c.height <= 0 || c.width <= 0)
      throw std::invalid_argument(where + ".name: cnn needs an image data set (channels/height/width)");
    c.classes = data.num_classes;
    c.conv1 = o.get_int("conv1", 20);
    c.conv2 = o.get_int("conv2", 50);
    c.fc = o.get_int("fc", 500);
    model = std::make_shared<Cnn>(c, gen);
  } else if (name == "bpmf") {
    model = make_bpmf(data, o, gen);
  } else {
    throw std::invalid_argument(where + ".name: model '" + name + "' is not available in this build yet (have: mlp, cnn, bpmf)");
  }
  o.check_all_used();
  return model;
}

}  // namespace sgmcmc
