// An options block declared once: one row per key (its name, type, range and meaning) beside the
// TORCH_ARG struct that holds the values, whose initializers are the defaults. The parser, the
// per-key checks, the list of accepted keys, `--help-keys` and the Python signatures all read the
// same rows, so a key cannot be accepted but undocumented, or documented with a stale default.
//
//   const OptionTable<SgldOptions>& sgld_option_table() {
//     using T = OptionTable<SgldOptions>;
//     static const T table("sgld", {
//         T::real("lr", SGMCMC_FIELD(lr), Range::positive(), "step size"),
//         T::real("temperature", SGMCMC_FIELD(temperature), Range::nonnegative(), "T")});
//     return table;
//   }
//
// Cross-key rules ("fixed_point needs integrator: ssi") stay in the struct's validate(), which
// calls the table's check() first.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/option_map.h"

namespace sgmcmc {

// What `--help-keys` and the Python binding show of one key. Also the plain form for blocks whose
// parser is not a table (models, data formats, schedules): their entries list these beside it.
struct OptionDoc {
  std::string key;
  std::string type;          // real | integer | choice | flag | optional real | text | list ("": unstated)
  std::string default_text;  // as a resolved config writes it; "" when the key has none
  std::string meaning;       // one line
  std::vector<std::string> choices;  // for type choice
  std::string range;         // "> 0", "in (0, 1]", ... ("" when any value of the type goes)
};

// The shortest text that reads back as the same double (how OptionMap::resolved() writes a default).
std::string round_trip_text(double d);

// The keys of `docs`, in order.
std::vector<std::string> doc_keys(const std::vector<OptionDoc>& docs);
// The doc of `key` in `docs`, or nullptr.
const OptionDoc* find_doc(const std::vector<OptionDoc>& docs, const std::string& key);

// A range a number must lie in. check() throws std::invalid_argument
// "<who>.<key>: must be <range>, got <value>" in the wording the samplers have always used.
class Range {
 public:
  static Range finite() { return Range(Kind::kFinite); }            // reals: any finite value
  static Range positive() { return Range(Kind::kPositive); }        // finite > 0
  static Range nonnegative() { return Range(Kind::kNonNegative); }  // finite >= 0
  // lo <= v <= hi, either end open.
  static Range interval(double lo, double hi, bool lo_open, bool hi_open);
  // Integers: v >= lo.
  static Range at_least(int64_t lo);

  void check(const std::string& who, const std::string& key, double v) const;
  void check_int(const std::string& who, const std::string& key, int64_t v) const;
  // "> 0", ">= 0", "in (0, 1]", ">= 1"; "" for finite().
  std::string text() const;

 private:
  enum class Kind { kFinite, kPositive, kNonNegative, kInterval, kAtLeast };
  explicit Range(Kind kind) : kind_(kind) {}
  Kind kind_;
  double lo_ = 0, hi_ = 0;
  bool lo_open_ = false, hi_open_ = false;
};

// "<who>.<key>: must be one of {a, b}, got 'x'" unless `value` is one of `choices`.
void check_choice(const std::string& who, const std::string& key, const std::string& value,
                  const std::vector<std::string>& choices);

// A TORCH_ARG field as an accessor for the row builders: SGMCMC_FIELD(alpha) reads and writes
// options.alpha_ (a generic lambda, so one accessor serves the const and the mutable struct).
#define SGMCMC_FIELD(name) [](auto& o) -> auto& { return o.name(); }

template <class Options>
class OptionTable {
 public:
  struct Row {
    OptionDoc doc;  // default_text is filled in by the table from a default-constructed Options
    std::function<void(const OptionMap&, Options&)> read;
    std::function<void(const std::string& who, const Options&)> check;
    std::function<std::string(const Options&)> text;  // the value as a resolved config writes it
  };

  // `who` names the block in messages ("sghmc.alpha: must be ...").
  OptionTable(std::string who, std::vector<Row> rows) : who_(std::move(who)), rows_(std::move(rows)) {
    const Options defaults;
    for (auto& r : rows_)
      if (r.doc.default_text.empty()) r.doc.default_text = r.text(defaults);
  }

