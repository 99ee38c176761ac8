// kernels/cpu/gather_rows.h: the minibatch gather into a reused buffer equals index_select; data/byte_rows.h:
// images gathered from their bytes equal the float gather.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "compat.h"
#include "data/byte_rows.h"
#include "cuda_kernel_checks.h"
#include "kernels/cpu/gather_rows.h"

using sgmcmc::kernels::gather_rows_out;

// Images, labels (8-byte rows), float targets (4-byte rows) and bytes; enough rows (2,000 × 3 KB) for
// the copy to be split over threads, with repeated indices; the second call with the same shape reuses
// the buffer.
TEST(GatherRows, EqualsIndexSelect) {
  torch::manual_seed(1);
  const auto images = torch::rand({3000, 1, 28, 28});
  const auto labels = torch::randint(0, 10, {3000}, torch::kInt64);
  const auto bytes = torch::randint(0, 256, {3000, 7}, torch::kUInt8);
  const auto targets = torch::randn({3000, 1});  // one float a row: the 4-byte path
  torch::Tensor out_images, out_labels, out_bytes, out_targets;
  for (int call = 0; call < 2; ++call) {
    auto idx = torch::randint(0, 3000, {2000}, torch::kInt64);
    idx[5] = idx[6];
    const void* before = out_images.defined() ? out_images.data_ptr() : nullptr;
    gather_rows_out(out_images, images, idx);
    gather_rows_out(out_labels, labels, idx);
    gather_rows_out(out_bytes, bytes, idx);
    gather_rows_out(out_targets, targets, idx);
    EXPECT_TRUE(torch::equal(out_targets, targets.index_select(0, idx)));
    EXPECT_TRUE(torch::equal(out_images, images.index_select(0, idx)));
    EXPECT_TRUE(torch::equal(out_labels, labels.index_select(0, idx)));
    EXPECT_TRUE(torch::equal(out_bytes, bytes.index_select(0, idx)));
    if (call == 1) {
      EXPECT_EQ(out_images.data_ptr(), before);
    }
  }
}

// A different batch size resizes the buffer; an empty index gives an empty batch; a non-contiguous
// source takes index_select; an index out of range is an error naming it.
TEST(GatherRows, ShapesFallbackAndErrors) {
  const auto x = torch::arange(40, torch::kFloat32).reshape({10, 4});
  torch::Tensor out;
  gather_rows_out(out, x, torch::tensor({3, 1}, torch::kInt64));
  EXPECT_TRUE(torch::equal(out, x.index_select(0, torch::tensor({3, 1}, torch::kInt64))));
  gather_rows_out(out, x, torch::tensor({9, 0, 2}, torch::kInt64));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(torch::equal(out, x.index_select(0, torch::tensor({9, 0, 2}, torch::kInt64))));
  gather_rows_out(out, x, torch::empty({0}, torch::kInt64));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{0, 4}));
  const auto xt = x.t();  // [4, 10], not contiguous
  gather_rows_out(out, xt, torch::tensor({2, 0}, torch::kInt64));
  EXPECT_TRUE(torch::equal(out, xt.index_select(0, torch::tensor({2, 0}, torch::kInt64))));
  EXPECT_THROW(gather_rows_out(out, x, torch::tensor({0, 10}, torch::kInt64)), std::out_of_range);
  EXPECT_THROW(gather_rows_out(out, x, torch::tensor({-1}, torch::kInt64)), std::out_of_range);
}

// The widening gather of bytes: every byte at the two scales ByteRows uses gives the IEEE quotient
// float(k) / s, bit for bit (golden: the division itself), through the rows split over threads.
TEST(GatherRows, WidenEqualsDivisionForEveryByte) {
  const auto bytes = torch::arange(256, torch::kInt32).to(torch::kUInt8).repeat({300, 1});  // 300 rows of 0..255
  const auto idx = torch::arange(299, -1, -1, torch::kInt64);
  for (const float s : {255.0f, 1.0f}) {
    torch::Tensor out;
    sgmcmc::kernels::gather_widen_rows_out(out, bytes, idx, s);
    ASSERT_EQ(out.sizes(), (std::vector<int64_t>{300, 256}));
    const float* o = out.data_ptr<float>();
    for (int64_t r = 0; r < 300; ++r)
      for (int k = 0; k < 256; ++k) ASSERT_EQ(o[r * 256 + k], static_cast<float>(k) / s) << "k " << k << " s " << s;
  }
  torch::Tensor out;
  EXPECT_THROW(sgmcmc::kernels::gather_widen_rows_out(out, bytes, torch::tensor({300}, torch::kInt64), 255.0f),
               std::out_of_range);
  EXPECT_THROW(sgmcmc::kernels::gather_widen_rows_out(out, bytes.to(torch::kFloat32), idx, 255.0f),
               std::invalid_argument);
  EXPECT_THROW(sgmcmc::kernels::gather_widen_rows_out(out, bytes, idx, 0.0f), std::invalid_argument);
}

