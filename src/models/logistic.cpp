#include "models/logistic.h"

#include <stdexcept>

namespace sgmcmc {

LogisticRegression::LogisticRegression(int64_t features, int64_t classes) : features_(features), classes_(classes) {
  if (features < 1) throw std::invalid_argument("model.name: logistic needs inputs with at least one feature");
  if (classes < 2) throw std::invalid_argument("model.name: logistic needs at least two classes");
  const int64_t outputs = classes == 2 ? 1 : classes;
  // At zero: the posterior is log-concave, so the chain needs no symmetry broken, and every run of a
  // config starts from the same point whatever its seed.
  weight_ = register_parameter("weight", torch::zeros({outputs, features}));
  bias_ = register_parameter("bias", torch::zeros({outputs}));
}

torch::Tensor LogisticRegression::logits(const torch::Tensor& inputs) const {
  const auto x = inputs.reshape({inputs.size(0), -1});
  if (x.size(1) != features_)
    throw std::invalid_argument("logistic: inputs of " + std::to_string(x.size(1)) + " features, the model has " +
                                std::to_string(features_));
  return torch::addmm(bias_, x.to(weight_.scalar_type()), weight_.t());
}

torch::Tensor LogisticRegression::nll(const Batch& batch) {
  const auto z = logits(batch.inputs);
  if (binary()) {  // softplus(z) − y·z = −log σ(z) for y = 1, −log(1 − σ(z)) for y = 0
    const auto zz = z.squeeze(1);
    return (torch::softplus(zz) - batch.targets.to(zz.scalar_type()) * zz).sum();
  }
  return torch::nn::functional::cross_entropy(
      z, batch.targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

torch::Tensor LogisticRegression::predict(const torch::Tensor& inputs) {
  torch::NoGradGuard no_grad;
  const auto z = logits(inputs);
  if (!binary()) return torch::softmax(z, 1);
  const auto p = torch::sigmoid(z);
  return torch::cat({1 - p, p}, 1);
}

torch::Tensor LogisticRegression::backward(const Batch& batch, double scale, bool overwrite) {
  if (!overwrite && (!weight_.grad().defined() || !bias_.grad().defined())) return {};
  torch::NoGradGuard no_grad;
  const auto x = batch.inputs.reshape({batch.inputs.size(0), -1}).to(weight_.scalar_type());
  const auto z = torch::addmm(bias_, x, weight_.t());
  torch::Tensor g, nll;
  if (binary()) {
    const auto y = batch.targets.to(z.scalar_type()).unsqueeze(1);
    g = torch::sigmoid(z) - y;
    nll = (torch::softplus(z) - y * z).sum();
  } else {
    const auto log_p = torch::log_softmax(z, 1);
    const auto picked = log_p.gather(1, batch.targets.unsqueeze(1));
    nll = -picked.sum();
    g = log_p.exp();
    g.scatter_add_(1, batch.targets.unsqueeze(1), torch::full_like(picked, -1.0));
  }
  g.mul_(scale);
  if (overwrite) {
    if (!weight_.grad().defined()) weight_.mutable_grad() = torch::empty_like(weight_);
    if (!bias_.grad().defined()) bias_.mutable_grad() = torch::empty_like(bias_);
    torch::mm_out(weight_.mutable_grad(), g.t(), x);
    torch::sum_out(bias_.mutable_grad(), g, 0);
  } else {
    weight_.mutable_grad().addmm_(g.t(), x);
    bias_.mutable_grad().add_(g.sum(0));
  }
  return nll.detach();
}

}  // namespace sgmcmc
