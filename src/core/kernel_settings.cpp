#include "core/kernel_settings.h"

#include <stdexcept>

namespace sgmcmc {
namespace {

KernelSettings& current() {
  static KernelSettings s;
  return s;
}

// A two-way choice read as `key: first | second`; true when `second` was chosen.
bool pick(const OptionMap& b, const std::string& key, const std::string& first, const std::string& second,
          bool default_second) {
  return b.get_choice(key, default_second ? second : first, {first, second}) == second;
}

// cuda_mlp_forward and cuda_mlp_wgrad: auto | cublas | fused
using MlpLaunch = KernelSettings::MlpLaunch;
std::string launch_text(MlpLaunch l) {
  return l == MlpLaunch::kAuto ? "auto" : l == MlpLaunch::kCublas ? "cublas" : "fused";
}
MlpLaunch launch_of(const OptionMap& b, const std::string& key) {
  const auto v = b.get_choice(key, "auto", {"auto", "cublas", "fused"});
  return v == "auto" ? MlpLaunch::kAuto : v == "cublas" ? MlpLaunch::kCublas : MlpLaunch::kFused;
}

}  // namespace

std::map<std::string, std::string> KernelSettings::to_map() const {
  auto tf = [](bool b) { return std::string(b ? "true" : "false"); };
  return {{"matmul", matmul_aten ? "aten" : "auto"},
          {"noise", noise_portable ? "portable" : "auto"},
          {"pool", pool_portable ? "portable" : "auto"},
          {"byte_rows", tf(byte_rows)},
          {"prior_fold", tf(prior_fold)},
          {"cuda_gemm", cuda_gemm_route ? "route" : "aten"},
          {"cuda_loss", cuda_loss_fused ? "fused" : "aten"},
          {"cuda_bpmf", cuda_bpmf_fused ? "fused" : "aten"},
          {"cuda_gather", cuda_gather_fused ? "fused" : "aten"},
          {"cuda_mlp", cuda_mlp == Choice::kAuto ? "auto" : cuda_mlp == Choice::kFused ? "fused" : "aten"},
          {"cuda_mlp_gemm", cuda_mlp_gemm == MlpGemm::kAuto        ? "auto"
                            : cuda_mlp_gemm == MlpGemm::kTiled     ? "tiled"
                            : cuda_mlp_gemm == MlpGemm::kPipelined ? "pipelined"
                            : cuda_mlp_gemm == MlpGemm::kCublas    ? "cublas"
                                                                   : "cublaslt"},
          {"cuda_mlp_prior", cuda_mlp_prior_fused ? "fused" : "aten"},
          {"cuda_mlp_tail", cuda_mlp_tail == MlpTail::kAuto ? "auto" : cuda_mlp_tail == MlpTail::kGemm ? "gemm" : "columns"},
          {"cuda_mlp_forward", launch_text(cuda_mlp_forward)},
          {"cuda_mlp_wgrad", launch_text(cuda_mlp_wgrad)},
          {"cuda_mlp_kparts", cuda_mlp_kparts == 0 ? "auto" : std::to_string(cuda_mlp_kparts)},
          {"cuda_gemm_cache", cuda_gemm_cache}};
}

const std::vector<std::string>& kernel_setting_keys() {
  static const std::vector<std::string> keys = {"matmul",    "noise",     "pool",      "byte_rows", "prior_fold",
                                                "cuda_gemm", "cuda_loss", "cuda_bpmf", "cuda_mlp", "cuda_mlp_prior",
                                                "cuda_gather", "cuda_mlp_gemm", "cuda_gemm_cache", "cuda_mlp_tail",
                                                "cuda_mlp_kparts", "cuda_mlp_forward", "cuda_mlp_wgrad"};
  return keys;
}

KernelSettings parse_kernel_settings(const OptionMap& b) {
  KernelSettings s;
  s.matmul_aten = pick(b, "matmul", "auto", "aten", false);
  s.noise_portable = pick(b, "noise", "auto", "portable", false);
  s.pool_portable = pick(b, "pool", "auto", "portable", false);
  s.byte_rows = b.get_bool("byte_rows", true);
  s.prior_fold = b.get_bool("prior_fold", true);
  s.cuda_gemm_route = !pick(b, "cuda_gemm", "route", "aten", false);
  s.cuda_loss_fused = !pick(b, "cuda_loss", "fused", "aten", false);
  s.cuda_bpmf_fused = !pick(b, "cuda_bpmf", "fused", "aten", false);
  s.cuda_gather_fused = pick(b, "cuda_gather", "aten", "fused", true);
  const auto mlp = b.get_choice("cuda_mlp", "auto", {"auto", "fused", "aten"});
  s.cuda_mlp = mlp == "auto" ? KernelSettings::Choice::kAuto
               : mlp == "fused" ? KernelSettings::Choice::kFused
                                : KernelSettings::Choice::kAten;
  const auto gemm = b.get_choice("cuda_mlp_gemm", "auto", {"auto", "tiled", "pipelined", "cublas", "cublaslt"});
  s.cuda_mlp_gemm = gemm == "auto"        ? KernelSettings::MlpGemm::kAuto
                    : gemm == "tiled"     ? KernelSettings::MlpGemm::kTiled
                    : gemm == "pipelined" ? KernelSettings::MlpGemm::kPipelined
                    : gemm == "cublas"    ? KernelSettings::MlpGemm::kCublas
                                          : KernelSettings::MlpGemm::kCublasLt;
  s.cuda_mlp_prior_fused = pick(b, "cuda_mlp_prior", "aten", "fused", true);
  const auto tail = b.get_choice("cuda_mlp_tail", "auto", {"auto", "gemm", "columns"});
  s.cuda_mlp_tail = tail == "auto"   ? KernelSettings::MlpTail::kAuto
                    : tail == "gemm" ? KernelSettings::MlpTail::kGemm
                                     : KernelSettings::MlpTail::kColumns;
  s.cuda_mlp_forward = launch_of(b, "cuda_mlp_forward");
  s.cuda_mlp_wgrad = launch_of(b, "cuda_mlp_wgrad");
  const auto kparts = b.get_choice("cuda_mlp_kparts", "auto", {"auto", "1", "2", "4", "8"});
  s.cuda_mlp_kparts = kparts == "auto" ? 0 : std::stoi(kparts);
  s.cuda_gemm_cache = b.get_string("cuda_gemm_cache", "auto");
  if (s.cuda_gemm_cache.empty())
    throw std::invalid_argument(b.context() + ".cuda_gemm_cache: empty (auto, off or a file)");
  return s;
}

const KernelSettings& kernel_settings() { return current(); }

void set_kernel_settings(const KernelSettings& s) { current() = s; }

}  // namespace sgmcmc
