#include "data/libsvm.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "data/kfold.h"
#include "data/splits.h"

namespace sgmcmc {
namespace {

[[noreturn]] void fail_at(const std::string& path, int64_t line, const std::string& what) {
  throw std::invalid_argument(path + ":" + std::to_string(line) + ": " + what);
}

// A whole token as a finite number, else nullopt-like false.
bool number(const std::string& token, double& out) {
  if (token.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(token.c_str(), &end);
  return end == token.c_str() + token.size() && errno != ERANGE && std::isfinite(out);
}

struct SparseRow {
  double label = 0;
  std::vector<std::pair<int64_t, float>> entries;  // (0-based column, value)
};

std::vector<SparseRow> read_rows(const std::string& path, int64_t& max_index) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open the file");
  std::vector<SparseRow> rows;
  std::string line;
  for (int64_t lineno = 1; std::getline(in, line); ++lineno) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream tokens(line);
    std::string token;
    if (!(tokens >> token)) continue;  // blank or comment
    SparseRow row;
    if (!number(token, row.label)) fail_at(path, lineno, "label '" + token + "' is not a number");
    int64_t previous = 0;
    while (tokens >> token) {
      const auto colon = token.find(':');
      double index = 0, value = 0;
      if (colon == std::string::npos || !number(token.substr(0, colon), index) || !number(token.substr(colon + 1), value))
        fail_at(path, lineno, "'" + token + "' is not <index>:<value>");
      if (index != std::floor(index) || index < 1 || index > 1e9)
        fail_at(path, lineno, "index " + token.substr(0, colon) + " is not an integer from 1");
      const auto i = static_cast<int64_t>(index);
      if (i <= previous) fail_at(path, lineno, "index " + std::to_string(i) + " after " + std::to_string(previous) +
                                                   " (indices must increase)");
      previous = i;
      max_index = std::max(max_index, i);
      row.entries.emplace_back(i - 1, static_cast<float>(value));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw std::invalid_argument(path + ": no examples");
  return rows;
}

torch::Tensor dense(const std::vector<SparseRow>& rows, int64_t features) {
  auto x = torch::zeros({static_cast<int64_t>(rows.size()), features}, torch::kFloat32);
  auto a = x.accessor<float, 2>();
  for (size_t r = 0; r < rows.size(); ++r)
    for (const auto& [c, v] : rows[r].entries) a[static_cast<int64_t>(r)][c] = v;
  return x;
}

// Rows `idx` of a batch.
Batch take(const Batch& b, const std::vector<int64_t>& idx) {
  const auto i = torch::tensor(idx, torch::kInt64);
  return Batch{b.inputs.index_select(0, i), b.targets.index_select(0, i)};
}

std::string label_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

LibsvmRows read_libsvm(const std::string& path, int64_t min_features) {
  int64_t max_index = 0;
  const auto rows = read_rows(path, max_index);
  LibsvmRows out;
  out.inputs = dense(rows, std::max(max_index, min_features));
  for (const auto& r : rows) out.labels.push_back(r.label);
  return out;
}

void LibsvmOptions::validate(const std::string& where) const {
  if (path_.empty()) throw std::invalid_argument(where + ".path: required for data.format: libsvm (a LIBSVM text file)");
  if (!(test_fraction_ > 0 && test_fraction_ < 1))
    throw std::invalid_argument(where + ".test_fraction: must be in (0, 1), got " + label_text(test_fraction_));
  if (split_seed_ < 0) throw std::invalid_argument(where + ".split_seed: must be >= 0, got " + std::to_string(split_seed_));
  if (features_ < 0) throw std::invalid_argument(where + ".features: must be >= 0, got " + std::to_string(features_));
}

std::vector<OptionDoc> libsvm_option_docs() {
  const LibsvmOptions d;
  return {
      {"path", "text", "(required)", "the training file (LIBSVM text: <label> <index>:<value> ...)", {}, ""},
      {"test_path", "text", "(none)", "the test file; without it test_fraction of the rows is held out", {}, ""},
      {"test_fraction", "real", round_trip_text(d.test_fraction()), "the share held out as the test set without test_path",
       {}, "in (0, 1)"},
      {"split_seed", "integer", std::to_string(d.split_seed()), "seeds that split", {}, ">= 0"},
      {"features", "integer", std::to_string(d.features()), "the input dimension (0: the largest index of the files)", {},
       ">= 0"},
  };
}

LibsvmOptions parse_libsvm_options(const OptionMap& o) {
  const std::string where = o.context().empty() ? "data" : o.context();
  LibsvmOptions l;
  l.path(o.get_string("path", ""))
      .test_path(o.get_string("test_path", ""))
      .test_fraction(o.get_double("test_fraction", l.test_fraction()))
      .split_seed(o.get_int("split_seed", l.split_seed()))
      .features(o.get_int("features", l.features()));
  l.validate(where);
  return l;
}

Dataset load_libsvm_dataset(const LibsvmOptions& o, int64_t val_size, uint64_t seed, const std::string& where) {
  int64_t max_index = o.features();
  const auto train_rows = read_rows(o.path(), max_index);
  std::vector<SparseRow> test_rows;
  if (!o.test_path().empty()) test_rows = read_rows(o.test_path(), max_index);
  if (o.features() > 0 && max_index > o.features())
    throw std::invalid_argument(where + ".features: " + std::to_string(o.features()) + ", but the files use index " +
                                std::to_string(max_index));
  // The classes: the training file's distinct labels in order; the test file's must be among them.
  std::map<double, int64_t> classes;
  for (const auto& r : train_rows) classes.emplace(r.label, 0);
  int64_t k = 0;
  for (auto& [label, c] : classes) c = k++;
  if (classes.size() < 2)
    throw std::invalid_argument(o.path() + ": one label (" + label_text(classes.begin()->first) +
                                ") in every example: nothing to classify");
  auto targets = [&](const std::vector<SparseRow>& rows, const std::string& file) {
    std::vector<int64_t> y;
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto it = classes.find(rows[r].label);
      if (it == classes.end())
        throw std::invalid_argument(file + ": example " + std::to_string(r + 1) + ": label " + label_text(rows[r].label) +
                                    " is not among the training file's labels");
      y.push_back(it->second);
    }
    return torch::tensor(y, torch::kInt64);
  };
  Dataset ds;
  ds.task = Task::kClassification;
  Batch all{dense(train_rows, max_index), targets(train_rows, o.path())};
  if (!test_rows.empty()) {
    ds.train = all;
    ds.test = Batch{dense(test_rows, max_index), targets(test_rows, o.test_path())};
  } else {
    const int64_t n = all.size();
    const auto perm = seeded_permutation(n, static_cast<uint64_t>(o.split_seed()));
    const auto n_test = static_cast<int64_t>(std::llround(o.test_fraction() * static_cast<double>(n)));
    if (n_test < 1 || n_test >= n)
      throw std::invalid_argument(where + ".test_fraction: " + label_text(o.test_fraction()) + " of " +
                                  std::to_string(n) + " examples leaves no test or no training example");
    ds.test = take(all, std::vector<int64_t>(perm.begin(), perm.begin() + n_test));
    ds.train = take(all, std::vector<int64_t>(perm.begin() + n_test, perm.end()));
  }
  auto [tr, val] = split_validation(ds.train, val_size >= 0 ? val_size : ds.train.size() / 6, seed, where + ".val_size");
  ds.train = tr;
  ds.val = val;
  ds.num_classes = static_cast<int64_t>(classes.size());
  ds.dims = {{"features", max_index}, {"classes", ds.num_classes}};
  std::string labels;
  for (const auto& [label, c] : classes) labels += (labels.empty() ? "" : ", ") + label_text(label);
  ds.description = std::filesystem::path(o.path()).filename().string() + " (libsvm): " + std::to_string(ds.train.size()) +
                   " train / " + std::to_string(ds.val.size()) + " val / " + std::to_string(ds.test.size()) + " test, " +
                   std::to_string(max_index) + " features, labels " + labels;
  return ds;
}

}  // namespace sgmcmc
