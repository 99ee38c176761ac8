#include "data/csv.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/kfold.h"

namespace sgmcmc {
namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Splits a line at commas outside double quotes; strips surrounding quotes ("" inside = ").
std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

// The shortest text that reads back as `v` (for messages).
std::string number_text(double v) {
  std::string text;
  for (int prec = 6; prec <= 17; ++prec) {
    std::ostringstream s;
    s.precision(prec);
    s << v;
    text = s.str();
    if (!std::isfinite(v) || std::strtod(text.c_str(), nullptr) == v) break;
  }
  return text;
}

}  // namespace

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open CSV file");
  CsvTable t;
  std::vector<double> values;
  std::string line;
  int64_t lineno = 0, rows = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) continue;
    auto fields = split_fields(line);
    const std::string where = path + ":" + std::to_string(lineno);
    if (t.columns.empty()) {
      for (auto& f : fields)
        if (f.empty()) throw std::invalid_argument(where + ": empty column name in the header row");
      t.columns = fields;
      continue;
    }
    if (fields.size() != t.columns.size())
      throw std::invalid_argument(where + ": expected " + std::to_string(t.columns.size()) + " fields (as in the header), got " +
                                  std::to_string(fields.size()));
    for (size_t j = 0; j < fields.size(); ++j) {
      const std::string& f = fields[j];
      char* end = nullptr;
      errno = 0;
      double v = f.empty() ? NAN : std::strtod(f.c_str(), &end);
      if (f.empty() || *end != '\0' || !std::isfinite(v))
        throw std::invalid_argument(where + ": field " + std::to_string(j + 1) + " ('" + t.columns[j] +
                                    "') is not a finite number: '" + f + "'");
      values.push_back(v);
    }
    ++rows;
  }
  if (t.columns.empty()) throw std::invalid_argument(path + ": empty CSV file (expected a header row)");
  if (rows == 0) throw std::invalid_argument(path + ": no data rows after the header");
  t.values = torch::tensor(values, torch::kFloat64).reshape({rows, static_cast<int64_t>(t.columns.size())});
  return t;
}

void CsvOptions::validate(const std::string& where) const {
  if (path_.empty()) throw std::invalid_argument(where + ".path: missing (the CSV file)");
  if (!(test_fraction_ > 0 && test_fraction_ < 1))
    throw std::invalid_argument(where + ".test_fraction: must be in (0, 1), got " + number_text(test_fraction_));
  if (!(val_fraction_ >= 0 && val_fraction_ < 1))
    throw std::invalid_argument(where + ".val_fraction: must be in [0, 1), got " + number_text(val_fraction_));
  if (split_ < 0) throw std::invalid_argument(where + ".split: must be >= 0, got " + std::to_string(split_));
  if (split_seed_ < 0) throw std::invalid_argument(where + ".split_seed: must be >= 0, got " + std::to_string(split_seed_));
}

std::vector<OptionDoc> csv_option_docs() {
  const CsvOptions d;
  return {
      {"path", "text", "(required)", "the CSV file (a header row, numeric columns)", {}, ""},
      {"target", "text", d.target().empty() ? "(last column)" : d.target(), "the column to predict", {}, ""},
      {"test_fraction", "real", round_trip_text(d.test_fraction()),
       "the share of rows held out as the test set", {}, "in (0, 1)"},
      {"split", "integer", std::to_string(d.split()), "which random train/test split (0, 1, ...)", {}, ">= 0"},
      {"split_seed", "integer", std::to_string(d.split_seed()), "seeds the splits", {}, ">= 0"},
      {"val_fraction", "real", round_trip_text(d.val_fraction()), "the share of train rows held out for validation", {},
       "in [0, 1)"},
  };
}

CsvOptions parse_csv_options(const OptionMap& o) {
  CsvOptions c;
  c.path(o.get_string("path", c.path()))
      .target(o.get_string("target", c.target()))
      .test_fraction(o.get_double("test_fraction", c.test_fraction()))
      .split(o.get_int("split", c.split()))
      .split_seed(o.get_int("split_seed", c.split_seed()))
      .val_fraction(o.get_double("val_fraction", c.val_fraction()));
  c.validate(o.context().empty() ? "data" : o.context());
  return c;
}

