// A parameter group laid out in one contiguous buffer: every parameter's data and its
// `.grad` become views into two flat tensors, so a sampler step over the group is one fused kernel
// (kernels/update/fused_update.h) and, on CUDA, the addresses stay fixed for graph capture.
//
// The parameters keep their identity (the same TensorImpl, as registered in the model); only their
// storage moves (`set_data`). Autograd accumulates into an existing `.grad` in place, and
// Sampler::zero_grad zeroes in place, so the gradient views survive backward passes. Anything that
// replaces a parameter's storage or its `.grad` later (e.g. InputArchive::read, `p.grad() = …`)
// is caught by `rebind()`, which copies the new values back into the buffer and restores the views.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace sgmcmc {

class FlatGroup {
 public:
  // True if `params` can share one buffer: at least one, all dense, contiguous-able, of one
  // float dtype and one device supported by the fused kernels, with no tensor listed twice.
  static bool eligible(const std::vector<torch::Tensor>& params);

  // Moves the parameters' data (and any existing gradients) into the flat buffers.
  explicit FlatGroup(const std::vector<torch::Tensor>& params);

  const torch::Tensor& data() const { return data_; }
  const torch::Tensor& grad() const { return grad_; }
  int64_t numel() const { return data_.numel(); }
  size_t size() const { return params_.size(); }

  // Per-parameter views of a flat tensor laid out like data() (shapes of the parameters).
  std::vector<torch::Tensor> split(const torch::Tensor& flat) const;

  // Restores the views if a parameter's storage or `.grad` was replaced; returns true if it had to.
  bool rebind();

 private:
  std::vector<torch::Tensor> params_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> numels_;  // each parameter's size at flattening
  torch::Tensor data_, grad_;
};

}  // namespace sgmcmc
