// A flat map of option name -> scalar text, as parsed from a YAML mapping or `--set key=value`.
// Typed getters convert and validate; every key read is marked used, and `check_all_used`
// rejects keys nobody read (unknown keys are errors, with the nearest valid key suggested).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sgmcmc {

class OptionMap {
 public:
  OptionMap() = default;
  // `context` names where the options come from, e.g. "sampler" or "configs/x.yaml: sampler".
  explicit OptionMap(std::string context) : context_(std::move(context)) {}

  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  void erase(const std::string& key) { values_.erase(key); }
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  const std::string& context() const { return context_; }
  const std::map<std::string, std::string>& values() const { return values_; }

  double get_double(const std::string& key, double fallback) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  // A string that must be one of `choices`.
  std::string get_choice(const std::string& key, const std::string& fallback,
                         const std::vector<std::string>& choices) const;
  // A key without a default: marked read, nullopt when not given (and no default recorded, so
  // resolved() lists it only when given).
  std::optional<double> get_optional_double(const std::string& key) const;
  std::optional<int64_t> get_optional_int(const std::string& key) const;

  // Phase 1 of config checking: throws std::invalid_argument "<context>.<key>: unknown key (did you
  // mean 'y'?)" for the first key (in key order) that is not in `known`; reads no value.
  void check_known(const std::vector<std::string>& known) const;

  // Throws std::invalid_argument naming the first key that was never read, with a suggestion
  // among the keys that were read (or `extra_valid`).
  void check_all_used(const std::vector<std::string>& extra_valid = {}) const;

  // The given values plus the fallback of every key that was read but not given (as text), i.e.
  // the options with defaults filled in (for writing a resolved config).
  std::map<std::string, std::string> resolved() const;

  // The keys read so far (given or not), e.g. to check a parser against its declared keys.
  const std::set<std::string>& read_keys() const { return read_; }

 private:
  std::optional<std::string> lookup(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

  std::string context_;
  std::map<std::string, std::string> values_;
  mutable std::set<std::string> read_;
  mutable std::map<std::string, std::string> defaults_;  // fallbacks handed out, as text
};

// Comma-separated list parsing for list-valued options ("100,100" or "[100, 100]" -> {100, 100});
// std::invalid_argument naming `where` on anything else.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& where);

// Levenshtein distance, and the closest candidate within a small distance ("" if none).
size_t edit_distance(const std::string& a, const std::string& b);
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace sgmcmc
