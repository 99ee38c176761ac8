#include "core/option_map.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "core/option_table.h"

namespace sgmcmc {

std::string round_trip_text(double d) {
  for (int prec = 6; prec <= 17; ++prec) {
    std::ostringstream s;
    s.precision(prec);
    s << d;
    if (std::strtod(s.str().c_str(), nullptr) == d) return s.str();
  }
  return std::to_string(d);
}

std::optional<std::string> OptionMap::lookup(const std::string& key) const {
  read_.insert(key);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void OptionMap::fail(const std::string& key, const std::string& what) const {
  // A block's context is "file: block" (file: block.key); the top level's is "file:" (file: key).
  std::string where = context_.empty() ? key : context_.back() == ':' ? context_ + " " + key : context_ + "." + key;
  throw std::invalid_argument(where + ": " + what);
}

double OptionMap::get_double(const std::string& key, double fallback) const {
  auto v = lookup(key);
  if (!v) return defaults_[key] = round_trip_text(fallback), fallback;
  const char* s = v->c_str();
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE || !std::isfinite(d))
    fail(key, "expected a finite number, got '" + *v + "'");
  return d;
}

int64_t OptionMap::get_int(const std::string& key, int64_t fallback) const {
  auto v = lookup(key);
  if (!v) return defaults_[key] = std::to_string(fallback), fallback;
  const char* s = v->c_str();
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno == ERANGE) {
    // Accept integral values written as floats ("1e4", "100.0").
    double d = std::strtod(s, &end);
    if (end != s && *end == '\0' && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18)
      return static_cast<int64_t>(d);
    fail(key, "expected an integer, got '" + *v + "'");
  }
  return i;
}

bool OptionMap::get_bool(const std::string& key, bool fallback) const {
  auto v = lookup(key);
  if (!v) return defaults_[key] = fallback ? "true" : "false", fallback;
  std::string s = *v;
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
  if (s == "false" || s == "no" || s == "off" || s == "0") return false;
  fail(key, "expected true or false, got '" + *v + "'");
}

std::string OptionMap::get_string(const std::string& key, const std::string& fallback) const {
  auto v = lookup(key);
  if (!v) defaults_[key] = fallback;
  return v ? *v : fallback;
}

std::string OptionMap::get_choice(const std::string& key, const std::string& fallback,
                                  const std::vector<std::string>& choices) const {
  std::string v = get_string(key, fallback);
  if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  std::string near = nearest(v, choices);
  fail(key, "'" + v + "' is not one of {" + list + "}" +
                (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

std::optional<double> OptionMap::get_optional_double(const std::string& key) const {
  if (!has(key)) {
    read_.insert(key);
    return std::nullopt;
  }
  return get_double(key, 0.0);
}

std::optional<int64_t> OptionMap::get_optional_int(const std::string& key) const {
  if (!has(key)) {
    read_.insert(key);
    return std::nullopt;
  }
  return get_int(key, 0);
}

void OptionMap::check_known(const std::vector<std::string>& known) const {
  for (const auto& [key, value] : values_) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string near = nearest(key, known);
    fail(key, "unknown key" + (near.empty() ? std::string() : " (did you mean '" + near + "'?)"));
  }
}

void OptionMap::check_all_used(const std::vector<std::string>& extra_valid) const {
  std::vector<std::string> valid(read_.begin(), read_.end());
  valid.insert(valid.end(), extra_valid.begin(), extra_valid.end());
  for (const auto& [key, value] : values_) {
    if (read_.count(key) ||
        std::find(extra_valid.begin(), extra_valid.end(), key) != extra_valid.end())
      continue;
    std::string near = nearest(key, valid);
    fail(key, "unknown key" + (near.empty() ? std::string() : " (did you mean '" + near + "'?)"));
  }
}

std::map<std::string, std::string> OptionMap::resolved() const {
  std::map<std::string, std::string> out = defaults_;
  for (const auto& [k, v] : values_) out[k] = v;
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& where) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto b = item.find_first_not_of(" \t[]"), e = item.find_last_not_of(" \t[]");
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0')
      throw std::invalid_argument(where + ": expected a list of integers, got '" + text + "'");
    out.push_back(v);
  }
  return out;
}

}  // namespace sgmcmc
