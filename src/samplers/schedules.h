// Step-size (and temperature) schedules: value as a function of the 0-based step t.
//   constant:    a
//   polynomial:  a (b + t)^(−γ)                       (Welling & Teh 2011)
//   step:        a · factor^floor(t / every)         (e.g. 002 §5.2: halved at epoch 20)
//   cyclical:    a/2 · (cos(π · (t mod c) / c) + 1),  c = ceil(total / cycles)
//                (Zhang et al., "Cyclical SG-MCMC", ICLR 2020)
//                With explore_fraction β > 0 (Zhang et al.'s Algorithm 1): step t is in the EXPLORATION
//                stage while r(t) = (t mod c)/c < β, where the trainer runs the sampler at temperature 0
//                (no noise: SGLD → SGD, SGHMC → SGD-momentum) and collects no samples; in the SAMPLING
//                stage (r(t) ≥ β) it runs at the configured temperature and collects samples as usual.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/arg.h>

#include "core/option_map.h"
#include "core/option_table.h"

namespace sgmcmc {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double at(int64_t t) const = 0;
  virtual std::string describe() const = 0;
  // True when step t is in a sampling stage (noise on, samples collected); every step by default.
  virtual bool sampling(int64_t /*t*/) const { return true; }
  // True when some step is not (the schedule has exploration stages).
  virtual bool has_stages() const { return false; }
};

std::unique_ptr<Schedule> constant_schedule(double a);
std::unique_ptr<Schedule> polynomial_schedule(double a, double b, double gamma);
std::unique_ptr<Schedule> step_schedule(double a, int64_t every, double factor);
std::unique_ptr<Schedule> cyclical_schedule(double a, int64_t total_steps, int64_t cycles,
                                            double explore_fraction = 0.0);

// The typed `schedule:` block, checked (as far as it can be without the run length) by validate().
struct ScheduleOptions {
  ScheduleOptions() = default;
  // Throws std::invalid_argument naming the key ("schedule.gamma: must be in [0, 1], got 2").
  void validate() const;
  TORCH_ARG(std::string, type) = "constant";  // constant | polynomial | step | cyclical
  TORCH_ARG(double, b) = 1.0;                 // polynomial
  TORCH_ARG(double, gamma) = 0.55;            // polynomial, in [0, 1]
  TORCH_ARG(int64_t, every) = 0;              // step: steps between decays ...
  TORCH_ARG(int64_t, every_epochs) = 0;       // ... or epochs (> 0 takes precedence)
  TORCH_ARG(double, factor) = 0.5;            // step, > 0
  TORCH_ARG(int64_t, cycles) = 4;             // cyclical, > 0 and <= the run's steps
  TORCH_ARG(double, explore_fraction) = 0.0;  // cyclical, in [0, 1): each cycle's noise-free start
};

// A schedule type and the keys of its `schedule:` block (`type` included): exactly what
// parse_schedule_options reads for it, documented (type, default, meaning) in schedule_types();
// `keys` is "type" and the docs' keys.
struct ScheduleType {
  ScheduleType(std::string name, std::vector<OptionDoc> options);
  std::string name;
  std::vector<std::string> keys;
  std::vector<OptionDoc> options;  // without `type`
};
const std::vector<ScheduleType>& schedule_types();
// The entry for the block's `type` (read with default constant); std::invalid_argument naming
// <context>.type with a suggestion if unknown.
const ScheduleType& find_schedule_type(const OptionMap& options);

// Reads `type` (std::invalid_argument naming <context>.type if unknown) and that type's keys, then
// validates. Reads no key of another type.
ScheduleOptions parse_schedule_options(const OptionMap& options);

// The schedule for a run: `a` is `base` (the sampler's lr), `total_steps` the run length (needed by
// cyclical), `steps_per_epoch` converts `every_epochs` to steps.
std::unique_ptr<Schedule> make_schedule(const ScheduleOptions& options, double base, int64_t total_steps,
                                        int64_t steps_per_epoch);

// From options: `type` (constant | polynomial | step | cyclical) and its parameters
// (b, gamma | every, factor | cycles); `a` is `base` (the sampler's lr). `total_steps` is the run
// length (needed by cyclical). `steps_per_epoch` converts `every_epochs` to steps.
std::unique_ptr<Schedule> make_schedule(const OptionMap& options, double base, int64_t total_steps,
                                        int64_t steps_per_epoch);

}  // namespace sgmcmc
