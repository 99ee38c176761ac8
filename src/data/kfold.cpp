#include "data/kfold.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

namespace sgmcmc {

// The ratings file's layout when the block names none: read from the file.
const char* const kDefaultRatingsFormat = "auto";
namespace {

// Uniform integer in [0, range) without modulo bias (Lemire 2019, rejection on the low part).
uint64_t bounded(std::mt19937_64& rng, uint64_t range) {
  const uint64_t threshold = (0 - range) % range;  // (2^64 − range) mod range = 2^64 mod range
  for (;;) {
    const uint64_t x = rng();
    if (x >= threshold) return x % range;
  }
}

torch::Tensor sorted_tensor(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  auto t = torch::empty({static_cast<int64_t>(v.size())}, torch::kInt64);
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t;
}

}  // namespace

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(bounded(rng, static_cast<uint64_t>(i) + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

FoldSplit kfold_split(int64_t n, int64_t folds, int64_t fold, uint64_t seed, double val_fraction) {
  if (folds < 2) throw std::invalid_argument("data.folds: must be at least 2, got " + std::to_string(folds));
  if (fold < 0 || fold >= folds)
    throw std::invalid_argument("data.fold: must be in [0, " + std::to_string(folds - 1) + "] for " +
                                std::to_string(folds) + " folds, got " + std::to_string(fold));
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    std::ostringstream os;
    os << "data.val_fraction: must be in [0, 1), got " << val_fraction;
    throw std::invalid_argument(os.str());
  }
  if (n < folds)
    throw std::invalid_argument("data.folds: " + std::to_string(folds) + " folds need at least as many rows, got " +
                                std::to_string(n));
  const auto perm = seeded_permutation(n, seed);
  const int64_t lo = fold * n / folds, hi = (fold + 1) * n / folds;
  std::vector<int64_t> test(perm.begin() + lo, perm.begin() + hi);
  std::vector<int64_t> rest;
  rest.reserve(static_cast<size_t>(n - (hi - lo)));
  rest.insert(rest.end(), perm.begin(), perm.begin() + lo);
  rest.insert(rest.end(), perm.begin() + hi, perm.end());
  const auto n_val = static_cast<int64_t>(std::llround(val_fraction * static_cast<double>(rest.size())));
  std::vector<int64_t> val(rest.begin(), rest.begin() + n_val);
  std::vector<int64_t> train(rest.begin() + n_val, rest.end());
  FoldSplit s;
  s.train = sorted_tensor(std::move(train));
  s.val = sorted_tensor(std::move(val));
  s.test = sorted_tensor(std::move(test));
  return s;
}

Dataset make_ratings_dataset(const RatingsData& data, const FoldSplit& split, const std::string& description) {
  auto pick = [&](const torch::Tensor& idx) {
    Batch b;
    if (!idx.defined()) return b;
    b.inputs = torch::stack({data.users.index_select(0, idx), data.items.index_select(0, idx)}, 1).contiguous();
    b.targets = data.ratings.index_select(0, idx).contiguous();
    return b;
  };
  Dataset d;
  d.train = pick(split.train);
  d.val = pick(split.val);
  d.test = pick(split.test);
  d.task = Task::kRegression;
  d.dims = {{"users", data.num_users()}, {"items", data.num_items()}};
  d.clip = true;
  d.target_min = data.min_rating;
  d.target_max = data.max_rating;
  if (!description.empty()) {
    d.description = description;
  } else {
    std::ostringstream os;
    os << data.path << ": " << d.train.size() << "/" << d.val.size() << "/" << d.test.size()
       << " ratings (train/val/test), " << data.num_users() << " users, " << data.num_items() << " items";
    d.description = os.str();
  }
  return d;
}

void RatingsOptions::validate(const std::string& where) const {
  if (path_.empty()) throw std::invalid_argument(where + ".path: required for format ratings (the ratings file)");
  if (!(read_.min_rating < read_.max_rating)) throw std::invalid_argument(where + ".max_rating: must exceed min_rating");
  if (folds_ < 2) throw std::invalid_argument(where + ".folds: must be at least 2, got " + std::to_string(folds_));
  if (fold_ < 0 || fold_ >= folds_)
    throw std::invalid_argument(where + ".fold: must be in [0, " + std::to_string(folds_ - 1) + "] for " +
                                std::to_string(folds_) + " folds, got " + std::to_string(fold_));
  if (!(val_fraction_ >= 0.0 && val_fraction_ < 1.0)) {
    std::ostringstream os;
    os << where << ".val_fraction: must be in [0, 1), got " << val_fraction_;
    throw std::invalid_argument(os.str());
  }
}

std::vector<OptionDoc> ratings_option_docs() {
  const RatingsOptions d;
  return {
      {"path", "text", "(required)", "the ratings file (ratings.dat, u.data or ratings.csv)", {}, ""},
      {"ratings_format", "choice", kDefaultRatingsFormat, "auto (from the file) | dat | tsv | csv",
       {"auto", "dat", "tsv", "udata", "csv"}, ""},
      {"min_rating", "real", round_trip_text(d.read().min_rating), "ratings below are errors", {}, ""},
      {"max_rating", "real", round_trip_text(d.read().max_rating), "ratings above are errors", {}, ""},
      {"folds", "integer", std::to_string(d.folds()), "k of the k-fold split", {}, ">= 2"},
      {"fold", "integer", std::to_string(d.fold()), "the fold held out as the test set", {}, "in [0, folds)"},
      {"split_seed", "integer", std::to_string(d.split_seed()), "seeds the fold assignment", {}, ""},
      {"val_fraction", "real", round_trip_text(d.val_fraction()),
       "the share of train ratings held out for validation", {},
       "in [0, 1)"},
  };
}

RatingsOptions parse_ratings_options(const OptionMap& o) {
  const std::string where = o.context().empty() ? "data" : o.context();
  RatingsOptions r;
  r.path(o.get_string("path", ""));
  // The missing path before any other key's value, as the reader always did.
  if (r.path().empty()) throw std::invalid_argument(where + ".path: required for format ratings (the ratings file)");
  RatingsReadOptions ro;
  ro.format = parse_ratings_format(o.get_string("ratings_format", kDefaultRatingsFormat), where + ".ratings_format");
  ro.min_rating = o.get_double("min_rating", ro.min_rating);
  ro.max_rating = o.get_double("max_rating", ro.max_rating);
  r.read(ro)
      .folds(o.get_int("folds", r.folds()))
      .fold(o.get_int("fold", r.fold()))
      .split_seed(o.get_int("split_seed", r.split_seed()))
      .val_fraction(o.get_double("val_fraction", r.val_fraction()));
  r.validate(where);
  return r;
}

Dataset load_ratings_dataset(const RatingsOptions& o, RatingsData* ratings, const std::string& where) {
  o.validate(where);
  RatingsData data = read_ratings(o.path(), o.read());
  FoldSplit split = kfold_split(data.size(), o.folds(), o.fold(), static_cast<uint64_t>(o.split_seed()), o.val_fraction());
  std::ostringstream os;
  os << o.path() << " (ratings, " << ratings_format_name(data.format) << "): fold " << o.fold() << " of 0-"
     << o.folds() - 1 << ", " << split.train.numel() << " train / " << split.val.numel() << " val / "
     << split.test.numel() << " test, " << data.num_users() << " users, " << data.num_items() << " items, ratings "
     << data.min_rating << "-" << data.max_rating;
  Dataset d = make_ratings_dataset(data, split, os.str());
  if (ratings) *ratings = std::move(data);
  return d;
}

Dataset load_ratings_dataset(const OptionMap& o, RatingsData* ratings) {
  return load_ratings_dataset(parse_ratings_options(o), ratings, o.context().empty() ? "data" : o.context());
}

MeanStd mean_std(const std::vector<double>& values) {
  MeanStd m;
  m.n = static_cast<int64_t>(values.size());
  if (values.empty()) return m;
  double s = 0;
  for (double v : values) s += v;
  m.mean = s / static_cast<double>(m.n);
  if (m.n > 1) {
    double ss = 0;
    for (double v : values) ss += (v - m.mean) * (v - m.mean);
    m.std = std::sqrt(ss / static_cast<double>(m.n - 1));
  }
  return m;
}

}  // namespace sgmcmc
