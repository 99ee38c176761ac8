#include "core/option_table.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace sgmcmc {
namespace {

// A value as the range messages have always shown it (six significant digits).
std::string shown(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

[[noreturn]] void fail(const std::string& who, const std::string& key, const std::string& what) {
  throw std::invalid_argument(who + "." + key + ": " + what);
}

}  // namespace

std::vector<std::string> doc_keys(const std::vector<OptionDoc>& docs) {
  std::vector<std::string> out;
  for (const auto& d : docs) out.push_back(d.key);
  return out;
}

const OptionDoc* find_doc(const std::vector<OptionDoc>& docs, const std::string& key) {
  for (const auto& d : docs)
    if (d.key == key) return &d;
  return nullptr;
}

Range Range::interval(double lo, double hi, bool lo_open, bool hi_open) {
  Range r(Kind::kInterval);
  r.lo_ = lo;
  r.hi_ = hi;
  r.lo_open_ = lo_open;
  r.hi_open_ = hi_open;
  return r;
}

Range Range::at_least(int64_t lo) {
  Range r(Kind::kAtLeast);
  r.lo_ = static_cast<double>(lo);
  return r;
}

std::string Range::text() const {
  switch (kind_) {
    case Kind::kFinite: return "";
    case Kind::kPositive: return "> 0";
    case Kind::kNonNegative: return ">= 0";
    case Kind::kInterval:
      return std::string("in ") + (lo_open_ ? "(" : "[") + shown(lo_) + ", " + shown(hi_) + (hi_open_ ? ")" : "]");
    case Kind::kAtLeast: return ">= " + std::to_string(static_cast<int64_t>(lo_));
  }
  return "";
}

void Range::check(const std::string& who, const std::string& key, double v) const {
  const bool finite = std::isfinite(v);
  switch (kind_) {
    case Kind::kFinite:
      if (!finite) fail(who, key, "must be finite, got " + shown(v));
      return;
    case Kind::kPositive:
      if (!(v > 0) || !finite) fail(who, key, "must be a finite number > 0, got " + shown(v));
      return;
    case Kind::kNonNegative:
      if (!(v >= 0) || !finite) fail(who, key, "must be a finite number >= 0, got " + shown(v));
      return;
    case Kind::kInterval:
      if (!(finite && (lo_open_ ? v > lo_ : v >= lo_) && (hi_open_ ? v < hi_ : v <= hi_)))
        fail(who, key, "must be " + text() + ", got " + shown(v));
      return;
    case Kind::kAtLeast:
      if (!(v >= lo_)) fail(who, key, "must be " + text() + ", got " + shown(v));
      return;
  }
}

void Range::check_int(const std::string& who, const std::string& key, int64_t v) const {
  const auto x = static_cast<double>(v);
  const bool ok = kind_ == Kind::kFinite || (kind_ == Kind::kPositive && v > 0) ||
                  (kind_ == Kind::kNonNegative && v >= 0) || (kind_ == Kind::kAtLeast && x >= lo_) ||
                  (kind_ == Kind::kInterval && (lo_open_ ? x > lo_ : x >= lo_) && (hi_open_ ? x < hi_ : x <= hi_));
  if (!ok) fail(who, key, "must be " + text() + ", got " + std::to_string(v));
}

void check_choice(const std::string& who, const std::string& key, const std::string& value,
                  const std::vector<std::string>& choices) {
  for (const auto& c : choices)
    if (c == value) return;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  fail(who, key, "must be one of {" + list + "}, got '" + value + "'");
}

}  // namespace sgmcmc
