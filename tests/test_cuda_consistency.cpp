// CPU vs CUDA: the same update rules with the same inputs and noise give the same result on both
// devices (float64, so differences are rounding only: tolerance 1e-12 relative). Skips itself when
// CUDA is not available (this build, or no device).
#include <gtest/gtest.h>

#include "compat.h"
#include "kernels/update/update_rules.h"

using namespace sgmcmc;

namespace {
struct Inputs {
  torch::Tensor theta, state, xi, grad, noise;
};
Inputs make_inputs() {
  auto gen = compat::make_generator(torch::kCPU, 7);
  auto o = torch::dtype(torch::kFloat64);
  return {at::randn({1000}, gen, o), at::randn({1000}, gen, o) * 0.1, at::rand({1000}, gen, o),
          at::randn({1000}, gen, o), at::randn({1000}, gen, o)};
}
Inputs to_device(const Inputs& in, const torch::Device& d) {
  return {in.theta.to(d), in.state.to(d), in.xi.to(d), in.grad.to(d), in.noise.to(d)};
}
void expect_same(const torch::Tensor& cpu, const torch::Tensor& cuda) {
  EXPECT_TRUE(torch::allclose(cpu, cuda.cpu(), 1e-12, 1e-12));
}
}  // namespace

TEST(CudaConsistency, UpdateRulesMatchCpu) {
  if (!compat::cuda_available()) GTEST_SKIP() << "CUDA not available";
  const torch::Device cuda(torch::kCUDA, 0);
  {
    auto c = make_inputs();
    auto g = to_device(c, cuda);
    rules::sgld_update(c.theta, c.grad, c.noise, 0.01, 1.0);
    rules::sgld_update(g.theta, g.grad, g.noise, 0.01, 1.0);
    expect_same(c.theta, g.theta);
  }
  {
    auto c = make_inputs();
    auto g = to_device(c, cuda);
    auto bc = torch::zeros_like(c.theta), bg = bc.to(cuda);
    rules::sghmc_euler_update(c.theta, c.state, c.grad, c.noise, 0.01, 0.1, 1.0, bc);
    rules::sghmc_euler_update(g.theta, g.state, g.grad, g.noise, 0.01, 0.1, 1.0, bg);
    expect_same(c.theta, g.theta);
    expect_same(c.state, g.state);
  }
  {
    auto c = make_inputs();
    auto g = to_device(c, cuda);
    rules::msgnht_ssi_update(c.theta, c.state, c.xi, c.grad, c.noise, 0.05, 1.0, 1.0);
    rules::msgnht_ssi_update(g.theta, g.state, g.xi, g.grad, g.noise, 0.05, 1.0, 1.0);
    expect_same(c.theta, g.theta);
    expect_same(c.xi, g.xi);
  }
}
