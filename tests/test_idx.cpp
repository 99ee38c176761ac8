#include <gtest/gtest.h>
#include <unistd.h>

#include <zlib.h>

#include <fstream>

#include "config/experiment_config.h"
#include "data/idx.h"
#include "data/load.h"
#include "data/splits.h"
#include "tiny_idx.h"

using namespace sgmcmc;
namespace fs = std::filesystem;

namespace {
void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}
std::vector<uint8_t> header3(uint32_t n, uint32_t r, uint32_t c) {
  std::vector<uint8_t> b = {0, 0, 8, 3};
  for (uint32_t d : {n, r, c})
    for (int s = 24; s >= 0; s -= 8) b.push_back((d >> s) & 0xff);
  return b;
}
// Expects read_idx(path) to throw a one-line message naming the file and containing `what`.
void expect_error(const std::string& path, const std::string& what) {
  try {
    read_idx(path);
    FAIL() << "no error for " << path;
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(path, 0), 0u) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}
}  // namespace

TEST(Idx, RoundTripPlainAndGzip) {
  auto dir = test_util::temp_dir("idx_rt");
  auto t = torch::arange(0, 2 * 3 * 5, torch::kInt64).remainder(256).to(torch::kUInt8).reshape({2, 3, 5});
  for (bool gz : {false, true}) {
    std::string p = dir + (gz ? "/a.gz" : "/a");
    write_idx(p, t, gz);
    auto r = read_idx(p);
    EXPECT_TRUE(torch::equal(r, t));
  }
  // A gzip file really is compressed (magic 1f 8b), the plain one is not.
  std::ifstream gz(dir + "/a.gz", std::ios::binary);
  EXPECT_EQ(gz.get(), 0x1f);
  EXPECT_EQ(fs::file_size(dir + "/a"), 4u + 12u + 30u);
}

// A gzip file of random bytes (libdeflate's one-call inflate where the build has it), the same data as
// two gzip members one after the other, and a member followed by bytes that are not gzip (both read by
// zlib's streaming inflate, as gzip -d reads them): all read back bit for bit.
TEST(Idx, GzipMembersAndTrailingBytesReadAsGzipReadsThem) {
  auto dir = test_util::temp_dir("idx_members");
  torch::manual_seed(2);
  const auto t = torch::randint(0, 256, {40, 9, 7}, torch::kInt64).to(torch::kUInt8);
  write_idx(dir + "/one.gz", t, true);
  EXPECT_TRUE(torch::equal(read_idx(dir + "/one.gz"), t));
  write_idx(dir + "/plain", t, false);
  std::vector<uint8_t> plain(fs::file_size(dir + "/plain"));
  std::ifstream(dir + "/plain", std::ios::binary).read(reinterpret_cast<char*>(plain.data()), plain.size());
  auto member = [](const uint8_t* p, size_t n) {
    z_stream zs{};
    deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    std::vector<uint8_t> out(deflateBound(&zs, n) + 64);
    zs.next_in = const_cast<Bytef*>(p);
    zs.avail_in = static_cast<uInt>(n);
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    deflate(&zs, Z_FINISH);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    return out;
  };
  auto two = member(plain.data(), 1000);
  const auto rest = member(plain.data() + 1000, plain.size() - 1000);
  two.insert(two.end(), rest.begin(), rest.end());
  write_bytes(dir + "/two.gz", two);
  EXPECT_TRUE(torch::equal(read_idx(dir + "/two.gz"), t));
  auto trailing = member(plain.data(), plain.size());
  trailing.insert(trailing.end(), {0, 0, 0, 0, 0, 0, 0, 0});
  write_bytes(dir + "/trailing.gz", trailing);
  EXPECT_TRUE(torch::equal(read_idx(dir + "/trailing.gz"), t));
}

TEST(Idx, AnyCountAccepted) {
  auto dir = test_util::temp_dir("idx_count");
  auto b = header3(3, 2, 2);
  b.resize(b.size() + 12, 7);
  write_bytes(dir + "/x", b);
  auto r = read_idx(dir + "/x");
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{3, 2, 2}));
}

