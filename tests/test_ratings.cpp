// Ratings readers (ml-1M ratings.dat, ml-100k u.data, ml-latest ratings.csv), id remapping, error
// messages, and the seeded k-fold splits built on them.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "data/kfold.h"
#include "data/ratings.h"
#include "error_of.h"

using namespace sgmcmc;
using test_util::error_of;

namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sgmcmc_test_ratings_XXXXXX";
    const char* p = mkdtemp(tmpl);
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<int64_t> vec(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
std::vector<float> vecf(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

TEST(RatingsReader, DatFormatAndDenseRemapping) {
  TempDir dir;
  // Ids out of order and sparse: users {7, 3, 100}, items {50, 2, 9}.
  auto path = dir.write("ratings.dat",
                        "7::50::4::978300760\n"
                        "3::2::3.5::978302109\n"
                        "100::50::1::978301968\n"
                        "7::9::5::978300275\n");
  auto d = read_ratings(path);
  EXPECT_EQ(d.format, RatingsFormat::kDat);
  ASSERT_EQ(d.size(), 4);
  EXPECT_EQ(d.user_ids, (std::vector<int64_t>{3, 7, 100}));
  EXPECT_EQ(d.item_ids, (std::vector<int64_t>{2, 9, 50}));
  EXPECT_EQ(vec(d.users), (std::vector<int64_t>{1, 0, 2, 1}));
  EXPECT_EQ(vec(d.items), (std::vector<int64_t>{2, 0, 2, 1}));
  EXPECT_EQ(vecf(d.ratings), (std::vector<float>{4.f, 3.5f, 1.f, 5.f}));
  EXPECT_EQ(vec(d.timestamps), (std::vector<int64_t>{978300760, 978302109, 978301968, 978300275}));
  EXPECT_EQ(d.min_rating, 1.0);
  EXPECT_EQ(d.max_rating, 5.0);
  EXPECT_EQ(d.num_users(), 3);
  EXPECT_EQ(d.num_items(), 3);
}

TEST(RatingsReader, UDataTabSeparated) {
  TempDir dir;
  auto path = dir.write("u.data", "196\t242\t3\t881250949\n186\t302\t3\t891717742\n\n22\t377\t1\t878887116\n");
  auto d = read_ratings(path);
  EXPECT_EQ(d.format, RatingsFormat::kTsv);
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.user_ids, (std::vector<int64_t>{22, 186, 196}));
  EXPECT_EQ(vec(d.users), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(vec(d.items), (std::vector<int64_t>{0, 1, 2}));
}

TEST(RatingsReader, CsvWithHeaderAndCrlf) {
  TempDir dir;
  auto path = dir.write("ratings.csv",
                        "userId,movieId,rating,timestamp\r\n1,31,2.5,1260759144\r\n1,1029,3.0,1260759179\r\n"
                        "2,31,0.5,1260759185\r\n");
  auto d = read_ratings(path);
  EXPECT_EQ(d.format, RatingsFormat::kCsv);
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.item_ids, (std::vector<int64_t>{31, 1029}));
  EXPECT_EQ(vecf(d.ratings), (std::vector<float>{2.5f, 3.f, 0.5f}));
  EXPECT_EQ(d.min_rating, 0.5);
  // A CSV without a header reads the same.
  auto path2 = dir.write("noheader.csv", "1,31,2.5\n");
  EXPECT_EQ(read_ratings(path2).size(), 1);
}

TEST(RatingsReader, FormatDetectedFromContentAndForced) {
  TempDir dir;
  auto p1 = dir.write("r.txt", "1::2::3::4\n");
  EXPECT_EQ(read_ratings(p1).format, RatingsFormat::kDat);
  auto p2 = dir.write("r2.txt", "1\t2\t3\t4\n");
  EXPECT_EQ(read_ratings(p2).format, RatingsFormat::kTsv);
  auto p3 = dir.write("r3.txt", "1,2,3,4\n");
  EXPECT_EQ(read_ratings(p3).format, RatingsFormat::kCsv);
  RatingsReadOptions o;
  o.format = RatingsFormat::kCsv;
  auto p4 = dir.write("odd.dat", "1,2,3,4\n");  // name says dat, the option wins
  EXPECT_EQ(read_ratings(p4, o).format, RatingsFormat::kCsv);
  EXPECT_EQ(parse_ratings_format("udata"), RatingsFormat::kTsv);
  EXPECT_EQ(error_of([] { parse_ratings_format("xml"); }),
            "data.ratings_format: unknown ratings format 'xml' (expected auto, dat, tsv or csv)");
}

TEST(RatingsReader, MalformedLinesNameFileAndLine) {
  TempDir dir;
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {"1::2::3::4\n1::2\n",
       ":2: missing field: expected user::item::rating[::timestamp] separated by '::', got 2 fields"},
      {"1::2::3::4\n\n1::2::3::4::5::6\n", ":3: too many fields: expected at most 4 separated by '::'"},
      {"userId::movieId::rating::timestamp\n1::2::3::4\n", ":1: user id 'userId' is not an integer"},
      {"1::2::3::4\n1::x7::3::4\n", ":2: item id 'x7' is not an integer"},
      {"1::2::three::4\n", ":1: rating 'three' is not a number"},
      {"1::2::nan::4\n", ":1: rating 'nan' is not finite"},
      {"1::2::3::4\n1::2::7::4\n", ":2: rating 7 is outside [0, 5]"},
      {"1::2::-0.5::4\n", ":1: rating -0.5 is outside [0, 5]"},
      {"1::2::3::4pm\n", ":1: timestamp '4pm' is not an integer"},
      {"", ":1: empty file, no ratings"},
      {"\n\n", ":1: empty file, no ratings"},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    auto path = dir.write("bad" + std::to_string(k) + ".dat", cases[k].text);
    EXPECT_EQ(error_of([&] { read_ratings(path); }), path + cases[k].message) << "case " << k;
  }
  auto csv = dir.write("header_only.csv", "userId,movieId,rating,timestamp\n");
  EXPECT_EQ(error_of([&] { read_ratings(csv); }), csv + ":1: no ratings after the header");
  auto tsv = dir.write("u.data", "1\t2\t3\t4\n5\t6\n");
  EXPECT_EQ(error_of([&] { read_ratings(tsv); }),
            tsv + ":2: missing field: expected user\titem\trating[\ttimestamp] separated by tabs, got 2 fields");
  EXPECT_EQ(error_of([&] { read_ratings(dir.path() + "/missing.dat"); }),
            dir.path() + "/missing.dat: cannot open ratings file (No such file or directory)");
  // The range is an option: 10-star ratings pass with max_rating 10.
  RatingsReadOptions o;
  o.max_rating = 10;
  auto ten = dir.write("ten.dat", "1::2::7::4\n");
  EXPECT_EQ(read_ratings(ten, o).max_rating, 7.0);
}

