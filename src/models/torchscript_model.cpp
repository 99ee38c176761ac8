#include "models/torchscript_model.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "core/error_text.h"

namespace sgmcmc {
namespace {

torch::jit::Module load_module(const std::string& path, const std::string& where) {
  if (path.empty()) throw std::invalid_argument(where + ".path: required for model.name: torchscript");
  if (!std::filesystem::is_regular_file(path))
    throw std::invalid_argument(where + ".path: '" + path + "': no such file");
  try {
    return torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    throw std::invalid_argument(where + ".path: '" + path +
                                "': not a TorchScript archive (save one with torch.jit.script(model).save(path)): " +
                                first_line(e.what_without_backtrace()));
  }
}

}  // namespace

TorchScriptModel::TorchScriptModel(const TorchScriptOptions& o, const std::string& where)
    : options_(o), where_(where), module_(load_module(o.path, where)) {
  module_.train(true);
  try {
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      std::string leaf;
      auto& owner = owner_of(p.name, leaf);
      if (p.value.requires_grad()) owner.register_parameter(leaf, p.value);
      else owner.register_buffer(leaf, p.value);
    }
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) {
      std::string leaf;
      owner_of(b.name, leaf).register_buffer(leaf, b.value);
    }
    if (!options_.classification())
      tau_ = register_buffer("tau", torch::tensor(options_.noise_precision, torch::kFloat32));
  } catch (const c10::Error& e) {
    throw std::invalid_argument(where + ".path: '" + o.path + "': " + first_line(e.what_without_backtrace()));
  }
  if (parameters().empty())
    throw std::invalid_argument(where + ".path: '" + o.path + "': the module has no parameter with requires_grad");
}

torch::nn::Module& TorchScriptModel::owner_of(const std::string& dotted, std::string& leaf) {
  torch::nn::Module* m = this;
  size_t start = 0;
  for (size_t dot = dotted.find('.'); dot != std::string::npos; dot = dotted.find('.', start)) {
    const std::string part = dotted.substr(start, dot - start);
    auto children = m->named_children();
    if (auto* child = children.find(part)) m = child->get();
    else m = m->register_module(part, std::make_shared<torch::nn::Module>()).get();
    start = dot + 1;
  }
  leaf = dotted.substr(start);
  return *m;
}

Task TorchScriptModel::task() const {
  return options_.classification() ? Task::kClassification : Task::kRegression;
}

torch::Tensor TorchScriptModel::forward(const torch::Tensor& inputs) {
  return module_.forward({inputs}).toTensor();
}

torch::Tensor TorchScriptModel::nll(const Batch& batch) {
  return likelihood_nll(options_, forward(batch.inputs), batch, tau_);
}

torch::Tensor TorchScriptModel::predict(const torch::Tensor& inputs) {
  return likelihood_predict(options_, forward(inputs));
}

void TorchScriptModel::gibbs_step_likelihood(const Batch& data, at::Generator& gen) {
  if (options_.classification() || !options_.sample_noise) return;
  const bool was_training = is_training();
  train(false);
  gibbs_step_noise(options_, [&](const torch::Tensor& x) { return predict(x); }, data, tau_, gen);
  train(was_training);
}

std::map<std::string, double> TorchScriptModel::likelihood_hyperparameters() const {
  if (options_.classification()) return {};
  return {{"tau", tau_.item<double>()}};
}

void TorchScriptModel::train(bool on) {
  torch::nn::Module::train(on);
  module_.train(on);
}

void TorchScriptModel::check_outputs(const Batch& sample) {
  const int64_t n = std::min<int64_t>(2, sample.size());
  if (n == 0) return;
  const bool was_training = is_training();
  train(false);
  torch::NoGradGuard no_grad;
  c10::IValue out;
  try {
    out = module_.forward({sample.inputs.slice(0, 0, n)});
  } catch (const std::exception& e) {  // c10::Error, or torch::jit::JITException with a TorchScript traceback
    train(was_training);
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw std::invalid_argument(where_ + ": forward failed on inputs of shape " + shape_text(sample.inputs.slice(0, 0, n)) +
                                ": " + (c10_error ? first_line(c10_error->what_without_backtrace()) : last_line(e.what())));
  }
  train(was_training);
  if (!out.isTensor())
    throw std::invalid_argument(where_ + ": forward must return one Tensor, got " + out.tagKind());
  const auto f = out.toTensor();
  if (!f.is_floating_point())
    throw std::invalid_argument(where_ + ": forward returned dtype " + std::string(c10::toString(f.scalar_type())) +
                                ", expected a floating-point tensor");
  const bool ok = options_.classification()
                      ? (f.dim() == 2 && f.size(0) == n && f.size(1) == options_.outputs)
                      : (f.size(0) == n && (f.dim() == 1 || (f.dim() == 2 && f.size(1) == 1)));
  if (!ok)
    throw std::invalid_argument(
        where_ + ": forward returned shape " + shape_text(f) + " for " + std::to_string(n) + " inputs, expected " +
        (options_.classification() ? "[" + std::to_string(n) + ", " + std::to_string(options_.outputs) + "] logits"
                                   : "[" + std::to_string(n) + "] or [" + std::to_string(n) + ", 1] means"));
}

}  // namespace sgmcmc