  const std::string& who() const { return who_; }

  // Every key read from `o` (unset ones keep the struct's default, recorded as the resolved
  // default); no checks beyond the reader's type (call validate()).
  Options parse(const OptionMap& o) const {
    Options opt;
    for (const auto& r : rows_) r.read(o, opt);
    return opt;
  }
  // The per-key checks, in row order.
  void check(const Options& opt) const {
    for (const auto& r : rows_) r.check(who_, opt);
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& r : rows_) out.push_back(r.doc.key);
    return out;
  }
  std::vector<OptionDoc> docs() const {
    std::vector<OptionDoc> out;
    for (const auto& r : rows_) out.push_back(r.doc);
    return out;
  }

  // Row builders. `field` is SGMCMC_FIELD(name) (any callable returning a reference to the value).
  template <class F>
  static Row real(std::string key, F field, Range range, std::string meaning) {
    Row r{{key, "real", "", std::move(meaning), {}, range.text()}, {}, {}, {}};
    r.read = [key, field](const OptionMap& o, Options& opt) {
      auto& v = field(opt);
      v = o.get_double(key, v);
    };
    r.check = [key, field, range](const std::string& who, const Options& opt) { range.check(who, key, field(opt)); };
    r.text = [field](const Options& opt) { return round_trip_text(field(opt)); };
    return r;
  }
  template <class F>
  static Row integer(std::string key, F field, Range range, std::string meaning) {
    Row r{{key, "integer", "", std::move(meaning), {}, range.text()}, {}, {}, {}};
    r.read = [key, field](const OptionMap& o, Options& opt) {
      auto& v = field(opt);
      v = o.get_int(key, v);
    };
    r.check = [key, field, range](const std::string& who, const Options& opt) {
      range.check_int(who, key, field(opt));
    };
    r.text = [field](const Options& opt) { return std::to_string(field(opt)); };
    return r;
  }
  template <class F>
  static Row flag(std::string key, F field, std::string meaning) {
    Row r{{key, "flag", "", std::move(meaning), {}, ""}, {}, {}, {}};
    r.read = [key, field](const OptionMap& o, Options& opt) {
      auto& v = field(opt);
      v = o.get_bool(key, v);
    };
    r.check = [](const std::string&, const Options&) {};
    r.text = [field](const Options& opt) { return std::string(field(opt) ? "true" : "false"); };
    return r;
  }
  template <class F>
  static Row choice(std::string key, F field, std::vector<std::string> choices, std::string meaning) {
    Row r{{key, "choice", "", std::move(meaning), choices, ""}, {}, {}, {}};
    r.read = [key, field, choices](const OptionMap& o, Options& opt) {
      auto& v = field(opt);
      v = o.get_choice(key, v, choices);
    };
    r.check = [key, field, choices](const std::string& who, const Options& opt) {
      check_choice(who, key, field(opt), choices);
    };
    r.text = [field](const Options& opt) { return field(opt); };
    return r;
  }
  // A std::optional<double> that is unset unless given; `unset_text` says what stands in for it
  // ("diffusion": the default is another key's value).
  template <class F>
  static Row optional_real(std::string key, F field, Range range, std::string unset_text, std::string meaning) {
    Row r{{key, "optional real", "", std::move(meaning), {}, range.text()}, {}, {}, {}};
    r.read = [key, field](const OptionMap& o, Options& opt) {
      if (auto v = o.get_optional_double(key)) field(opt) = *v;
    };
    r.check = [key, field, range](const std::string& who, const Options& opt) {
      if (const auto& v = field(opt)) range.check(who, key, *v);
    };
    r.text = [field, unset_text](const Options& opt) {
      const auto& v = field(opt);
      return v ? round_trip_text(*v) : "(" + unset_text + ")";
    };
    return r;
  }

 private:
  std::string who_;
  std::vector<Row> rows_;
};

}  // namespace sgmcmc
