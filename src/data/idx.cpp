#include "data/idx.h"

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace sgmcmc {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::invalid_argument(path + ": " + what);
}

// Whole file, decompressed if it is gzip (zlib reads plain files transparently).
std::vector<uint8_t> slurp(const std::string& path) {
  if (!std::filesystem::exists(path)) fail(path, "no such file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail(path, "cannot open");
  std::vector<uint8_t> out;
  std::vector<uint8_t> buf(1 << 20);
  while (true) {
    int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      fail(path, "corrupt gzip data (" + msg + ")");
    }
    if (n == 0) break;
    out.insert(out.end(), buf.begin(), buf.begin() + n);
  }
  // A truncated gzip stream reads as a short file without an error on some zlib versions; the
  // size check below catches it (gzclose reports Z_BUF_ERROR for a truncated stream).
  int rc = gzclose(f);
  if (rc == Z_BUF_ERROR) fail(path, "truncated gzip stream");
  if (rc != Z_OK) fail(path, "error reading gzip stream");
  return out;
}

}  // namespace

torch::Tensor read_idx(const std::string& path) {
  std::vector<uint8_t> bytes = slurp(path);
  if (bytes.size() < 4) fail(path, "too short for an IDX header (" + std::to_string(bytes.size()) + " bytes)");
  if (bytes[0] != 0 || bytes[1] != 0)
    fail(path, "bad magic number (first two bytes must be zero; not an IDX file?)");
  if (bytes[2] != 0x08)
    fail(path, "unsupported IDX data type 0x" + std::to_string(bytes[2]) + " (only 0x08, unsigned byte)");
  const int ndim = bytes[3];
  if (ndim < 1 || ndim > 4) fail(path, "bad magic number: " + std::to_string(ndim) + " dimensions (expected 1 to 4)");
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  if (bytes.size() < header)
    fail(path, "truncated header: " + std::to_string(ndim) + " dimensions need " + std::to_string(header) +
                   " bytes, the file has " + std::to_string(bytes.size()));
  std::vector<int64_t> dims;
  uint64_t total = 1;
  std::string shape;
  for (int i = 0; i < ndim; ++i) {
    const uint8_t* b = &bytes[4 + 4 * i];
    uint64_t d = (uint64_t(b[0]) << 24) | (uint64_t(b[1]) << 16) | (uint64_t(b[2]) << 8) | uint64_t(b[3]);
    shape += (i ? "x" : "") + std::to_string(d);
    // Dimensions beyond the count: an image side over 2^16 is not an IDX data set.
    if (i > 0 && (d == 0 || d > (1u << 16))) fail(path, "absurd dimensions " + shape);
    dims.push_back(static_cast<int64_t>(d));
    total *= d;
    if (total > (uint64_t(1) << 36)) fail(path, "absurd dimensions " + shape + "... (over 64 GiB of data)");
  }
  const uint64_t have = bytes.size() - header;
  if (have < total)
    fail(path, "truncated: dimensions " + shape + " need " + std::to_string(total) + " data bytes, the file has " +
                   std::to_string(have));
  if (have > total)
    fail(path, "count mismatch: dimensions " + shape + " need " + std::to_string(total) + " data bytes, the file has " +
                   std::to_string(have) + " (" + std::to_string(have - total) + " extra)");
  auto t = torch::empty(dims, torch::kUInt8);
  if (total) std::memcpy(t.data_ptr<uint8_t>(), bytes.data() + header, total);
  return t;
}

void write_idx(const std::string& path, const torch::Tensor& data, bool gzip) {
  auto t = data.to(torch::kUInt8).contiguous().cpu();
  if (t.dim() < 1 || t.dim() > 4) throw std::invalid_argument(path + ": IDX needs 1 to 4 dimensions");
  std::vector<uint8_t> bytes = {0, 0, 0x08, static_cast<uint8_t>(t.dim())};
  for (auto d : t.sizes())
    for (int s = 24; s >= 0; s -= 8) bytes.push_back(static_cast<uint8_t>((uint64_t(d) >> s) & 0xff));
  const uint8_t* p = t.data_ptr<uint8_t>();
  bytes.insert(bytes.end(), p, p + t.numel());
  gzFile f = gzopen(path.c_str(), gzip ? "wb6" : "wbT");
  if (!f) throw std::invalid_argument(path + ": cannot open for writing");
  int n = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  int rc = gzclose(f);
  if (n != static_cast<int>(bytes.size()) || rc != Z_OK) throw std::invalid_argument(path + ": write failed");
}

std::string find_idx_file(const std::string& dir, const std::string& stem) {
  namespace fs = std::filesystem;
  fs::path plain = fs::path(dir) / stem, gz = fs::path(dir) / (stem + ".gz");
  if (fs::exists(plain)) return plain.string();
  if (fs::exists(gz)) return gz.string();
  throw std::invalid_argument(plain.string() + ": no such file (nor " + gz.filename().string() +
                              "); data.dir must hold the MNIST-format IDX files");
}

IdxImages read_idx_images(const std::string& images_path, const std::string& labels_path) {
  IdxImages out;
  auto images = read_idx(images_path);
  if (images.dim() != 3)
    fail(images_path, "expected 3 dimensions (count x rows x cols) for images, got " + std::to_string(images.dim()));
  auto labels = read_idx(labels_path);
  if (labels.dim() != 1) fail(labels_path, "expected 1 dimension for labels, got " + std::to_string(labels.dim()));
  if (labels.size(0) != images.size(0))
    fail(labels_path, "count mismatch: " + std::to_string(labels.size(0)) + " labels but " +
                          std::to_string(images.size(0)) + " images in " + images_path);
  out.images = images;
  out.labels = labels.to(torch::kInt64);
  return out;
}

}  // namespace sgmcmc
