#include "core/kernel_settings.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace sgmcmc {
namespace {

KernelSettings& current() {
  static KernelSettings s;
  return s;
}

using Kind = KernelSettingKey::Kind;

// A boolean member written as one of two words: `when_true` sets it, the other clears it.
KernelSettingKey flag(std::string key, bool KernelSettings::*m, std::vector<std::string> values, std::string when_true,
                      std::string help) {
  const std::string when_false = values[0] == when_true ? values[1] : values[0];
  return {std::move(key), Kind::kChoice, std::move(values), std::move(help),
          [m, when_true, when_false](const KernelSettings& s) { return s.*m ? when_true : when_false; },
          [m, when_true](KernelSettings& s, const std::string& v) { s.*m = v == when_true; }};
}

// A boolean member written as true | false.
KernelSettingKey boolean(std::string key, bool KernelSettings::*m, std::string help) {
  return {std::move(key), Kind::kBool, {"true", "false"}, std::move(help),
          [m](const KernelSettings& s) { return std::string(s.*m ? "true" : "false"); },
          [m](KernelSettings& s, const std::string& v) { s.*m = v == "true"; }};
}

// An enum member whose enumerators are `values` in order.
template <typename E>
KernelSettingKey choice(std::string key, E KernelSettings::*m, std::vector<std::string> values, std::string help) {
  const auto names = values;
  return {std::move(key), Kind::kChoice, std::move(values), std::move(help),
          [m, names](const KernelSettings& s) { return names.at(static_cast<size_t>(s.*m)); },
          [m, names](KernelSettings& s, const std::string& v) {
            s.*m = static_cast<E>(std::find(names.begin(), names.end(), v) - names.begin());
          }};
}

// An int member written as a number, 0 as auto.
KernelSettingKey count(std::string key, int KernelSettings::*m, std::vector<std::string> values, std::string help) {
  return {std::move(key), Kind::kChoice, std::move(values), std::move(help),
          [m](const KernelSettings& s) { return s.*m == 0 ? std::string("auto") : std::to_string(s.*m); },
          [m](KernelSettings& s, const std::string& v) { s.*m = v == "auto" ? 0 : std::stoi(v); }};
}

// A string member, any non-empty text.
KernelSettingKey text(std::string key, std::string KernelSettings::*m, std::string help) {
  return {std::move(key), Kind::kText, {}, std::move(help), [m](const KernelSettings& s) { return s.*m; },
          [m](KernelSettings& s, const std::string& v) { s.*m = v; }};
}

using S = KernelSettings;

}  // namespace

