// Which implementation runs a piece of the step: the `kernels:` block of a config.
//
// Every choice here gives the same numbers up to float rounding (the tests compare the paths); they
// exist so that a user can put a step back on ATen's ops when a kernel misbehaves on their machine,
// and so that the benches can A/B a kernel against its reference. The trainer installs the run's
// settings once, before the first step (set_kernel_settings); summary.json records them.
//
// Each key is declared once, in kernel_settings.cpp's table (kernel_setting_table): its values, its
// meaning (`sgmcmc train --help-keys` prints it) and the member below it sets; the member's initializer
// is its default. Parsing, to_map() and kernel_setting_keys() read that table. Which kernels run by
// default on CUDA, the variants still waiting for a GPU's timing, and those measured slower and removed:
// docs/gpu_kernels.md.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/option_map.h"

namespace sgmcmc {

struct KernelSettings {
  bool matmul_aten = false;  // matmul: aten
  bool noise_portable = false;
  bool pool_portable = false;
  bool byte_rows = true;
  bool prior_fold = true;
  bool cuda_gemm_route = true;
  bool cuda_loss_fused = true;
  bool cuda_bpmf_fused = true;
  bool cuda_gather_fused = true;
  enum class Choice { kAuto, kFused, kAten };
  Choice cuda_mlp = Choice::kAuto;
  enum class MlpGemm { kAuto, kTiled, kPipelined, kCublas, kCublasLt };
  MlpGemm cuda_mlp_gemm = MlpGemm::kAuto;
  bool cuda_mlp_prior_fused = true;
  int cuda_mlp_kparts = 0;   // 0: auto (1)
  enum class MlpTail { kAuto, kGemm, kColumns };
  MlpTail cuda_mlp_tail = MlpTail::kAuto;
  // cuda_mlp_forward, cuda_mlp_wgrad: that half of the route on cuBLAS(Lt) products or in the pass's own launch
  enum class MlpLaunch { kAuto, kCublas, kFused };
  MlpLaunch cuda_mlp_forward = MlpLaunch::kAuto;
  MlpLaunch cuda_mlp_wgrad = MlpLaunch::kAuto;
  std::string cuda_gemm_cache = "auto";  // auto | off | a file (kernels/cuda_mlp/gemm_lt_cache.h)

  // The block as key -> text, every key present (summary.json, --help-keys).
  std::map<std::string, std::string> to_map() const;
  bool operator==(const KernelSettings& o) const { return to_map() == o.to_map(); }
};

// One `kernels:` key: its text values (kChoice: one of `values`; kBool: true | false; kText: any non-empty
// text), its --help-keys meaning, and the member it reads and writes as that text.
struct KernelSettingKey {
  enum class Kind { kChoice, kBool, kText };
  std::string key;
  Kind kind = Kind::kChoice;
  std::vector<std::string> values;
  std::string help;
  std::function<std::string(const KernelSettings&)> get;
  std::function<void(KernelSettings&, const std::string&)> set;
};
const std::vector<KernelSettingKey>& kernel_setting_table();
const std::vector<std::string>& kernel_setting_keys();  // the table's keys, in its order
// The key's --help-keys meaning ("" for a key the table lacks).
std::string kernel_setting_help(const std::string& key);
// Reads the `kernels:` block (unknown keys were rejected by the caller's check_known).
// std::invalid_argument "<context>.<key>: ..." on a bad value.
KernelSettings parse_kernel_settings(const OptionMap& block);

// The settings the kernels read: the defaults until a run installs its own.
const KernelSettings& kernel_settings();
void set_kernel_settings(const KernelSettings& s);

// Installs settings for a scope and puts the previous ones back (tests, benches).
class ScopedKernelSettings {
 public:
  explicit ScopedKernelSettings(const KernelSettings& s) : saved_(kernel_settings()) { set_kernel_settings(s); }
  ~ScopedKernelSettings() { set_kernel_settings(saved_); }
  ScopedKernelSettings(const ScopedKernelSettings&) = delete;
  ScopedKernelSettings& operator=(const ScopedKernelSettings&) = delete;

 private:
  KernelSettings saved_;
};

}  // namespace sgmcmc