// Images made from bytes by ATen (float32, then div_(255.0), or raw) are taken as bytes after a check
// of every value, and the gather gives index_select's bits, the buffer reused; repeated and edge indices included.
TEST(ByteRows, GatherEqualsIndexSelectOfTheFloats) {
  torch::manual_seed(3);
  const auto raw = torch::randint(0, 256, {2500, 1, 28, 28}, torch::kInt64).to(torch::kUInt8);
  const auto normalized = raw.to(torch::kFloat32).div_(255.0);
  const auto unscaled = raw.to(torch::kFloat32);
  for (const auto& [x, scale] : {std::pair{normalized, 255.0f}, std::pair{unscaled, 1.0f}}) {
    const auto rows = sgmcmc::ByteRows::of(x);
    ASSERT_TRUE(rows.has_value());
    EXPECT_EQ(rows->scale(), scale);
    EXPECT_TRUE(torch::equal(rows->bytes(), raw));
    torch::Tensor out;
    for (int call = 0; call < 2; ++call) {
      auto idx = torch::randint(0, 2500, {1000}, torch::kInt64);
      idx[0] = 2499;
      idx[1] = 0;
      idx[7] = idx[8];
      const void* before = out.defined() ? out.data_ptr() : nullptr;
      rows->gather_out(out, idx);
      EXPECT_TRUE(torch::equal(out, x.index_select(0, idx)));
      if (call == 1) {
        EXPECT_EQ(out.data_ptr(), before);
      }
    }
  }
}

// Anything that is not the widening of bytes keeps the float gather: standardized features, a value
// between two bytes, −0, NaN, a value above 255, other dtypes, an empty tensor.
TEST(ByteRows, DeclinesWhatIsNotBytes) {
  const auto base = torch::arange(256, torch::kFloat32).div_(255.0).reshape({16, 16});
  EXPECT_TRUE(sgmcmc::ByteRows::of(base).has_value());
  EXPECT_FALSE(sgmcmc::ByteRows::of((base - 0.5) / 0.25).has_value());
  auto mutate = [&](float v) {
    auto y = base.clone();
    y[9][3] = v;
    return sgmcmc::ByteRows::of(y).has_value();
  };
  EXPECT_FALSE(mutate(0.5f / 255.0f));
  EXPECT_FALSE(mutate(std::nextafter(1.0f / 255.0f, 1.0f)));
  EXPECT_FALSE(mutate(-0.0f));
  EXPECT_FALSE(mutate(std::nanf("")));
  EXPECT_FALSE(sgmcmc::ByteRows::of(torch::full({4, 4}, 256.0f)).has_value());
  EXPECT_FALSE(sgmcmc::ByteRows::of(base.to(torch::kFloat64)).has_value());
  EXPECT_FALSE(sgmcmc::ByteRows::of(torch::empty({0, 4})).has_value());
}

// What ByteRows::widen makes (as data/load.cpp makes images) equals ATen's quotient bit for bit, and
// of() takes its very bytes, unchecked, until the tensor is written: then the value-by-value check
// runs again and declines a value that is no byte's. A copy with the same values is checked, not
// recognised.
TEST(ByteRows, WidenedTensorsAreTakenUntilWritten) {
  torch::manual_seed(5);
  const auto raw = torch::randint(0, 256, {300, 1, 6, 6}, torch::kInt64).to(torch::kUInt8);
  for (const float scale : {255.0f, 1.0f}) {
    auto x = sgmcmc::ByteRows::widen(raw, scale);
    ASSERT_EQ(x.sizes(), raw.sizes());
    EXPECT_TRUE(torch::equal(x, raw.to(torch::kFloat32).div_(scale)));
    const auto taken = sgmcmc::ByteRows::of(x);
    ASSERT_TRUE(taken.has_value());
    EXPECT_EQ(taken->bytes().data_ptr(), raw.data_ptr());  // the bytes widen() was given, not rebuilt
    EXPECT_EQ(taken->scale(), scale);
    const auto copy = x.clone();
    const auto checked = sgmcmc::ByteRows::of(copy);
    ASSERT_TRUE(checked.has_value());
    EXPECT_NE(checked->bytes().data_ptr(), raw.data_ptr());
    EXPECT_TRUE(torch::equal(checked->bytes(), raw));
    x[7][0][2][3] = 0.5f / 255.0f;  // between two bytes
    EXPECT_FALSE(sgmcmc::ByteRows::of(x).has_value());
  }
  EXPECT_THROW(sgmcmc::ByteRows::widen(raw, 0.0f), std::invalid_argument);
}

// On a GPU: the images' and labels' gather in one kernel equals index_select (tests/cuda_kernel_checks.h),
// with more rows than one grid holds; tensors off the GPU are declined.
TEST(GatherRows, CudaPairEqualsIndexSelect) {
#if defined(SGMCMC_WITH_CUDA)
  if (!sgmcmc::compat::cuda_available()) GTEST_SKIP() << "needs a GPU";
  const torch::Device dev(torch::kCUDA);
  cuda_kernel_checks::gather_pair_equals_index_select(dev, 70000);
  auto x = torch::rand({10, 4}), y = torch::zeros({10}, torch::TensorOptions().dtype(torch::kInt64).device(dev));
  auto idx = torch::zeros({5}, torch::TensorOptions().dtype(torch::kInt64).device(dev));
  torch::Tensor xo, yo;
  EXPECT_FALSE(sgmcmc::kernels::gather_rows_pair_cuda(xo, x, yo, y, idx));
#else
  GTEST_SKIP() << "a build without -DSGMCMC_CUDA=ON";
#endif
}
