#include "samplers/schedules.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "samplers/validate.h"

namespace sgmcmc {
namespace {

class Constant : public Schedule {
 public:
  explicit Constant(double a) : a_(a) {}
  double at(int64_t) const override { return a_; }
  std::string describe() const override { return "constant(" + fmt_value(a_) + ")"; }
 private:
  double a_;
};

class Polynomial : public Schedule {
 public:
  Polynomial(double a, double b, double g) : a_(a), b_(b), g_(g) {}
  double at(int64_t t) const override { return a_ * std::pow(b_ + static_cast<double>(t), -g_); }
  std::string describe() const override {
    return "polynomial(a=" + fmt_value(a_) + ", b=" + fmt_value(b_) + ", gamma=" + fmt_value(g_) + ")";
  }
 private:
  double a_, b_, g_;
};

class StepDecay : public Schedule {
 public:
  StepDecay(double a, int64_t every, double f) : a_(a), every_(every), f_(f) {}
  double at(int64_t t) const override {
    return a_ * std::pow(f_, static_cast<double>(t / every_));
  }
  std::string describe() const override {
    return "step(a=" + fmt_value(a_) + ", every=" + std::to_string(every_) + ", factor=" + fmt_value(f_) + ")";
  }
 private:
  double a_;
  int64_t every_;
  double f_;
};

class Cyclical : public Schedule {
 public:
  Cyclical(double a, int64_t total, int64_t cycles, double explore)
      : a_(a), cycle_len_((total + cycles - 1) / cycles), cycles_(cycles), explore_(explore) {}
  double at(int64_t t) const override {
    const double pi = 3.14159265358979323846;
    return a_ / 2 * (std::cos(pi * position(t)) + 1);
  }
  bool sampling(int64_t t) const override { return position(t) >= explore_; }
  bool has_stages() const override { return explore_ > 0; }
  std::string describe() const override {
    return "cyclical(a=" + fmt_value(a_) + ", cycle_len=" + std::to_string(cycle_len_) +
           (explore_ > 0 ? ", explore_fraction=" + fmt_value(explore_) : std::string()) + ")";
  }
 private:
  double position(int64_t t) const {  // r(t) in [0, 1)
    return static_cast<double>(t % cycle_len_) / static_cast<double>(cycle_len_);
  }
  double a_;
  int64_t cycle_len_, cycles_;
  double explore_;
};

}  // namespace

std::unique_ptr<Schedule> constant_schedule(double a) {
  check_nonnegative("schedule", "a", a);
  return std::make_unique<Constant>(a);
}
std::unique_ptr<Schedule> polynomial_schedule(double a, double b, double gamma) {
  check_nonnegative("schedule", "a", a);
  check_positive("schedule", "b", b);
  check_range("schedule", "gamma", gamma, 0, 1);
  return std::make_unique<Polynomial>(a, b, gamma);
}
std::unique_ptr<Schedule> step_schedule(double a, int64_t every, double factor) {
  check_nonnegative("schedule", "a", a);
  if (every <= 0) throw std::invalid_argument("schedule.every: must be > 0, got " + std::to_string(every));
  check_positive("schedule", "factor", factor);
  return std::make_unique<StepDecay>(a, every, factor);
}
std::unique_ptr<Schedule> cyclical_schedule(double a, int64_t total_steps, int64_t cycles, double explore_fraction) {
  check_nonnegative("schedule", "a", a);
  if (!(explore_fraction >= 0 && explore_fraction < 1))
    throw std::invalid_argument("schedule.explore_fraction: must be in [0, 1), got " + fmt_value(explore_fraction));
  if (cycles <= 0) throw std::invalid_argument("schedule.cycles: must be > 0, got " + std::to_string(cycles));
  if (total_steps < cycles)
    throw std::invalid_argument("schedule.cycles: more cycles (" + std::to_string(cycles) +
                                ") than steps (" + std::to_string(total_steps) + ")");
  return std::make_unique<Cyclical>(a, total_steps, cycles, explore_fraction);
}

ScheduleType::ScheduleType(std::string name_, std::vector<OptionDoc> options_)
    : name(std::move(name_)), options(std::move(options_)) {
  keys = {"type"};
  for (const auto& d : options) keys.push_back(d.key);
}

const std::vector<ScheduleType>& schedule_types() {
  // Beside parse_schedule_options, which reads these keys with ScheduleOptions' defaults.
  const ScheduleOptions d;
  static const std::vector<ScheduleType> types = {
      {"constant", {}},
      {"polynomial",
       {{"b", "real", round_trip_text(d.b()), "b in a·(b + t)^(-γ)", {}, "> 0"},
        {"gamma", "real", round_trip_text(d.gamma()), "γ in a·(b + t)^(-γ)", {}, "in [0, 1]"}}},
      {"step",
       {{"every", "integer", std::to_string(d.every()), "steps between decays", {}, ""},
        {"every_epochs", "integer", std::to_string(d.every_epochs()), "... or epochs (> 0 takes precedence)", {}, ""},
        {"factor", "real", round_trip_text(d.factor()), "the step size's factor at each decay", {}, "> 0"}}},
      {"cyclical",
       {{"cycles", "integer", std::to_string(d.cycles()), "cosine cycles over the run", {}, "> 0"},
        {"explore_fraction", "real", round_trip_text(d.explore_fraction()),
         "each cycle's noise-free start (temperature 0, no samples)", {}, "in [0, 1)"}}},
  };
  return types;
}

const ScheduleType& find_schedule_type(const OptionMap& o) {
  std::vector<std::string> names;
  for (const auto& t : schedule_types()) names.push_back(t.name);
  const std::string type = o.get_choice("type", "constant", names);
  for (const auto& t : schedule_types())
    if (t.name == type) return t;
  throw std::logic_error("find_schedule_type: " + type);  // unreachable: get_choice checked it
}

void ScheduleOptions::validate() const {
  if (type_ == "polynomial") {
    check_positive("schedule", "b", b_);
    check_range("schedule", "gamma", gamma_, 0, 1);
  } else if (type_ == "step") {
    if (every_ <= 0 && every_epochs_ <= 0)
      throw std::invalid_argument("schedule.every: step schedule needs every > 0 or every_epochs > 0");
    check_positive("schedule", "factor", factor_);
  } else if (type_ == "cyclical") {
    if (cycles_ <= 0) throw std::invalid_argument("schedule.cycles: must be > 0, got " + std::to_string(cycles_));
    if (!(explore_fraction_ >= 0 && explore_fraction_ < 1))
      throw std::invalid_argument("schedule.explore_fraction: must be in [0, 1), got " + fmt_value(explore_fraction_));
  } else if (type_ != "constant") {
    throw std::invalid_argument("schedule.type: unknown schedule type '" + type_ + "'");
  }
}

ScheduleOptions parse_schedule_options(const OptionMap& o) {
  ScheduleOptions opt;
  opt.type(find_schedule_type(o).name);
  if (opt.type() == "polynomial") {
    opt.b(o.get_double("b", opt.b())).gamma(o.get_double("gamma", opt.gamma()));
  } else if (opt.type() == "step") {
    opt.every(o.get_int("every", opt.every()))
        .every_epochs(o.get_int("every_epochs", opt.every_epochs()))
        .factor(o.get_double("factor", opt.factor()));
  } else if (opt.type() == "cyclical") {
    opt.cycles(o.get_int("cycles", opt.cycles())).explore_fraction(o.get_double("explore_fraction", opt.explore_fraction()));
  }
  opt.validate();
  return opt;
}

std::unique_ptr<Schedule> make_schedule(const ScheduleOptions& opt, double base, int64_t total_steps,
                                        int64_t steps_per_epoch) {
  opt.validate();
  if (opt.type() == "constant") return constant_schedule(base);
  if (opt.type() == "polynomial") return polynomial_schedule(base, opt.b(), opt.gamma());
  if (opt.type() == "step") {
    int64_t every = opt.every();
    if (opt.every_epochs() > 0) every = opt.every_epochs() * std::max<int64_t>(1, steps_per_epoch);
    return step_schedule(base, every, opt.factor());
  }
  return cyclical_schedule(base, total_steps, opt.cycles(), opt.explore_fraction());
}

std::unique_ptr<Schedule> make_schedule(const OptionMap& o, double base, int64_t total_steps,
                                        int64_t steps_per_epoch) {
  return make_schedule(parse_schedule_options(o), base, total_steps, steps_per_epoch);
}

}  // namespace sgmcmc
