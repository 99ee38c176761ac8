// Bayesian logistic regression (002 §5.1, Table 2: a9a, prior N(0, 10)), binary and multinomial.
//
//   binary (2 classes):      p(y = 1 | x, w, b) = σ(wᵀx + b),      w ∈ R^d, b ∈ R
//   multinomial (K > 2):     p(y = k | x, W, b) = softmax(Wx + b)_k, W ∈ R^{K×d}, b ∈ R^K
//
// The binary model has one weight vector (not a two-class softmax, whose w₁ − w₀ would carry twice
// the prior's variance). Parameters "weight" [K', d] and "bias" [K'] with K' = 1 (binary) or K, each
// its own prior group (prior.groups: single puts them under one λ, e.g. 002's N(0, 10): λ = 0.1).
// Inputs are flattened to [n, d]. The hand-derived backward pass:
//   ∂nll/∂z = σ(z) − y (binary), softmax(z) − onehot(y) (multinomial);  ∇W = gᵀX, ∇b = Σ g,
// scaled by the trainer's N/n, so a step costs two products and no autograd graph.
#pragma once

#include "models/model.h"

namespace sgmcmc {

class LogisticRegression : public Model {
 public:
  LogisticRegression(int64_t features, int64_t classes);

  Task task() const override { return Task::kClassification; }
  torch::Tensor nll(const Batch& batch) override;
  torch::Tensor nll_backward(const Batch& batch, double scale) override { return backward(batch, scale, false); }
  torch::Tensor nll_backward_overwrite(const Batch& batch, double scale) override { return backward(batch, scale, true); }
  bool overwrites_grad() const override { return true; }
  torch::Tensor predict(const torch::Tensor& inputs) override;

  int64_t classes() const { return classes_; }
  bool binary() const { return classes_ == 2; }

 private:
  torch::Tensor logits(const torch::Tensor& inputs) const;  // [n, K'] from inputs flattened to [n, d]
  // Σ nll (detached); adds (or, with `overwrite`, writes) scale·∇ into .grad. Undefined where a .grad
  // to add to is not defined (the trainer then runs autograd).
  torch::Tensor backward(const Batch& batch, double scale, bool overwrite);

  int64_t features_, classes_;
  torch::Tensor weight_, bias_;
};

}  // namespace sgmcmc