TEST(RatingsReader, IdMapWrittenAsCsv) {
  TempDir dir;
  auto d = read_ratings(dir.write("ratings.dat", "7::50::4::1\n3::2::3::1\n"));
  auto out = dir.path() + "/id_map.csv";
  write_id_map(d, out);
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "kind,index,id\nuser,0,3\nuser,1,7\nitem,0,2\nitem,1,50\n");
}

// The shipped movielens-small file: counts from its README, and the parse time.
TEST(RatingsReader, MovielensSmall) {
  const std::string path = std::string(SGMCMC_SOURCE_DIR) + "/../shared/data/movielens-small/ratings.dat";
  if (!std::ifstream(path)) GTEST_SKIP() << path << " not present";
  auto t0 = std::chrono::steady_clock::now();
  auto d = read_ratings(path);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ info ] parsed %lld ratings in %.1f ms\n", static_cast<long long>(d.size()), ms);
  EXPECT_EQ(d.size(), 100004);
  EXPECT_EQ(d.num_users(), 671);
  EXPECT_EQ(d.num_items(), 9066);
  EXPECT_EQ(d.min_rating, 0.5);
  EXPECT_EQ(d.max_rating, 5.0);
  EXPECT_EQ((d.ratings == 4.0).sum().item<int64_t>(), 28750);
  EXPECT_EQ((d.ratings == 0.5).sum().item<int64_t>(), 1101);
  EXPECT_EQ(d.users.max().item<int64_t>(), 670);
  EXPECT_EQ(d.items.max().item<int64_t>(), 9065);
  // Well under a second is the requirement; a 5 s bound only catches a pathological regression.
  EXPECT_LT(ms, 5000.0);
}

