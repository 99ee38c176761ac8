// The kernels' test cases shared by their CPU-reference tests, their GPU tests and the CPU emulator's
// (tests/test_cuda_emu*.cpp): the shapes the pass launches them at and random inputs for them.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/update/fused_update.h"
#include "kernels/cuda_mlp/mlp_forward_head.h"
#include "kernels/cuda_mlp/weight_grad.h"

// The forward-and-head launch (kernels/cuda_mlp/mlp_forward_head.h).
namespace forward_head_cases {

using sgmcmc::kernels::Activation;
using sgmcmc::kernels::MlpForwardHeadArgs;
using sgmcmc::kernels::MlpForwardHeadShape;

struct Case {
  std::string name;
  int64_t n, k, hdim, outs;
  Activation act;
};

// App. H.1 (784-100-10 sigmoid, batch 500: 32 row groups, the last of 4 rows, 4 unit slices, the last of 4
// units, k in 6 chunks and 16 columns), FNN-800's last hidden layer (800 wide, batch 100, ReLU), an odd shape
// (k below one warp's share of a chunk, fewer rows than a group, 33 units: 2 slices) and tanh.
inline std::vector<Case> cases() {
  return {{"H.1", 500, 784, 100, 10, Activation::kSigmoid},
          {"FNN-800", 100, 800, 800, 10, Activation::kRelu},
          {"odd", 5, 3, 33, 2, Activation::kTanh},
          {"identity", 70, 300, 45, 7, Activation::kNone}};
}

inline MlpForwardHeadArgs make(const Case& c, torch::Dtype dt, uint64_t seed) {
  torch::manual_seed(seed);
  const auto o = torch::TensorOptions().dtype(dt);
  MlpForwardHeadArgs t;
  t.a = torch::rand({c.n, c.k}, o);
  t.weight = torch::randn({c.hdim, c.k}, o) / std::sqrt(static_cast<double>(c.k));
  t.bias = torch::randn({c.hdim}, o);
  t.out_weight = torch::randn({c.outs, c.hdim}, o) / std::sqrt(static_cast<double>(c.hdim));
  t.out_bias = torch::randn({c.outs}, o);
  t.targets = torch::randint(0, c.outs, {c.n}, torch::kInt64);
  t.act = c.act;
  t.scale = 120.0;
  t.h_out = torch::full({c.n, c.hdim}, 7.0, o);
  t.g_out = torch::full({c.n, c.outs}, 7.0, o);
  t.g_hidden = torch::full({c.n, c.hdim}, 7.0, o);
  t.row_nll = torch::full({c.n}, 7.0, o);
  t.counters = torch::zeros({(c.n + MlpForwardHeadShape::kRows - 1) / MlpForwardHeadShape::kRows}, torch::kInt32);
  return t;
}

inline MlpForwardHeadArgs copy_to(const MlpForwardHeadArgs& t, const torch::Device& d) {
  MlpForwardHeadArgs c = t;
  for (auto* x : {&c.a, &c.weight, &c.bias, &c.out_weight, &c.out_bias, &c.targets, &c.h_out, &c.g_out, &c.g_hidden,
                  &c.row_nll, &c.counters})
    *x = x->to(d).clone();
  return c;
}

inline std::vector<torch::Tensor> outputs(const MlpForwardHeadArgs& t) { return {t.h_out, t.g_out, t.g_hidden, t.row_nll}; }

// The same layer alone (a middle hidden layer): no head, h only.
inline MlpForwardHeadArgs without_head(MlpForwardHeadArgs t) {
  for (auto* x : {&t.out_weight, &t.out_bias, &t.targets, &t.g_out, &t.g_hidden, &t.row_nll, &t.counters})
    *x = torch::Tensor();
  t.h_out = t.h_out.clone();
  return t;
}

}  // namespace forward_head_cases

