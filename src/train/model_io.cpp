#include "train/model_io.h"

#include <torch/serialize.h>

#include <exception>
#include <stdexcept>

#include "data/tensors.h"

namespace sgmcmc {

void save_model(torch::serialize::OutputArchive& ar, Model& model, const std::string& prefix) {
  for (const auto& item : model.named_parameters()) ar.write(prefix + item.key(), item.value().detach());
  for (const auto& item : model.named_buffers()) ar.write(prefix + item.key(), item.value(), /*is_buffer=*/true);
}

void load_model(torch::serialize::InputArchive& ar, Model& model, const std::string& prefix, const std::string& file) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    torch::Tensor t;
    if (!ar.try_read(prefix + item.key(), t)) throw std::invalid_argument(file + ": missing parameter " + item.key());
    if (t.sizes() != item.value().sizes())
      throw std::invalid_argument(file + ": parameter " + item.key() + " has the wrong shape");
    item.value().copy_(t);
  }
  for (auto& item : model.named_buffers()) {
    torch::Tensor t;
    if (ar.try_read(prefix + item.key(), t, /*is_buffer=*/true)) item.value().copy_(t);
  }
}

void save_parameter_file(const std::string& path, Model& model, const std::map<std::string, double>& scalars) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  for (const auto& item : model.named_parameters()) dict.insert(item.key(), item.value().detach().cpu());
  for (const auto& item : model.named_buffers()) dict.insert(item.key(), item.value().detach().cpu());
  for (const auto& [key, x] : scalars)
    if (!dict.contains(key))
      dict.insert(key, key == "step" ? c10::IValue(static_cast<int64_t>(x)) : c10::IValue(x));
  write_pickle_file(path, c10::IValue(dict));
}

void load_parameter_file(const std::string& path, Model& model, const torch::Device& device) {
  std::map<std::string, torch::Tensor> dict;
  try {
    dict = read_tensor_dict(path);
  } catch (const std::invalid_argument&) {
    const auto not_a_dict = std::current_exception();
    torch::serialize::InputArchive ar;  // a run made before the dict format?
    try {
      ar.load_from(path, device);
    } catch (const c10::Error&) {
      std::rethrow_exception(not_a_dict);  // neither: the dict reader's message
    }
    return load_model(ar, model, "", path);
  }
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    auto it = dict.find(item.key());
    if (it == dict.end()) throw std::invalid_argument(path + ": missing parameter " + item.key());
    if (it->second.sizes() != item.value().sizes())
      throw std::invalid_argument(path + ": parameter " + item.key() + " has the wrong shape");
    item.value().copy_(it->second);
  }
  for (auto& item : model.named_buffers()) {
    auto it = dict.find(item.key());
    if (it != dict.end()) item.value().copy_(it->second);
  }
}

}  // namespace sgmcmc