namespace {

// Index of the target column (default: the last one).
int64_t target_column(const CsvTable& t, const CsvOptions& o, const std::string& where) {
  if (o.target().empty()) return static_cast<int64_t>(t.columns.size()) - 1;
  auto it = std::find(t.columns.begin(), t.columns.end(), o.target());
  if (it == t.columns.end()) {
    std::string near = nearest(o.target(), t.columns);
    throw std::invalid_argument(where + ".target: no column '" + o.target() + "' in " + o.path() +
                                (near.empty() ? "" : " (did you mean '" + near + "'?)"));
  }
  return it - t.columns.begin();
}

struct RowSplit {
  torch::Tensor train, val, test;  // sorted row indices
};

// Permutes the rows by seeded_permutation(n, split_seed + split): test first, then val, then train.
RowSplit split_rows(int64_t n, const CsvOptions& o, const std::string& where) {
  const auto n_test = static_cast<int64_t>(std::llround(o.test_fraction() * static_cast<double>(n)));
  const auto n_rest = n - n_test;
  const auto n_val = static_cast<int64_t>(std::llround(o.val_fraction() * static_cast<double>(n_rest)));
  if (n_test < 1 || n_rest - n_val < 2)
    throw std::invalid_argument(where + ".test_fraction: " + std::to_string(n) + " rows give " + std::to_string(n_test) +
                                " test / " + std::to_string(n_rest - n_val) + " train rows (need >= 1 and >= 2)");
  auto perm = seeded_permutation(n, static_cast<uint64_t>(o.split_seed() + o.split()));
  auto idx = [&](int64_t a, int64_t b) {
    std::vector<int64_t> v(perm.begin() + a, perm.begin() + b);
    std::sort(v.begin(), v.end());
    return torch::tensor(v, torch::kInt64);
  };
  return {idx(n_test + n_val, n), idx(n_test, n_test + n_val), idx(0, n_test)};
}

}  // namespace

Dataset load_csv_dataset(const CsvOptions& o, const std::string& where) {
  o.validate(where);
  CsvTable t = read_csv(o.path());
  const int64_t n = t.values.size(0), c = t.values.size(1);
  if (c < 2) throw std::invalid_argument(o.path() + ": need at least one feature column and a target column");
  const int64_t ti = target_column(t, o, where);
  const RowSplit rows = split_rows(n, o, where);
  // A constant column carries nothing (a feature) or leaves nothing to learn (the target): one line
  // naming it, not a run that diverges on a zero-variance target.
  for (int64_t j = 0; j < c; ++j) {
    const auto col = t.values.select(1, j);
    if (col.max().item<double>() == col.min().item<double>())
      throw std::invalid_argument(o.path() + ": column '" + t.columns[j] + "' is constant (every row is " +
                                  number_text(col[0].item<double>()) + ")" +
                                  (j == ti ? "; a constant target leaves nothing to learn"
                                           : "; drop it (it carries no information)"));
  }

  std::vector<int64_t> feat;
  for (int64_t j = 0; j < c; ++j)
    if (j != ti) feat.push_back(j);
  auto fidx = torch::tensor(feat, torch::kInt64);
  auto X = t.values.index_select(1, fidx), y = t.values.select(1, ti);
  auto Xtr = X.index_select(0, rows.train), ytr = y.index_select(0, rows.train);
  auto mu = Xtr.mean(0), sd = Xtr.std(0, /*unbiased=*/false);
  sd = torch::where(sd > 0, sd, torch::ones_like(sd));  // constant columns stay centred
  const double ymu = ytr.mean().item<double>();
  double ysd = ytr.std(/*unbiased=*/false).item<double>();
  if (!(ysd > 0))
    throw std::invalid_argument(o.path() + ": column '" + t.columns[ti] + "' (the target) is constant on the training split (" +
                                number_text(ymu) + "); a constant target leaves nothing to learn");
  auto make = [&](const torch::Tensor& r) {
    Batch b;
    b.inputs = ((X.index_select(0, r) - mu) / sd).to(torch::kFloat32);
    b.targets = ((y.index_select(0, r) - ymu) / ysd).to(torch::kFloat32);
    return b;
  };
  Dataset ds;
  ds.task = Task::kRegression;
  ds.train = make(rows.train);
  ds.val = make(rows.val);
  ds.test = make(rows.test);
  ds.standardized_targets = true;
  ds.target_mean = ymu;
  ds.target_scale = ysd;
  ds.feature_mean = mu.to(torch::kFloat64).contiguous();
  ds.feature_scale = sd.to(torch::kFloat64).contiguous();
  // what a user needs to treat new rows as these were (the run directory keeps it)
  std::ostringstream j;
  j.precision(17);
  j << "{\n  \"target\": \"" << t.columns[ti] << "\",\n  \"target_mean\": " << ymu << ",\n  \"target_scale\": " << ysd
    << ",\n  \"features\": [";
  for (size_t k = 0; k < feat.size(); ++k)
    j << (k ? ",\n    " : "\n    ") << "{\"column\": \"" << t.columns[feat[k]] << "\", \"mean\": " << mu[k].item<double>()
      << ", \"scale\": " << sd[k].item<double>() << "}";
  j << "\n  ],\n  \"rule\": \"the model sees (x - mean) / scale and predicts (y - target_mean) / target_scale\"\n}\n";
  ds.run_files["standardization.json"] = j.str();
  ds.dims = {{"features", c - 1}};
  ds.description = std::filesystem::path(o.path()).filename().string() + " (csv, target " + t.columns[ti] +
                   ", split " + std::to_string(o.split()) + "): " + std::to_string(ds.train.size()) + " train / " +
                   std::to_string(ds.val.size()) + " val / " + std::to_string(ds.test.size()) + " test, " +
                   std::to_string(c - 1) + " features";
  return ds;
}

Dataset load_csv_dataset(const OptionMap& o) {
  return load_csv_dataset(parse_csv_options(o), o.context().empty() ? "data" : o.context());
}

}  // namespace sgmcmc
