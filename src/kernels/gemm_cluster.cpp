// The cluster products' plan, layout check and CPU reference (kernels/gemm_cluster.h); the kernel is in
// gemm_cluster_cuda.cu.
#include "kernels/gemm_cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace sgmcmc::kernels {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up4(int64_t v) { return ceil_div(v, 4) * 4; }

// An operand [rows, cols] contiguous along one dimension, the other stride a multiple of 4 (16-byte
// rows of float32 at a 16-byte aligned start), and `contig_extent_ok` where it is contiguous along the
// dimension that is not k.
bool operand_ok(const torch::Tensor& t, int k_dim) {
  const int other = 1 - k_dim;
  const bool k_contig = t.stride(k_dim) == 1, o_contig = t.stride(other) == 1;
  if (!k_contig && !o_contig) return false;
  const int64_t lead = k_contig ? t.stride(other) : t.stride(k_dim);
  if (lead % 4 != 0 || lead < 0) return false;
  if (reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  if (!k_contig && t.size(other) % 4 != 0) return false;  // float4 along m (n) stays inside the matrix
  const int64_t last = (t.size(0) - 1) * t.stride(0) + (t.size(1) - 1) * t.stride(1);
  return last < std::numeric_limits<int32_t>::max();
}

}  // namespace

GemmClusterPlan gemm_cluster_plan(int64_t m, int64_t n, int64_t k, int sms) {
  using P = GemmClusterPlan;
  P p;
  p.tiles_m = static_cast<int>(ceil_div(m, P::kTile));
  p.tiles_n = static_cast<int>(ceil_div(n, P::kTile));
  const int64_t tiles = int64_t{p.tiles_m} * p.tiles_n;
  const int64_t want = std::clamp<int64_t>(std::max(sms, 1) / std::max<int64_t>(tiles, 1), 1, P::kMaxSplits);
  // each split at least 32 of k (or all of it): shorter ones cost more in the reduction than they save
  const int64_t chunk = std::max(round_up4(ceil_div(k, want)), std::min<int64_t>(round_up4(k), 32));
  p.k_chunk = static_cast<int>(chunk);
  p.splits = static_cast<int>(ceil_div(k, chunk));
  p.stage_k = static_cast<int>(std::min<int64_t>(chunk, P::kMaxStageK));
  p.blocks = tiles * p.splits;
  p.smem_bytes = std::max<size_t>(size_t{2} * p.stage_k * P::kTile, size_t{P::kTile} * P::kTile) * sizeof(float);
  return p;
}

bool gemm_cluster_layout_ok(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c) {
  if (a.dim() != 2 || b.dim() != 2 || c.dim() != 2) return false;
  if (a.scalar_type() != torch::kFloat32 || b.scalar_type() != torch::kFloat32 || c.scalar_type() != torch::kFloat32)
    return false;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (m < 1 || n < 1 || k < 1 || b.size(0) != k || c.size(0) != m || c.size(1) != n) return false;
  if (k % 4 != 0 || c.stride(1) != 1 || (m > 1 && c.stride(0) < n)) return false;
  if ((m - 1) * c.stride(0) + n > std::numeric_limits<int32_t>::max()) return false;
  return operand_ok(a, 1) && operand_ok(b, 0);
}

torch::Tensor gemm_cluster_reference(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
                                     bool accumulate, const GemmClusterPlan& plan) {
  const auto A = a.to(torch::kCPU, torch::kFloat32).contiguous();
  const auto B = b.to(torch::kCPU, torch::kFloat32).contiguous();
  auto C = c.to(torch::kCPU, torch::kFloat32).contiguous().clone();
  const int64_t m = A.size(0), k = A.size(1), n = B.size(1);
  const float* pa = A.data_ptr<float>();
  const float* pb = B.data_ptr<float>();
  float* pc = C.data_ptr<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int s = 0; s < plan.splits; ++s) {
        const int64_t k0 = int64_t{s} * plan.k_chunk, k1 = std::min(k, k0 + plan.k_chunk);
        float part = 0;
        for (int64_t q = k0; q < k1; ++q) part = std::fma(pa[i * k + q], pb[q * n + j], part);
        sum = s == 0 ? part : sum + part;
      }
      pc[i * n + j] = accumulate ? pc[i * n + j] + sum : sum;
    }
  return C;
}

}  // namespace sgmcmc::kernels
