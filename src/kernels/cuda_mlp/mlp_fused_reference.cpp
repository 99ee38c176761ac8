// mlp_backward_reference (kernels/cuda_mlp/mlp_fused.h): the fused CUDA pass's arithmetic in plain loops.
#include <stdexcept>
#include <string>

#include "kernels/cuda_mlp/activation_hd.h"
#include "kernels/cuda_mlp/mlp_fused.h"
#include "kernels/cuda/softmax_xent_row.h"

namespace sgmcmc::kernels {

namespace {

void check_layers(const torch::Tensor& x, const torch::Tensor& targets, const std::vector<MlpLayerTensors>& layers) {
  if (layers.empty()) throw std::invalid_argument("mlp_backward_reference: no layers");
  if (x.dim() != 2 || !x.is_contiguous()) throw std::invalid_argument("mlp_backward_reference: x must be [n, in]");
  if (targets.dim() != 1 || targets.size(0) != x.size(0) || targets.scalar_type() != torch::kInt64)
    throw std::invalid_argument("mlp_backward_reference: targets must be int64 [n]");
  int64_t in = x.size(1);
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& L = layers[l];
    const std::string at = "mlp_backward_reference: layer " + std::to_string(l) + ": ";
    if (L.weight.dim() != 2 || L.weight.size(1) != in || !L.weight.is_contiguous())
      throw std::invalid_argument(at + "weight must be a contiguous [out, " + std::to_string(in) + "]");
    const int64_t out = L.weight.size(0);
    for (const auto* t : {&L.bias, &L.bias_grad})
      if (t->dim() != 1 || t->size(0) != out || !t->is_contiguous())
        throw std::invalid_argument(at + "bias and its gradient must be contiguous [" + std::to_string(out) + "]");
    if (L.weight_grad.sizes() != L.weight.sizes() || !L.weight_grad.is_contiguous())
      throw std::invalid_argument(at + "the weight's gradient must be a contiguous tensor of its shape");
    for (const auto* t : {&L.weight, &L.bias, &L.weight_grad, &L.bias_grad})
      if (t->scalar_type() != x.scalar_type() || !t->device().is_cpu())
        throw std::invalid_argument(at + "every tensor must be a CPU tensor of x's dtype");
    if (L.weight_lambda.defined() != L.bias_lambda.defined())
      throw std::invalid_argument(at + "give both precisions or neither");
    for (const auto* t : {&L.weight_lambda, &L.bias_lambda})
      if (t->defined() && (t->numel() != 1 || t->scalar_type() != x.scalar_type() || !t->device().is_cpu()))
        throw std::invalid_argument(at + "a precision must be one CPU value of x's dtype");
    in = out;
  }
}

template <typename T>
torch::Tensor reference(const torch::Tensor& x, const torch::Tensor& targets, const std::vector<MlpLayerTensors>& layers,
                        Activation act, T scale, bool overwrite) {
  const size_t L = layers.size();
  const int64_t n = x.size(0);
  std::vector<torch::Tensor> h(L), g(L + 1);
  h[0] = x;
  // h_{l+1} = act(h_l W_lᵀ + b_l)
  for (size_t l = 0; l + 1 < L; ++l) {
    const auto& W = layers[l].weight;
    const int64_t out = W.size(0), in = W.size(1);
    h[l + 1] = torch::empty({n, out}, x.options());
    const T *hp = h[l].data_ptr<T>(), *wp = W.data_ptr<T>(), *bp = layers[l].bias.data_ptr<T>();
    T* op = h[l + 1].data_ptr<T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        T s = 0;
        for (int64_t j = 0; j < in; ++j) s += hp[i * in + j] * wp[o * in + j];
        op[i * out + o] = activate_hd(act, s + bp[o]);
      }
  }
  // the head: f, nll_i and g_L = s·(softmax(f) − onehot(y))
  const auto& Wl = layers[L - 1].weight;
  const int64_t O = Wl.size(0), H = Wl.size(1);
  g[L] = torch::empty({n, O}, x.options());
  std::vector<T> f(static_cast<size_t>(O));
  T nll = 0;
  {
    const T *hp = h[L - 1].data_ptr<T>(), *wp = Wl.data_ptr<T>(), *bp = layers[L - 1].bias.data_ptr<T>();
    const int64_t* y = targets.data_ptr<int64_t>();
    T* gp = g[L].data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t o = 0; o < O; ++o) {
        T s = 0;
        for (int64_t j = 0; j < H; ++j) s += hp[i * H + j] * wp[o * H + j];
        f[o] = s + bp[o];
      }
      if (y[i] < 0 || y[i] >= O)
        throw std::invalid_argument("mlp_backward_reference: label " + std::to_string(y[i]) + " outside [0, " +
                                    std::to_string(O) + ")");
      nll += softmax_xent_row<T>(f.data(), y[i], O, scale, gp + i * O);
    }
  }
  // g_l = (g_{l+1} W_l) ⊙ act'(h_l), 0 < l < L
  for (size_t l = L - 1; l > 0; --l) {
    const auto& W = layers[l].weight;
    const int64_t out = W.size(0), in = W.size(1);
    g[l] = torch::empty({n, in}, x.options());
    const T *gp = g[l + 1].data_ptr<T>(), *wp = W.data_ptr<T>(), *hp = h[l].data_ptr<T>();
    T* dp = g[l].data_ptr<T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < in; ++j) {
        T s = 0;
        for (int64_t o = 0; o < out; ++o) s += gp[i * out + o] * wp[o * in + j];
        dp[i * in + j] = derivative_times_hd(act, s, hp[i * in + j]);
      }
  }
  // ∇W_l = g_{l+1}ᵀ h_l, ∇b_l = Σ_i g_{l+1,i}
  for (size_t l = 0; l < L; ++l) {
    const auto& W = layers[l].weight;
    const int64_t out = W.size(0), in = W.size(1);
    const T *gp = g[l + 1].data_ptr<T>(), *hp = h[l].data_ptr<T>();
    T *wg = layers[l].weight_grad.data_ptr<T>(), *bg = layers[l].bias_grad.data_ptr<T>();
    const T *wp = W.data_ptr<T>(), *bp = layers[l].bias.data_ptr<T>();
    const bool prior = layers[l].weight_lambda.defined();
    const T lw = prior ? layers[l].weight_lambda.template item<T>() : T(0);
    const T lb = prior ? layers[l].bias_lambda.template item<T>() : T(0);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t j = 0; j < in; ++j) {
        T s = 0;
        for (int64_t i = 0; i < n; ++i) s += gp[i * out + o] * hp[i * in + j];
        wg[o * in + j] = prior ? s + lw * wp[o * in + j] : overwrite ? s : wg[o * in + j] + s;
      }
      T s = 0;
      for (int64_t i = 0; i < n; ++i) s += gp[i * out + o];
      bg[o] = prior ? s + lb * bp[o] : overwrite ? s : bg[o] + s;
    }
  }
  return torch::tensor(static_cast<double>(nll), x.options());
}

}  // namespace