// Every `kernels:` key, once. The help texts are --help-keys' lines; docs/gpu_kernels.md has the
// measurements behind the CUDA defaults.
const std::vector<KernelSettingKey>& kernel_setting_table() {
  static const std::vector<KernelSettingKey> table = {
      flag("matmul", &S::matmul_aten, {"auto", "aten"}, "aten",
           "auto: oneDNN for the models' products where built | aten"),
      flag("noise", &S::noise_portable, {"auto", "portable"}, "portable",
           "auto: AVX-512 Philox where the CPU has it | portable (same bits)"),
      flag("pool", &S::pool_portable, {"auto", "portable"}, "portable",
           "auto: AVX-512 ReLU + max-pool where the CPU has it | portable (same bits)"),
      boolean("byte_rows", &S::byte_rows, "IDX images kept as bytes, widened per minibatch"),
      boolean("prior_fold", &S::prior_fold, "the prior's gradient folded into the sampler's update"),
      flag("cuda_gemm", &S::cuda_gemm_route, {"route", "aten"}, "route",
           "route: float32 products around two slow cuBLAS shapes | aten"),
      flag("cuda_loss", &S::cuda_loss_fused, {"fused", "aten"}, "fused",
           "fused: softmax + cross-entropy in one CUDA kernel | aten"),
      flag("cuda_bpmf", &S::cuda_bpmf_fused, {"fused", "aten"}, "fused", "fused: BPMF's gradient in one CUDA kernel | aten"),
      choice("cuda_mlp", &S::cuda_mlp, {"auto", "fused", "aten"},
             "auto | fused | aten: the MLP's forward + backward in 2 + depth CUDA kernels (classification; auto: "
             "layers of in*out <= 640000)"),
      flag("cuda_mlp_prior", &S::cuda_mlp_prior_fused, {"aten", "fused"}, "fused",
           "fused: the prior's λθ in the fused MLP pass's weight-gradient epilogue | aten"),
      flag("cuda_gather", &S::cuda_gather_fused, {"aten", "fused"}, "fused",
           "fused: the minibatch's images and labels gathered in one CUDA kernel | aten"),
      choice("cuda_mlp_gemm", &S::cuda_mlp_gemm, {"auto", "tiled", "pipelined", "cublas", "cublaslt"},
             "auto | tiled | pipelined | cublas | cublaslt: the fused MLP pass's GEMM kernel (auto: cublaslt for one "
             "chain up to 4 layers (float64: cublas), pipelined for one chain beyond, tiled for chains; cublas: the "
             "hidden layers' products on cuBLAS, up to 4 layers; cublaslt: those products on cuBLASLt, its kernel and "
             "split-K chosen per shape by timing them at the first step)"),
      text("cuda_gemm_cache", &S::cuda_gemm_cache,
           "auto | off | FILE: where kernels.cuda_mlp_gemm: cublaslt keeps its measured kernel choices, so that every "
           "run on a machine takes the same ones (auto: $XDG_CACHE_HOME/sgmcmc/gemm_lt.json, else "
           "~/.cache/sgmcmc/gemm_lt.json)"),
      choice("cuda_mlp_tail", &S::cuda_mlp_tail, {"auto", "gemm", "columns"},
             "auto | gemm | columns: the fused MLP pass's cuBLAS route's last launch (the output layer's weight and "
             "bias gradients, the hidden layers' bias gradients, the prior's λ_W W, the nll) as column blocks that "
             "keep every sum inside one block, or as split-K GEMM blocks (auto: gemm until a GPU run has timed the "
             "column blocks; A/B)"),
      count("cuda_mlp_kparts", &S::cuda_mlp_kparts, {"auto", "1", "2", "4", "8"},
            "auto (1) | 1 | 2 | 4 | 8: the fused MLP pass's cuBLASLt product into its head as that many partial "
            "products over k in one batched product, added in order by the head as it loads its rows (no split-K "
            "reduction kernel; one chain; A/B)"),
      choice("cuda_mlp_forward", &S::cuda_mlp_forward, {"auto", "cublas", "fused"},
             "auto (cublas) | cublas | fused: the fused MLP pass's cuBLAS route's last hidden layer (product, bias, "
             "activation) and its head (output layer, softmax, the output and last hidden layers' gradients g) as a "
             "product, its split-K reduction and the head kernel, or in one launch of row-group tiles whose last "
             "block per row group runs the head, earlier hidden layers as the same tiles without it (one chain; A/B)"),
      choice("cuda_mlp_wgrad", &S::cuda_mlp_wgrad, {"auto", "cublas", "fused"},
             "auto (cublas) | cublas | fused: the fused MLP pass's cuBLAS route's backward sums (every layer's weight "
             "and bias gradients with the prior's terms, the nll) as cuBLASLt products and the pass's last launch, or "
             "in one launch of tiles whose warps split the minibatch's rows, added in a fixed order (one chain; A/B)"),
  };
  return table;
}

const std::vector<std::string>& kernel_setting_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& d : kernel_setting_table()) k.push_back(d.key);
    return k;
  }();
  return keys;
}

std::string kernel_setting_help(const std::string& key) {
  for (const auto& d : kernel_setting_table())
    if (d.key == key) return d.help;
  return "";
}

std::map<std::string, std::string> KernelSettings::to_map() const {
  std::map<std::string, std::string> m;
  for (const auto& d : kernel_setting_table()) m[d.key] = d.get(*this);
  return m;
}

KernelSettings parse_kernel_settings(const OptionMap& b) {
  static const KernelSettings defaults;
  KernelSettings s;
  for (const auto& d : kernel_setting_table()) {
    const std::string fallback = d.get(defaults);
    std::string v;
    switch (d.kind) {
      case Kind::kChoice: v = b.get_choice(d.key, fallback, d.values); break;
      case Kind::kBool: v = b.get_bool(d.key, fallback == "true") ? "true" : "false"; break;
      case Kind::kText:
        v = b.get_string(d.key, fallback);
        if (v.empty()) throw std::invalid_argument(b.context() + "." + d.key + ": empty (auto, off or a file)");
        break;
    }
    d.set(s, v);
  }
  return s;
}

const KernelSettings& kernel_settings() { return current(); }

void set_kernel_settings(const KernelSettings& s) { current() = s; }

}  // namespace sgmcmc
