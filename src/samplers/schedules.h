// Step-size (and temperature) schedules: value as a function of the 0-based step t.
//   constant:    a
//   polynomial:  a (b + t)^(−γ)                       (Welling & Teh 2011)
//   step:        a · factor^floor(t / every)         (e.g. 002 §5.2: halved at epoch 20)
//   cyclical:    a/2 · (cos(π · (t mod c) / c) + 1),  c = ceil(total / cycles)
//                (Zhang et al., "Cyclical SG-MCMC", ICLR 2020)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/option_map.h"

namespace sgmcmc {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double at(int64_t t) const = 0;
  virtual std::string describe() const = 0;
};

std::unique_ptr<Schedule> constant_schedule(double a);
std::unique_ptr<Schedule> polynomial_schedule(double a, double b, double gamma);
std::unique_ptr<Schedule> step_schedule(double a, int64_t every, double factor);
std::unique_ptr<Schedule> cyclical_schedule(double a, int64_t total_steps, int64_t cycles);

// From options: `type` (constant | polynomial | step | cyclical) and its parameters
// (b, gamma | every, factor | cycles); `a` is `base` (the sampler's lr). `total_steps` is the run
// length (needed by cyclical). `steps_per_epoch` converts `every_epochs` to steps.
std::unique_ptr<Schedule> make_schedule(const OptionMap& options, double base, int64_t total_steps,
                                        int64_t steps_per_epoch);

}  // namespace sgmcmc
