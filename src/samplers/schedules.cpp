#include "samplers/schedules.h"

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
  Cyclical(double a, int64_t total, int64_t cycles)
      : a_(a), cycle_len_((total + cycles - 1) / cycles), cycles_(cycles) {}
  double at(int64_t t) const override {
    const double pi = 3.14159265358979323846;
    double r = static_cast<double>(t % cycle_len_) / static_cast<double>(cycle_len_);
    return a_ / 2 * (std::cos(pi * r) + 1);
  }
  std::string describe() const override {
    return "cyclical(a=" + fmt_value(a_) + ", cycle_len=" + std::to_string(cycle_len_) + ")";
  }
 private:
  double a_;
  int64_t cycle_len_, cycles_;
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
std::unique_ptr<Schedule> cyclical_schedule(double a, int64_t total_steps, int64_t cycles) {
  check_nonnegative("schedule", "a", a);
  if (cycles <= 0) throw std::invalid_argument("schedule.cycles: must be > 0, got " + std::to_string(cycles));
  if (total_steps < cycles)
    throw std::invalid_argument("schedule.cycles: more cycles (" + std::to_string(cycles) +
                                ") than steps (" + std::to_string(total_steps) + ")");
  return std::make_unique<Cyclical>(a, total_steps, cycles);
}

std::unique_ptr<Schedule> make_schedule(const OptionMap& o, double base, int64_t total_steps,
                                        int64_t steps_per_epoch) {
  std::string type = o.get_choice("type", "constant", {"constant", "polynomial", "step", "cyclical"});
  if (type == "constant") return constant_schedule(base);
  if (type == "polynomial")
    return polynomial_schedule(base, o.get_double("b", 1.0), o.get_double("gamma", 0.55));
  if (type == "step") {
    int64_t every = o.get_int("every", 0);
    int64_t every_epochs = o.get_int("every_epochs", 0);
    if (every_epochs > 0) every = every_epochs * std::max<int64_t>(1, steps_per_epoch);
    if (every <= 0)
      throw std::invalid_argument(o.context() + ".every: step schedule needs every > 0 or every_epochs > 0");
    return step_schedule(base, every, o.get_double("factor", 0.5));
  }
  return cyclical_schedule(base, total_steps, o.get_int("cycles", 4));
}

}  // namespace sgmcmc
