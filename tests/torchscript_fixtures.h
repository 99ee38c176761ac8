// TorchScript modules and torch.save-style tensor files made in C++ (no Python needed): an MLP with
// the built-in `mlp`'s parameter names and forward, and dicts written by torch::pickle_save (the
// format of Python's torch.save, which torch::pickle_load reads).
#pragma once

#include <torch/script.h>
#include <torch/serialize.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace sgmcmc::test_util {

// A scripted MLP: fc1..fcL (submodules with weight [out, in] and bias [out]), sigmoid between
// layers, forward(x) = fcL(...sigmoid(fc1(x.reshape(n, -1)))): the built-in mlp's computation.
// `ret` replaces the returned expression (e.g. "h.long()" or "h[:, :2]") for bad-input tests.
inline torch::jit::Module scripted_mlp(const std::vector<torch::Tensor>& weights, const std::vector<torch::Tensor>& biases,
                                       const std::string& ret = "h") {
  torch::jit::Module m("__torch__.ScriptedMlp");
  std::string body = "def forward(self, x):\n    h = x.reshape(x.size(0), -1)\n";
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::string name = "fc" + std::to_string(i + 1);
    torch::jit::Module layer("__torch__.Fc" + std::to_string(i + 1));
    layer.register_parameter("weight", weights[i].detach().clone().set_requires_grad(true), false);
    layer.register_parameter("bias", biases[i].detach().clone().set_requires_grad(true), false);
    m.register_module(name, layer);
    body += "    h = torch.linear(h, self." + name + ".weight, self." + name + ".bias)\n";
    if (i + 1 < weights.size()) body += "    h = torch.sigmoid(h)\n";
  }
  body += "    return " + ret + "\n";
  m.define(body);
  return m;
}

// A scripted MLP with fan-in-uniform random weights (sizes[0] inputs, ..., sizes.back() outputs).
inline torch::jit::Module random_scripted_mlp(const std::vector<int64_t>& sizes, const std::string& ret = "h") {
  std::vector<torch::Tensor> w, b;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(sizes[i]));
    w.push_back(torch::empty({sizes[i + 1], sizes[i]}).uniform_(-bound, bound));
    b.push_back(torch::empty({sizes[i + 1]}).uniform_(-bound, bound));
  }
  return scripted_mlp(w, b, ret);
}

inline std::string module_bytes(torch::jit::Module m) {
  std::ostringstream out;
  m.save(out);
  return out.str();
}

// torch::pickle_save of a dict (string -> tensor), as Python's torch.save({...}) writes it.
inline std::string tensor_dict_bytes(const std::map<std::string, torch::Tensor>& tensors) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [k, v] : tensors) dict.insert(k, v);
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  return std::string(bytes.begin(), bytes.end());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace sgmcmc::test_util
