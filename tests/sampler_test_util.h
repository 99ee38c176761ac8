// Helpers shared by the sampler tests: option maps, expected option errors, checkpoint round trips,
// and reading a sampler's state tensors back through its checkpoint archive.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compat.h"
#include "samplers/registry.h"

namespace sgmcmc::test {

inline OptionMap options(const std::vector<std::pair<std::string, std::string>>& kv) {
  OptionMap o("sampler");
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}

inline SamplerPtr make(const std::string& name, std::vector<torch::Tensor> params,
                       const std::vector<std::pair<std::string, std::string>>& kv, uint64_t seed = 1) {
  return make_sampler(name, {ParamGroup(std::move(params))}, options(kv), compat::make_generator(torch::kCPU, seed));
}

// make_sampler(name, kv) must throw std::invalid_argument whose message contains `needle`.
inline void expect_option_error(const std::string& name,
                                const std::vector<std::pair<std::string, std::string>>& kv,
                                const std::string& needle) {
  auto p = torch::zeros({2}, torch::requires_grad());
  try {
    make(name, {p}, kv);
    ADD_FAILURE() << name << ": expected std::invalid_argument containing '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << name << ": message '" << e.what() << "' does not contain '" << needle << "'";
  }
}

inline void set_grad(torch::Tensor& p, const torch::Tensor& g) { p.mutable_grad() = g.detach().clone(); }

// Deterministic gradient for round-trip tests: ∇ = 2θ + 0.3 sin(k + index).
inline void fill_grads(std::vector<torch::Tensor>& ps, int k) {
  torch::NoGradGuard ng;
  for (size_t i = 0; i < ps.size(); ++i)
    set_grad(ps[i], 2 * ps[i].detach() + 0.3 * std::sin(static_cast<double>(k + i)));
}

inline std::vector<torch::Tensor> round_trip_params() {
  return {torch::tensor({0.3, -0.2, 1.0}, torch::kFloat64).requires_grad_(),
          torch::tensor({{0.1, 0.2}, {-0.4, 0.5}}, torch::kFloat64).requires_grad_()};
}

// Runs sampler A for 5 steps, saves it, loads the checkpoint into a fresh B (different generator
// seed, generator state then copied from A, parameters copied), and checks that the next 3 steps
// of A and B are bitwise identical. If `state_matters`, also checks that a fresh sampler WITHOUT
// the load diverges (so the test can fail).
inline void check_round_trip(const std::string& name,
                             const std::vector<std::pair<std::string, std::string>>& kv,
                             bool state_matters = true) {
  auto pa = round_trip_params();
  auto gen_a = compat::make_generator(torch::kCPU, 7);
  auto a = make_sampler(name, {ParamGroup(pa)}, options(kv), gen_a);
  for (int k = 0; k < 5; ++k) {
    fill_grads(pa, k);
    a->step();
  }
  std::stringstream ss;
  {
    torch::serialize::OutputArchive out;
    a->save(out);
    out.save_to(ss);
  }
  auto clone_params = [&] {
    std::vector<torch::Tensor> q;
    for (auto& p : pa) q.push_back(p.detach().clone().requires_grad_());
    return q;
  };
  auto pb = clone_params();
  auto pc = clone_params();
  auto gen_b = compat::make_generator(torch::kCPU, 99);
  auto gen_c = compat::make_generator(torch::kCPU, 99);
  auto b = make_sampler(name, {ParamGroup(pb)}, options(kv), gen_b);
  auto c = make_sampler(name, {ParamGroup(pc)}, options(kv), gen_c);
  {
    torch::serialize::InputArchive in;
    in.load_from(ss);
    b->load(in);
  }
  EXPECT_EQ(b->steps(), a->steps());
  auto state = compat::generator_state(gen_a);
  compat::set_generator_state(gen_b, state);
  compat::set_generator_state(gen_c, state);
  for (int k = 5; k < 8; ++k) {
    fill_grads(pa, k);
    fill_grads(pb, k);
    fill_grads(pc, k);
    a->step();
    b->step();
    c->step();
  }
  bool c_same = true;
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i], pb[i])) << name << ": parameter " << i << " differs after load";
    c_same = c_same && torch::equal(pa[i], pc[i]);
  }
  if (state_matters) EXPECT_FALSE(c_same) << name << ": a sampler without the loaded state gave the same result";
}

// A state tensor read back through the checkpoint archive (key as in state_tensors(), e.g. "0.v").
inline torch::Tensor read_state(const Sampler& s, const std::string& key) {
  torch::serialize::OutputArchive out;
  s.save(out);
  std::stringstream ss;
  out.save_to(ss);
  torch::serialize::InputArchive in;
  in.load_from(ss);
  torch::Tensor t;
  if (!in.try_read("state." + key, t, true)) ADD_FAILURE() << "no state tensor " << key;
  return t;
}

// Two groups (lr_scale 1 and 0.5) of three parameters of different shapes, seeded, for comparing
// two ways of running the same sampler (tests/test_fused.cpp, tests/test_graph.cpp).
struct TwoGroupRun {
  std::vector<torch::Tensor> params;
  SamplerPtr sampler;
};

inline TwoGroupRun make_two_group_run(const std::string& name, const OptionMap& opts, bool fused, torch::Dtype dt) {
  torch::manual_seed(42);
  TwoGroupRun r;
  r.params = {torch::randn({7, 5}, dt).requires_grad_(), torch::randn({3}, dt).requires_grad_(),
              torch::randn({2, 2, 3}, dt).requires_grad_()};
  std::vector<ParamGroup> groups{ParamGroup({r.params[0], r.params[1]}), ParamGroup({r.params[2]}, 0.5)};
  r.sampler = make_sampler(name, std::move(groups), opts, compat::make_generator(torch::kCPU, 99));
  r.sampler->set_fused(fused);
  return r;
}

// ∇Ũ = θ ⊙ c (a quadratic potential, c = 0.5, 1.5, 2.5 per parameter) into .grad.
inline void quadratic_grads(TwoGroupRun& r) {
  r.sampler->zero_grad();
  torch::NoGradGuard ng;
  for (size_t k = 0; k < r.params.size(); ++k) r.params[k].mutable_grad().add_(r.params[k] * (0.5 + k));
}

inline void run_quadratic_steps(TwoGroupRun& r, int steps) {
  for (int t = 0; t < steps; ++t) {
    quadratic_grads(r);
    r.sampler->step();
  }
}

// One configuration of every sampler with a fused update and of each of its integrators and options
// that change the kernel (SSI, β̂, Santa's two stages within 25 steps, its precond term off/on).
inline std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> fused_sampler_configs() {
  return {
      {"sgld", {{"lr", "1e-3"}}},
      {"psgld", {{"lr", "1e-4"}}},
      {"sghmc", {{"lr", "1e-3"}, {"alpha", "0.1"}}},
      {"sghmc", {{"lr", "1e-3"}, {"alpha", "0.1"}, {"integrator", "ssi"}, {"noise_estimate", "constant"}, {"beta_hat", "0.01"}}},
      {"msgnht", {{"lr", "1e-2"}}},
      {"msgnht", {{"lr", "1e-2"}, {"integrator", "ssi"}}},
      {"santa", {{"lr", "1e-4"}, {"integrator", "ssi"}, {"burnin", "10"}, {"data_size", "10"}}},
      {"santa", {{"lr", "1e-5"}, {"burnin", "10"}, {"eps", "20"}}},
  };
}

}  // namespace sgmcmc::test
