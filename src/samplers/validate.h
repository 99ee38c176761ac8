// Range checks shared by the samplers' Options::validate(); each throws std::invalid_argument
// with a message "<sampler>.<key>: must be ..., got <value>".
#pragma once

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace sgmcmc {

inline std::string fmt_value(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

inline void check_positive(const std::string& who, const std::string& key, double v) {
  if (!(v > 0) || !std::isfinite(v))
    throw std::invalid_argument(who + "." + key + ": must be a finite number > 0, got " + fmt_value(v));
}
inline void check_nonnegative(const std::string& who, const std::string& key, double v) {
  if (!(v >= 0) || !std::isfinite(v))
    throw std::invalid_argument(who + "." + key + ": must be a finite number >= 0, got " + fmt_value(v));
}
// lo < v <= hi (with `lo_open`) or lo <= v <= hi.
inline void check_range(const std::string& who, const std::string& key, double v, double lo,
                        double hi, bool lo_open = false, bool hi_open = false) {
  bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  if (!ok)
    throw std::invalid_argument(who + "." + key + ": must be in " + (lo_open ? "(" : "[") +
                                fmt_value(lo) + ", " + fmt_value(hi) + (hi_open ? ")" : "]") +
                                ", got " + fmt_value(v));
}

}  // namespace sgmcmc
