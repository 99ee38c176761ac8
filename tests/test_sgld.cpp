#include <gtest/gtest.h>

#include "compat.h"
#include "kernels/update/update_rules.h"
#include "samplers/registry.h"
#include "samplers/sgld.h"

using namespace sgmcmc;

// Golden value: θ=1, g=2, ξ=0.5, η=0.1, T=1: 1 − 0.2 + sqrt(0.2)·0.5.
TEST(SgldRule, GoldenValue) {
  auto theta = torch::tensor({1.0}, torch::kFloat64);
  rules::sgld_update(theta, torch::tensor({2.0}, torch::kFloat64), torch::tensor({0.5}, torch::kFloat64), 0.1, 1.0);
  EXPECT_NEAR(theta.item<double>(), 1.0 - 0.2 + std::sqrt(0.2) * 0.5, 1e-15);
}

TEST(SgldRegistry, UnknownOptionRejected) {
  auto p = torch::zeros({2}, torch::requires_grad());
  OptionMap o("sampler");
  o.set("lr", "0.1");
  o.set("lrr", "0.1");
  try {
    make_sampler("sgld", {ParamGroup({p})}, o, compat::make_generator(torch::kCPU, 1));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sampler.lrr: unknown key (did you mean 'lr'?)"), std::string::npos) << e.what();
  }
}

TEST(SgldRegistry, NegativeLrRejected) {
  auto p = torch::zeros({2}, torch::requires_grad());
  OptionMap o("sampler");
  o.set("lr", "-1");
  EXPECT_THROW(make_sampler("sgld", {ParamGroup({p})}, o, compat::make_generator(torch::kCPU, 1)),
               std::invalid_argument);
}
