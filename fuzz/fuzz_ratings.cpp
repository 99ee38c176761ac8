// libFuzzer target: the MovieLens ratings parser. The first byte picks the format (auto, dat, tsv,
// csv) and the file name used for detection; the rest is the file's text. Malformed input must end
// in std::invalid_argument naming "<file>:<line>".
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "data/ratings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* kNames[] = {"fuzz.txt", "ratings.dat", "u.data", "ratings.csv"};
  sgmcmc::RatingsReadOptions opt;
  opt.format = static_cast<sgmcmc::RatingsFormat>(data[0] % 4);
  const std::string name = kNames[(data[0] >> 2) % 4];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    sgmcmc::RatingsData r = sgmcmc::parse_ratings(text, name, opt);
    // Dense indices must index the id tables.
    if (r.size() == 0 || r.users.max().item<int64_t>() >= r.num_users() || r.items.min().item<int64_t>() < 0 ||
        r.items.max().item<int64_t>() >= r.num_items())
      __builtin_trap();
    (void)sgmcmc::id_map_csv(r);
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).rfind(name + ":", 0) != 0) __builtin_trap();  // message names the file
  }
  return 0;
}