TEST(Idx, Errors) {
  auto dir = test_util::temp_dir("idx_err");
  auto b = header3(3, 2, 2);
  b.resize(b.size() + 12, 7);
  auto bad = b;
  bad[0] = 1;
  write_bytes(dir + "/badmagic", bad);
  expect_error(dir + "/badmagic", "bad magic");
  bad = b;
  bad[3] = 9;
  write_bytes(dir + "/badndim", bad);
  expect_error(dir + "/badndim", "bad magic");
  auto trunc = b;
  trunc.resize(trunc.size() - 5);
  write_bytes(dir + "/trunc", trunc);
  expect_error(dir + "/trunc", "truncated");
  auto extra = b;
  extra.push_back(1);
  write_bytes(dir + "/extra", extra);
  expect_error(dir + "/extra", "count mismatch");
  write_bytes(dir + "/absurd", header3(3, 100000, 2));
  expect_error(dir + "/absurd", "absurd dimensions");
  write_bytes(dir + "/short", {0, 0});
  expect_error(dir + "/short", "too short");
  // Truncated header: 3 dimensions announced, 1 given.
  write_bytes(dir + "/hdr", {0, 0, 8, 3, 0, 0, 0, 1});
  expect_error(dir + "/hdr", "truncated header");
  expect_error(dir + "/missing", "no such file");
  // Corrupt / truncated gzip.
  write_idx(dir + "/good.gz", torch::zeros({50, 20, 20}, torch::kUInt8), true);
  auto size = fs::file_size(dir + "/good.gz");
  std::vector<uint8_t> gz(size);
  std::ifstream(dir + "/good.gz", std::ios::binary).read(reinterpret_cast<char*>(gz.data()), size);
  std::vector<uint8_t> cut(gz.begin(), gz.begin() + size / 2);
  write_bytes(dir + "/cut.gz", cut);
  expect_error(dir + "/cut.gz", "gzip");
}

TEST(Idx, LabelImageCountMismatch) {
  auto dir = test_util::temp_dir("idx_mismatch");
  write_idx(dir + "/img", torch::zeros({5, 4, 4}, torch::kUInt8), false);
  write_idx(dir + "/lab", torch::zeros({4}, torch::kUInt8), false);
  try {
    read_idx_images(dir + "/img", dir + "/lab");
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(dir + "/lab", 0), 0u) << m;
    EXPECT_NE(m.find("4 labels but 5 images"), std::string::npos) << m;
  }
}

TEST(Idx, LoadDirectoryAndSplit) {
  auto dir = test_util::temp_dir("idx_load");
  test_util::write_tiny_idx_dir(dir, 300, 50, 4, /*gzip=*/false);
  DataConfig cfg;
  cfg.dir = dir;
  cfg.val_size = 100;
  auto ds = load_dataset(cfg, 7);
  EXPECT_EQ(ds.train.size(), 200);
  EXPECT_EQ(ds.val.size(), 100);
  EXPECT_EQ(ds.test.size(), 50);
  EXPECT_EQ(ds.num_classes, 4);
  EXPECT_EQ(ds.train.inputs.sizes(), (std::vector<int64_t>{200, 1, 16, 16}));
  EXPECT_LE(ds.train.inputs.max().item<float>(), 1.0f);
  EXPECT_EQ(ds.dims.at("features"), 256);
  // Same seed, same split; another seed, another split; train and val partition the file.
  auto again = load_dataset(cfg, 7);
  EXPECT_TRUE(torch::equal(again.val.inputs, ds.val.inputs));
  auto other = load_dataset(cfg, 8);
  EXPECT_FALSE(torch::equal(other.val.inputs, ds.val.inputs));
  auto all = torch::cat({ds.train.inputs, ds.val.inputs}).reshape({300, -1}).sum(1).sort();
  auto raw = read_idx(dir + "/train-images-idx3-ubyte").to(torch::kFloat32).div(255).reshape({300, -1}).sum(1).sort();
  EXPECT_TRUE(torch::allclose(std::get<0>(all), std::get<0>(raw)));
  // val_size >= train size is an error naming the key.
  cfg.val_size = 300;
  try {
    load_dataset(cfg, 7);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("val_size"), std::string::npos) << e.what();
  }
  // A missing file names itself.
  fs::remove(dir + "/t10k-labels-idx1-ubyte");
  cfg.val_size = 10;
  try {
    load_dataset(cfg, 7);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("t10k-labels-idx1-ubyte"), std::string::npos) << e.what();
  }
}
