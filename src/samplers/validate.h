// Range checks for a validate() written by hand (the schedules'; the samplers' go through their
// option tables); each throws std::invalid_argument "<who>.<key>: must be ..., got <value>", worded
// by core/option_table.h's Range like every sampler key.
#pragma once

#include <sstream>
#include <string>

#include "core/option_table.h"

namespace sgmcmc {

inline std::string fmt_value(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

inline void check_positive(const std::string& who, const std::string& key, double v) {
  Range::positive().check(who, key, v);
}
inline void check_nonnegative(const std::string& who, const std::string& key, double v) {
  Range::nonnegative().check(who, key, v);
}
// lo < v <= hi (with `lo_open`) or lo <= v <= hi.
inline void check_range(const std::string& who, const std::string& key, double v, double lo,
                        double hi, bool lo_open = false, bool hi_open = false) {
  Range::interval(lo, hi, lo_open, hi_open).check(who, key, v);
}

}  // namespace sgmcmc