// ---- k-fold ----

TEST(KFold, PermutationGoldenAndDeterministic) {
  // std::mt19937_64 is fully specified by the standard, so these values hold on every platform.
  auto p = seeded_permutation(10, 42);
  EXPECT_EQ(p, seeded_permutation(10, 42));
  EXPECT_NE(p, seeded_permutation(10, 43));
  std::vector<int64_t> sorted(p);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(p, (std::vector<int64_t>{1, 7, 9, 0, 3, 8, 4, 2, 5, 6}));
}

TEST(KFold, FoldsPartitionTheData) {
  const int64_t n = 1003, k = 5;
  std::vector<int> seen(n, 0);
  for (int64_t f = 0; f < k; ++f) {
    auto s = kfold_split(n, k, f, 7);
    auto test = vec(s.test), train = vec(s.train);
    // Sizes: floor((f+1)n/k) − floor(fn/k), i.e. 200 or 201.
    EXPECT_EQ(static_cast<int64_t>(test.size()), (f + 1) * n / k - f * n / k);
    EXPECT_EQ(static_cast<int64_t>(train.size() + test.size()), n);
    EXPECT_EQ(s.val.numel(), 0);
    EXPECT_TRUE(std::is_sorted(test.begin(), test.end()));
    std::set<int64_t> t(test.begin(), test.end());
    for (auto i : train) EXPECT_EQ(t.count(i), 0u);
    for (auto i : test) ++seen[i];
    // Same seed, same split; another seed, another split.
    EXPECT_TRUE(torch::equal(kfold_split(n, k, f, 7).test, s.test));
    EXPECT_FALSE(torch::equal(kfold_split(n, k, f, 8).test, s.test));
  }
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << "index " << i;
}

TEST(KFold, ValidationCarvedFromTrainingFolds) {
  const int64_t n = 1000;
  auto plain = kfold_split(n, 5, 2, 3);
  auto s = kfold_split(n, 5, 2, 3, 0.1);
  EXPECT_TRUE(torch::equal(s.test, plain.test));  // the test fold does not move
  EXPECT_EQ(s.val.numel(), 80);                   // round(0.1 · 800)
  EXPECT_EQ(s.train.numel(), 720);
  auto u = std::get<0>(torch::cat({s.train, s.val}).sort());
  EXPECT_TRUE(torch::equal(u, plain.train));
}

TEST(KFold, BadArgumentsNamed) {
  EXPECT_EQ(error_of([] { kfold_split(100, 1, 0, 0); }), "data.folds: must be at least 2, got 1");
  EXPECT_EQ(error_of([] { kfold_split(100, 5, 5, 0); }), "data.fold: must be in [0, 4] for 5 folds, got 5");
  EXPECT_EQ(error_of([] { kfold_split(100, 5, 0, 0, 1.0); }), "data.val_fraction: must be in [0, 1), got 1");
  EXPECT_EQ(error_of([] { kfold_split(3, 5, 0, 0); }), "data.folds: 5 folds need at least as many rows, got 3");
}

