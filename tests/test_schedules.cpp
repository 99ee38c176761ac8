#include <gtest/gtest.h>

#include <cmath>

#include "samplers/schedules.h"

using namespace sgmcmc;

namespace {
OptionMap opts(const std::vector<std::pair<std::string, std::string>>& kv) {
  OptionMap o("schedule");
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}
}  // namespace

TEST(Schedules, Constant) {
  auto s = make_schedule(opts({}), 0.3, 100, 10);
  EXPECT_EQ(s->at(0), 0.3);
  EXPECT_EQ(s->at(99), 0.3);
}

// a (b + t)^−γ with a = 1, b = 4, γ = 0.5: t=0 → 0.5, t=5 → 1/3, t=12 → 0.25.
TEST(Schedules, Polynomial) {
  auto s = make_schedule(opts({{"type", "polynomial"}, {"b", "4"}, {"gamma", "0.5"}}), 1.0, 100, 10);
  EXPECT_NEAR(s->at(0), 0.5, 1e-15);
  EXPECT_NEAR(s->at(5), 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(s->at(12), 0.25, 1e-15);
}

// step: a = 0.8, every 3, factor 0.5: t=0..2 → 0.8, 3..5 → 0.4, 6 → 0.2; every_epochs 2 with 5 steps
// per epoch ⇒ every 10.
TEST(Schedules, Step) {
  auto s = make_schedule(opts({{"type", "step"}, {"every", "3"}, {"factor", "0.5"}}), 0.8, 100, 10);
  EXPECT_EQ(s->at(2), 0.8);
  EXPECT_EQ(s->at(3), 0.4);
  EXPECT_EQ(s->at(6), 0.2);
  auto e = make_schedule(opts({{"type", "step"}, {"every_epochs", "2"}}), 1.0, 100, 5);
  EXPECT_EQ(e->at(9), 1.0);
  EXPECT_EQ(e->at(10), 0.5);
}

// cyclical: a = 2, total 100, cycles 4 ⇒ cycle 25: t=0 → 2, t=25 → 2 (restart), t=12.5 would be 1;
// t=5 → cos(π/5) + 1.
TEST(Schedules, Cyclical) {
  auto s = make_schedule(opts({{"type", "cyclical"}, {"cycles", "4"}}), 2.0, 100, 10);
  EXPECT_NEAR(s->at(0), 2.0, 1e-15);
  EXPECT_NEAR(s->at(25), 2.0, 1e-15);
  EXPECT_NEAR(s->at(5), std::cos(M_PI / 5) + 1, 1e-15);
  EXPECT_NEAR(s->at(24), std::cos(M_PI * 24 / 25) + 1, 1e-15);
}

// explore_fraction 0.4, cycle 25: r(t) = (t mod 25)/25 ≥ 0.4 ⇔ t mod 25 ≥ 10 is the sampling stage;
// the step sizes are those of the plain cyclical schedule.
TEST(Schedules, CyclicalExplorationStages) {
  auto plain = make_schedule(opts({{"type", "cyclical"}, {"cycles", "4"}}), 2.0, 100, 10);
  auto s = make_schedule(opts({{"type", "cyclical"}, {"cycles", "4"}, {"explore_fraction", "0.4"}}), 2.0, 100, 10);
  EXPECT_FALSE(plain->has_stages());
  EXPECT_TRUE(s->has_stages());
  for (int64_t t = 0; t < 100; ++t) {
    EXPECT_EQ(s->sampling(t), t % 25 >= 10) << t;
    EXPECT_TRUE(plain->sampling(t));
    EXPECT_EQ(s->at(t), plain->at(t));
  }
  EXPECT_THROW(make_schedule(opts({{"type", "cyclical"}, {"explore_fraction", "1"}}), 1.0, 100, 10), std::invalid_argument);
  EXPECT_THROW(make_schedule(opts({{"type", "cyclical"}, {"explore_fraction", "-0.1"}}), 1.0, 100, 10), std::invalid_argument);
}

TEST(Schedules, BadOptionsRejected) {
  EXPECT_THROW(make_schedule(opts({{"type", "exponential"}}), 1.0, 100, 10), std::invalid_argument);
  EXPECT_THROW(make_schedule(opts({{"type", "polynomial"}, {"gamma", "1.5"}}), 1.0, 100, 10), std::invalid_argument);
  EXPECT_THROW(make_schedule(opts({{"type", "polynomial"}, {"b", "0"}}), 1.0, 100, 10), std::invalid_argument);
  EXPECT_THROW(make_schedule(opts({{"type", "step"}}), 1.0, 100, 10), std::invalid_argument);
  EXPECT_THROW(make_schedule(opts({{"type", "step"}, {"every", "2"}, {"factor", "0"}}), 1.0, 100, 10),
               std::invalid_argument);
  EXPECT_THROW(make_schedule(opts({{"type", "cyclical"}, {"cycles", "0"}}), 1.0, 100, 10), std::invalid_argument);
  EXPECT_THROW(make_schedule(opts({{"type", "cyclical"}, {"cycles", "200"}}), 1.0, 100, 10), std::invalid_argument);
  EXPECT_THROW(constant_schedule(-1), std::invalid_argument);
}
