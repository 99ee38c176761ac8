#include "samplers/flat_params.h"

#include <set>
#include <stdexcept>

#include "kernels/update/fused_update.h"

namespace sgmcmc {

bool FlatGroup::eligible(const std::vector<torch::Tensor>& params) {
  if (params.empty()) return false;
  std::set<const void*> seen;
  for (const auto& p : params) {
    if (!p.defined() || p.layout() != torch::kStrided || p.is_sparse()) return false;
    if (!kernels::fused_supported(p)) return false;
    if (p.scalar_type() != params[0].scalar_type() || p.device() != params[0].device()) return false;
    if (!seen.insert(p.unsafeGetTensorImpl()).second) return false;
    const auto& g = p.grad();
    if (g.defined() && (g.is_sparse() || g.sizes() != p.sizes())) return false;
  }
  return true;
}

FlatGroup::FlatGroup(const std::vector<torch::Tensor>& params) : params_(params) {
  if (!eligible(params_)) throw std::invalid_argument("FlatGroup: parameters cannot share one buffer");
  torch::NoGradGuard no_grad;
  int64_t total = 0;
  for (const auto& p : params_) {
    offsets_.push_back(total);
    numels_.push_back(p.numel());
    total += p.numel();
  }
  const auto opts = params_[0].options().requires_grad(false);
  data_ = torch::empty({total}, opts);
  grad_ = torch::zeros({total}, opts);
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    auto view = data_.narrow(0, offsets_[i], p.numel()).view(p.sizes());
    view.copy_(p.detach());
    p.set_data(view);
    auto gview = grad_.narrow(0, offsets_[i], p.numel()).view(p.sizes());
    if (p.grad().defined()) gview.copy_(p.grad());
    p.mutable_grad() = gview;
  }
}

std::vector<torch::Tensor> FlatGroup::split(const torch::Tensor& flat) const {
  if (flat.dim() != 1 || flat.numel() != numel())
    throw std::invalid_argument("FlatGroup::split: tensor of " + std::to_string(flat.numel()) +
                                " elements, group has " + std::to_string(numel()));
  std::vector<torch::Tensor> out;
  out.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    out.push_back(flat.narrow(0, offsets_[i], numels_[i]).view(params_[i].sizes()));
  return out;
}

bool FlatGroup::rebind() {
  bool changed = false;
  const auto elem = data_.element_size();
  auto* base = static_cast<char*>(data_.data_ptr());
  auto* gbase = static_cast<char*>(grad_.data_ptr());
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    const int64_t n = numels_[i];
    auto* want = base + offsets_[i] * elem;
    if (p.data_ptr() != want || !p.is_contiguous()) {
      if (p.numel() != n || p.scalar_type() != data_.scalar_type() || p.device() != data_.device())
        throw std::logic_error("FlatGroup: a parameter changed its size, dtype or device after flattening");
      torch::NoGradGuard no_grad;
      auto view = data_.narrow(0, offsets_[i], n).view(p.sizes());
      view.copy_(p.detach());
      p.set_data(view);
      changed = true;
    }
    const auto& g = p.grad();
    if (!g.defined() || g.data_ptr() != gbase + offsets_[i] * elem || !g.is_contiguous()) {
      torch::NoGradGuard no_grad;
      auto gview = grad_.narrow(0, offsets_[i], n).view(p.sizes());
      if (g.defined()) {
        gview.copy_(g);
      } else {
        gview.zero_();
      }
      p.mutable_grad() = gview;
      changed = true;
    }
  }
  return changed;
}

}  // namespace sgmcmc