TEST(KFold, RatingsDataset) {
  TempDir dir;
  std::string text;
  for (int u = 0; u < 10; ++u)
    for (int i = 0; i < 4; ++i) text += std::to_string(u + 1) + "::" + std::to_string(10 * i + 5) + "::" +
                                        std::to_string(1 + (u + i) % 5) + "::0\n";
  auto d = read_ratings(dir.write("ratings.dat", text));
  auto split = kfold_split(d.size(), 4, 1, 11, 0.25);
  auto ds = make_ratings_dataset(d, split);
  EXPECT_EQ(ds.task, Task::kRegression);
  EXPECT_TRUE(ds.clip);
  EXPECT_EQ(ds.target_min, 1.0);
  EXPECT_EQ(ds.target_max, 5.0);
  EXPECT_EQ(ds.dims.at("users"), 10);
  EXPECT_EQ(ds.dims.at("items"), 4);
  EXPECT_EQ(ds.test.size(), 10);
  EXPECT_EQ(ds.val.size(), 8);  // round(0.25 · 30)
  EXPECT_EQ(ds.train.size(), 22);
  ASSERT_EQ(ds.train.inputs.sizes(), (std::vector<int64_t>{22, 2}));
  EXPECT_EQ(ds.train.inputs.scalar_type(), torch::kInt64);
  EXPECT_EQ(ds.train.targets.scalar_type(), torch::kFloat32);
  // Row r of the test set is rating split.test[r] of the file.
  auto idx = split.test;
  EXPECT_TRUE(torch::equal(ds.test.inputs.select(1, 0), d.users.index_select(0, idx)));
  EXPECT_TRUE(torch::equal(ds.test.inputs.select(1, 1), d.items.index_select(0, idx)));
  EXPECT_TRUE(torch::equal(ds.test.targets, d.ratings.index_select(0, idx)));
}

TEST(KFold, MeanStd) {
  auto m = mean_std({0.84, 0.85, 0.86});
  EXPECT_NEAR(m.mean, 0.85, 1e-12);
  EXPECT_NEAR(m.std, 0.01, 1e-12);
  EXPECT_EQ(m.n, 3);
  EXPECT_EQ(mean_std({1.0}).std, 0.0);
}

TEST(KFold, LoadRatingsDatasetFromOptions) {
  TempDir dir;
  std::string text;
  for (int k = 0; k < 100; ++k)
    text += std::to_string(k % 7) + "::" + std::to_string(k % 11) + "::" + std::to_string(1 + k % 5) + "::0\n";
  auto path = dir.write("ratings.dat", text);
  OptionMap o("data");
  o.set("path", path);
  o.set("folds", "4");
  o.set("fold", "3");
  o.set("val_fraction", "0.2");
  RatingsData raw;
  auto ds = load_ratings_dataset(o, &raw);
  o.check_all_used();
  EXPECT_EQ(raw.size(), 100);
  EXPECT_EQ(ds.test.size(), 25);
  EXPECT_EQ(ds.val.size(), 15);
  EXPECT_EQ(ds.train.size(), 60);
  EXPECT_EQ(ds.dims.at("users"), 7);
  EXPECT_EQ(ds.dims.at("items"), 11);
  // Same split as kfold_split with split_seed 0.
  EXPECT_TRUE(torch::equal(ds.test.targets, raw.ratings.index_select(0, kfold_split(100, 4, 3, 0, 0.2).test)));
  OptionMap none("data");
  EXPECT_EQ(error_of([&] { load_ratings_dataset(none); }), "data.path: required for format ratings (the ratings file)");
  OptionMap badfold("data");
  badfold.set("path", path);
  badfold.set("fold", "5");
  EXPECT_EQ(error_of([&] { load_ratings_dataset(badfold); }), "data.fold: must be in [0, 4] for 5 folds, got 5");
  OptionMap fmt("data");
  fmt.set("path", path);
  fmt.set("ratings_format", "json");
  EXPECT_EQ(error_of([&] { load_ratings_dataset(fmt); }),
            "data.ratings_format: unknown ratings format 'json' (expected auto, dat, tsv or csv)");
}
