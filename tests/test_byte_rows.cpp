// data/byte_rows.h: pixels kept as uint8 and widened on gather give exactly the float rows.
#include <gtest/gtest.h>

#include "data/byte_rows.h"

using namespace sgmcmc;

namespace {

// Images as data/load.cpp makes them: uint8 -> float32, then ÷ 255 in place when normalized.
torch::Tensor pixels(bool normalize) {
  torch::manual_seed(3);
  auto u8 = torch::randint(0, 256, {300, 1, 28, 28}, torch::kUInt8);
  u8[0].fill_(0);
  u8[1].fill_(255);
  auto x = u8.to(torch::kFloat32);
  return normalize ? x.div_(255.0) : x;
}

}  // namespace

TEST(ByteRows, GatherEqualsTheFloatRowsBitForBit) {
  for (const bool normalize : {true, false}) {
    const auto x = pixels(normalize);
    const auto rows = ByteRows::of(x);
    ASSERT_TRUE(rows.has_value()) << "normalize " << normalize;
    EXPECT_EQ(rows->scale(), normalize ? 255.0 : 1.0);
    const auto idx = torch::randint(0, x.size(0), {500}, torch::kInt64);  // with repeats
    const auto got = rows->index_select(idx), want = x.index_select(0, idx);
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_EQ(got.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::equal(got, want)) << "normalize " << normalize;
  }
}

TEST(ByteRows, DeclinesWhatIsNotPixels) {
  const auto x = pixels(true);
  EXPECT_FALSE(ByteRows::of(x.to(torch::kFloat64)).has_value());         // not float32
  EXPECT_FALSE(ByteRows::of((x - 0.5) / 0.25).has_value());               // standardized: negative values
  EXPECT_FALSE(ByteRows::of(x + 1e-3f).has_value());                      // not k / 255
  EXPECT_FALSE(ByteRows::of(x * 0.5f).has_value());                       // k / 510
  EXPECT_FALSE(ByteRows::of(torch::full({4, 3}, 0.5f)).has_value());      // neither k / 255 nor k
  EXPECT_FALSE(ByteRows::of(torch::full({4, 3}, 256.0f)).has_value());    // beyond a byte
  EXPECT_FALSE(ByteRows::of(torch::empty({0, 3})).has_value());
  auto one_off = x.clone();
  one_off.view({-1})[12345] = std::nextafter(one_off.view({-1})[12345].item<float>(), 2.0f);
  EXPECT_FALSE(ByteRows::of(one_off).has_value());                        // one value a ulp away
}

TEST(ByteRows, IndexOutOfRangeThrows) {
  const auto rows = ByteRows::of(pixels(true));
  ASSERT_TRUE(rows.has_value());
  EXPECT_THROW(rows->index_select(torch::tensor({0, 300}, torch::kInt64)), c10::Error);
  EXPECT_THROW(rows->index_select(torch::tensor({-1}, torch::kInt64)), c10::Error);
}