torch::Tensor mlp_backward_reference(const torch::Tensor& x, const torch::Tensor& targets,
                                     const std::vector<MlpLayerTensors>& layers, Activation act, double scale,
                                     bool overwrite, int64_t chains, bool shared) {
  // chain c: its rows (shared: all of them) and its slice of every stacked layer (views: the grads are
  // written through); one chain of stacked [1, out, in] layers (MlpChains with chains: 1) takes this branch too
  if (chains > 1 || (!layers.empty() && layers.front().weight.dim() == 3)) {
    if (x.dim() != 2 || (!shared && x.size(0) % chains != 0) || targets.dim() != 1 || targets.size(0) != x.size(0))
      throw std::invalid_argument(shared ? "mlp_backward_reference: x must be [n, in] and targets [n] (shared)"
                                         : "mlp_backward_reference: x must be [chains * n, in] and targets [chains * n]");
    const int64_t n = shared ? x.size(0) : x.size(0) / chains;
    const int64_t step = shared ? 0 : n;  // chain c's first row
    torch::Tensor nll;
    for (int64_t c = 0; c < chains; ++c) {
      std::vector<MlpLayerTensors> mine;
      for (const auto& l : layers) {
        if (l.weight.dim() != 3 || l.weight.size(0) != chains || l.bias.dim() != 2 || l.bias.size(0) != chains)
          throw std::invalid_argument("mlp_backward_reference: chains need layers stacked [chains, out, in], [chains, out]");
        if (l.weight_lambda.defined()) throw std::invalid_argument("mlp_backward_reference: no precisions with chains");
        mine.push_back({l.weight[c], l.bias[c], l.weight_grad[c], l.bias_grad[c], {}, {}});
      }
      auto part = mlp_backward_reference(x.narrow(0, c * step, n), targets.narrow(0, c * step, n), mine, act, scale,
                                         overwrite);
      nll = nll.defined() ? nll + part : part;
    }
    return nll;
  }
  check_layers(x, targets, layers);
  for (const auto& l : layers)
    if (l.weight_lambda.defined() && !overwrite)
      throw std::invalid_argument("mlp_backward_reference: the precisions need overwrite");
  torch::NoGradGuard no_grad;
  if (x.scalar_type() == torch::kFloat64) return reference<double>(x, targets, layers, act, scale, overwrite);
  if (x.scalar_type() == torch::kFloat32)
    return reference<float>(x, targets, layers, act, static_cast<float>(scale), overwrite);
  throw std::invalid_argument("mlp_backward_reference: float32 or float64 tensors only");
}

}  // namespace sgmcmc::kernels
