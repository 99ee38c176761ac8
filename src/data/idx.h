// IDX files (the MNIST format: http://yann.lecun.com/exdb/mnist/), gzip-compressed or plain.
//
// Layout: magic = {0, 0, type, ndim}, ndim big-endian uint32 dimensions, then the items row-major.
// The reader checks the magic (zero bytes, type 0x08 = unsigned byte, 1 <= ndim <= 4), that the
// dimensions are plausible (before allocating: against the file size, or for gzip by inflating at
// most the declared size + 1 byte), and that the data size matches the dimensions exactly. Every error is one std::invalid_argument line naming the file and what is wrong.
#pragma once

#include <torch/torch.h>

#include <string>

namespace sgmcmc {

// The whole file as a uint8 tensor shaped by its dimensions (on CPU).
torch::Tensor read_idx(const std::string& path);
// The same from bytes in memory (plain, or gzip when they start with 1f 8b); `path` names them in
// messages. A gzip payload is inflated only up to the size the header declares + 1 byte.
torch::Tensor parse_idx(const uint8_t* data, size_t size, const std::string& path);

// Writes a uint8 tensor (1 to 4 dims) as an IDX file; gzip-compressed when `gzip`.
void write_idx(const std::string& path, const torch::Tensor& data, bool gzip);

// Path of `stem` or `stem.gz` in `dir`; throws naming both candidates if neither exists.
std::string find_idx_file(const std::string& dir, const std::string& stem);

// Images [n, rows, cols] uint8 and labels [n] int64, with counts and label range checked.
struct IdxImages {
  torch::Tensor images;  // uint8 [n, rows, cols]
  torch::Tensor labels;  // int64 [n]
};
IdxImages read_idx_images(const std::string& images_path, const std::string& labels_path);

}  // namespace sgmcmc
