// kernels/gather_rows.h: the minibatch gather into a reused buffer equals index_select.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

#include "kernels/gather_rows.h"

using sgmcmc::kernels::gather_rows_out;

// Images, labels and bytes; enough rows (2,000 × 3 KB) for the copy to be split over threads, with
// repeated indices; the second call with the same shape reuses the buffer.
TEST(GatherRows, EqualsIndexSelect) {
  torch::manual_seed(1);
  const auto images = torch::rand({3000, 1, 28, 28});
  const auto labels = torch::randint(0, 10, {3000}, torch::kInt64);
  const auto bytes = torch::randint(0, 256, {3000, 7}, torch::kUInt8);
  torch::Tensor out_images, out_labels, out_bytes;
  for (int call = 0; call < 2; ++call) {
    auto idx = torch::randint(0, 3000, {2000}, torch::kInt64);
    idx[5] = idx[6];
    const void* before = out_images.defined() ? out_images.data_ptr() : nullptr;
    gather_rows_out(out_images, images, idx);
    gather_rows_out(out_labels, labels, idx);
    gather_rows_out(out_bytes, bytes, idx);
    EXPECT_TRUE(torch::equal(out_images, images.index_select(0, idx)));
    EXPECT_TRUE(torch::equal(out_labels, labels.index_select(0, idx)));
    EXPECT_TRUE(torch::equal(out_bytes, bytes.index_select(0, idx)));
    if (call == 1) EXPECT_EQ(out_images.data_ptr(), before);
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
