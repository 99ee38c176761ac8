// libFuzzer target: the IDX reader (plain and gzip) on arbitrary bytes. Malformed input must end in
// std::invalid_argument; anything else (crash, sanitizer report, other exception, a huge
// allocation) is a finding.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    torch::Tensor t = sgmcmc::parse_idx(data, size, "fuzz.idx");
    // A parsed tensor must be exactly what the header declares.
    int64_t n = 1;
    for (auto d : t.sizes()) n *= d;
    if (t.numel() != n || t.dim() < 1 || t.dim() > 4) __builtin_trap();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
