#include "models/torchscript_model.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "compat.h"
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

// The torch::nn::Module under `root` that holds the dotted name's last part (created as empty
// modules on the way), so that the names of the module's tensors stay theirs here.
torch::nn::Module& nn_owner(torch::nn::Module& root, const std::string& dotted, std::string& leaf) {
  torch::nn::Module* m = &root;
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

// The TorchScript submodule that holds the dotted name's last part.
torch::jit::Module jit_owner(const torch::jit::Module& root, const std::string& dotted, std::string& leaf) {
  torch::jit::Module m = root;
  size_t start = 0;
  for (size_t dot = dotted.find('.'); dot != std::string::npos; dot = dotted.find('.', start)) {
    m = m.attr(dotted.substr(start, dot - start)).toModule();
    start = dot + 1;
  }
  leaf = dotted.substr(start);
  return m;
}

// Runs forward on the first two examples of `sample` (eval mode, no gradient): one floating tensor of
// the likelihood's shape, else std::invalid_argument "<where>: ...".
void check_module_outputs(torch::jit::Module& module, const TorchScriptOptions& options, const std::string& where,
                          const Batch& sample) {
  const int64_t n = std::min<int64_t>(2, sample.size());
  if (n == 0) return;
  const bool was_training = module.is_training();
  module.train(false);
  torch::NoGradGuard no_grad;
  c10::IValue out;
  try {
    out = module.forward({sample.inputs.slice(0, 0, n)});
  } catch (const std::exception& e) {  // c10::Error, or torch::jit::JITException with a TorchScript traceback
    module.train(was_training);
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw std::invalid_argument(where + ": forward failed on inputs of shape " + shape_text(sample.inputs.slice(0, 0, n)) +
                                ": " + (c10_error ? first_line(c10_error->what_without_backtrace()) : last_line(e.what())));
  }
  module.train(was_training);
  if (!out.isTensor())
    throw std::invalid_argument(where + ": forward must return one Tensor, got " + out.tagKind());
  const auto f = out.toTensor();
  if (!f.is_floating_point())
    throw std::invalid_argument(where + ": forward returned dtype " + std::string(c10::toString(f.scalar_type())) +
                                ", expected a floating-point tensor");
  const bool ok = options.classification()
                      ? (f.dim() == 2 && f.size(0) == n && f.size(1) == options.outputs)
                      : (f.size(0) == n && (f.dim() == 1 || (f.dim() == 2 && f.size(1) == 1)));
  if (!ok)
    throw std::invalid_argument(
        where + ": forward returned shape " + shape_text(f) + " for " + std::to_string(n) + " inputs, expected " +
        (options.classification() ? "[" + std::to_string(n) + ", " + std::to_string(options.outputs) + "] logits"
                                  : "[" + std::to_string(n) + "] or [" + std::to_string(n) + ", 1] means"));
}

// {"tau": τ} for a regression likelihood, nothing for a categorical one.
std::map<std::string, double> tau_values(const TorchScriptOptions& options, const torch::Tensor& tau) {
  if (options.classification()) return {};
  return {{"tau", tau.item<double>()}};
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
  return nn_owner(*this, dotted, leaf);
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
  return tau_values(options_, tau_);
}

void TorchScriptModel::train(bool on) {
  torch::nn::Module::train(on);
  module_.train(on);
}

void TorchScriptModel::check_outputs(const Batch& sample) { check_module_outputs(module_, options_, where_, sample); }

// ---------------------------------------------------------------------------------------------
TorchScriptChains::TorchScriptChains(const TorchScriptOptions& o, int64_t chains, uint64_t seed, const std::string& where)
    : options_(o), where_(where), chains_(chains), module_(load_module(o.path, where)) {
  if (chains < 1) throw std::invalid_argument("chains: must be >= 1, got " + std::to_string(chains));
  module_.train(true);
  torch::NoGradGuard no_grad;
  auto stack = [&](const std::string& name, const torch::Tensor& t, bool param) {
    std::string leaf;
    torch::jit::Module owner = jit_owner(module_, name, leaf);
    auto& nn = nn_owner(*this, name, leaf);
    std::vector<int64_t> reps(t.dim() + 1, 1);
    reps[0] = chains_;
    torch::Tensor stacked = t.detach().unsqueeze(0).repeat(reps).contiguous();
    if (param && t.is_floating_point()) {
      // chain c >= 1: the saved values plus N(0, (0.1 rms)^2), from the seed and c
      const double rms = t.detach().to(torch::kFloat64).pow(2).mean().sqrt().item<double>();
      const double scale = kTorchScriptChainJitter * (rms > 0 ? rms : 1.0);
      for (int64_t c = 1; c < chains_; ++c) {
        auto gen = compat::make_generator(torch::kCPU, seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(c) * 7919 + slots_.size());
        stacked[c].add_(at::normal(0.0, scale, t.sizes(), gen).to(t.options()));
      }
    }
    if (param) stacked = nn.register_parameter(leaf, stacked.requires_grad_(true));
    else stacked = nn.register_buffer(leaf, stacked);
    slots_.push_back({owner, leaf, stacked});
  };
  try {
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) stack(p.name, p.value, p.value.requires_grad());
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) stack(b.name, b.value, false);
    if (!options_.classification())
      tau_ = register_buffer("tau", torch::tensor(options_.noise_precision, torch::kFloat32));
  } catch (const c10::Error& e) {
    throw std::invalid_argument(where + ".path: '" + o.path + "': " + first_line(e.what_without_backtrace()));
  }
  if (parameters().empty())
    throw std::invalid_argument(where + ".path: '" + o.path + "': the module has no parameter with requires_grad");
}