// The weight-gradient launch (kernels/cuda_mlp/weight_grad.h).
namespace weight_grad_cases {

using namespace sgmcmc;

struct Case {
  std::string name;
  int64_t r, m, n;
};

// App. H.1's ∇W_0 (500 rows, 100 × 784: 4 chunks, the last of 116 rows; 7 × 25 tiles, the last ones
// partial), FNN-800's ∇W_1 (100 rows, 800 × 800: one chunk, warps past row 100 reading zeros), and odd
// shapes (fewer rows than a warp's share, a chunk and one row).
inline std::vector<Case> cases() {
  return {{"H.1", 500, 100, 784}, {"FNN-800", 100, 800, 800}, {"odd", 5, 3, 7}, {"129 rows", 129, 17, 33}};
}

// App. H.1's backward launch: ∇W_0 = g_1ᵀ x with ∇b_0 (500 rows, 100 × 784) and the output layer's g_2ᵀ h_1
// with ∇b_1 (10 × 100), the prior's λ or not (then accumulating onto random gradients), and the nll's sum
// with the trainer's loss sum.
inline kernels::WeightGradLaunch launch(torch::Dtype dt, bool prior, bool nll, uint64_t seed) {
  torch::manual_seed(seed);
  const auto o = torch::TensorOptions().dtype(dt);
  kernels::WeightGradLaunch t;
  t.accumulate = !prior;
  for (auto [m, n] : {std::pair<int64_t, int64_t>{100, 784}, {10, 100}}) {
    kernels::WeightGradProblem q;
    q.a = torch::randn({500, m}, o), q.b = torch::rand({500, n}, o);
    q.c = torch::randn({m, n}, o), q.bias_grad = torch::randn({m}, o);
    if (prior)
      q.weight = torch::randn({m, n}, o), q.weight_lambda = torch::rand({}, o) * 3, q.bias = torch::randn({m}, o),
      q.bias_lambda = torch::rand({}, o) * 3;
    t.problems.push_back(q);
  }
  if (nll) {
    t.row_nll = torch::rand({500}, o) * 3, t.nll = torch::zeros({}, o);
    t.loss_sum = torch::full({}, 1.5, torch::kFloat64), t.loss_weight = 0.25;
  }
  return t;
}

inline kernels::WeightGradLaunch copy_to(const kernels::WeightGradLaunch& t, const torch::Device& d) {
  kernels::WeightGradLaunch c = t;
  for (auto& q : c.problems)
    for (auto* x : {&q.a, &q.b, &q.c, &q.bias_grad, &q.weight, &q.weight_lambda, &q.bias, &q.bias_lambda})
      if (x->defined()) *x = x->to(d).clone();
  for (auto* x : {&c.row_nll, &c.nll, &c.loss_sum})
    if (x->defined()) *x = x->to(d).clone();
  return c;
}

inline std::vector<torch::Tensor> outputs(const kernels::WeightGradLaunch& t) {
  std::vector<torch::Tensor> out;
  for (const auto& q : t.problems) out.push_back(q.c), out.push_back(q.bias_grad);
  out.push_back(t.nll), out.push_back(t.loss_sum);
  return out;
}

// One product of case c: A [r, m], B [r, n], C's start [m, n], and the reference's C (overwriting or
// accumulating onto the start).
struct Product {
  torch::Tensor a, b, start, want;
};
inline Product product(const Case& c, torch::Dtype dt, bool accumulate) {
  torch::manual_seed(9);
  const auto o = torch::TensorOptions().dtype(dt);
  Product p{torch::randn({c.r, c.m}, o), torch::rand({c.r, c.n}, o), torch::randn({c.m, c.n}, o), {}};
  p.want = p.start.clone();
  kernels::weight_grad_reference(kernels::weight_grad_of(p.a, p.b, p.want, accumulate));
  return p;
}

}  // namespace weight_grad_cases

// The fused updates (kernels/update/fused_update.h): every rule with the state it keeps, the step's scalars and
// states in each rule's valid range.
namespace fused_cases {

using sgmcmc::kernels::FusedRule;
using sgmcmc::kernels::FusedScalars;

struct Case {
  FusedRule rule;
  const char* name;
  int state;  // number of state tensors
};

inline std::vector<Case> cases() {
  return {{FusedRule::kSgld, "sgld", 0},          {FusedRule::kPsgld, "psgld", 1},
          {FusedRule::kSghmcEuler, "sghmc_euler", 1}, {FusedRule::kSghmcSsi, "sghmc_ssi", 1},
          {FusedRule::kMsgnhtEuler, "msgnht_euler", 2}, {FusedRule::kMsgnhtSsi, "msgnht_ssi", 2},
          {FusedRule::kSantaEuler, "santa_euler", 4}, {FusedRule::kSantaSsi, "santa_ssi", 4}};
}

// The step's scalars the per-rule comparisons use (pSGLD's decay near 1, the others' friction 0.1).
inline FusedScalars test_scalars(FusedRule rule) {
  FusedScalars s;
  s.lr = 1e-3;
  s.alpha = rule == FusedRule::kPsgld ? 0.99 : 0.1;
  s.diffusion = 0.3;
  s.eps = 1e-3;
  s.sigma = 0.99;
  s.data_size = 50;
  s.beta = 2.0;
  return s;
}

// State tensors in a valid range for each rule (positive preconditioners, small thermostats).
inline std::vector<torch::Tensor> make_state(FusedRule rule, int count, int64_t n, torch::Dtype dt) {
  std::vector<torch::Tensor> st;
  for (int j = 0; j < count; ++j) st.push_back(torch::randn({n}, dt) * 0.1);
  if (rule == FusedRule::kPsgld) st[0] = st[0].abs() + 1e-3;
  if (rule == FusedRule::kSantaEuler || rule == FusedRule::kSantaSsi) {
    st[1] = st[1].abs() * 0.5;           // α ≥ 0
    st[2] = st[2].abs() * 1e-3;          // v ≥ 0
    st[3] = torch::rand({n}, dt) + 0.5;  // g_prev > 0
  }
  return st;
}

}  // namespace fused_cases