void TorchScriptChains::point_at(int64_t c) {
  // Views of the registered tensors as they are now (a sampler's flat buffer or a device move
  // replaces their storage, never the tensors themselves).
  for (auto& s : slots_) s.owner.setattr(s.leaf, s.stacked.select(0, c));
}

Task TorchScriptChains::task() const {
  return options_.classification() ? Task::kClassification : Task::kRegression;
}

torch::Tensor TorchScriptChains::forward(int64_t c, const torch::Tensor& inputs) {
  point_at(c);
  return module_.forward({inputs}).toTensor();
}

torch::Tensor TorchScriptChains::nll(const Batch& batch) {
  const bool shared = minibatch_shared();
  if (!shared && batch.size() % chains_ != 0)
    throw std::invalid_argument(where_ + ": a batch of " + std::to_string(batch.size()) + " examples for " +
                                std::to_string(chains_) + " chains");
  const int64_t n = shared ? batch.size() : batch.size() / chains_;
  torch::Tensor total;
  for (int64_t c = 0; c < chains_; ++c) {
    const Batch part = shared ? batch : Batch{batch.inputs.narrow(0, c * n, n), batch.targets.narrow(0, c * n, n)};
    auto nll = likelihood_nll(options_, forward(c, part.inputs), part, tau_);
    total = total.defined() ? total + nll : nll;
  }
  return total;
}

torch::Tensor TorchScriptChains::predict_chains(const torch::Tensor& inputs) {
  std::vector<torch::Tensor> out;
  for (int64_t c = 0; c < chains_; ++c) out.push_back(likelihood_predict(options_, forward(c, inputs)));
  return torch::stack(out, 0);
}

torch::Tensor TorchScriptChains::predict(const torch::Tensor& inputs) { return predict_chains(inputs).mean(0); }

std::map<std::string, double> TorchScriptChains::likelihood_hyperparameters() const {
  return tau_values(options_, tau_);
}

void TorchScriptChains::train(bool on) {
  torch::nn::Module::train(on);
  module_.train(on);
}

void TorchScriptChains::check_outputs(const Batch& sample) {
  point_at(0);
  check_module_outputs(module_, options_, where_, sample);
}

}  // namespace sgmcmc
