// MovieLens-style rating files: readers and the dense re-indexing of user / item ids.
//
// Formats (one rating a line, blank lines ignored, "\r\n" accepted):
//   kDat  `user::item::rating::timestamp`              ml-1M, ml-10M `ratings.dat`
//   kTsv  `user<TAB>item<TAB>rating<TAB>timestamp`       ml-100k `u.data`
//   kCsv  `userId,movieId,rating,timestamp` + a header   ml-latest `ratings.csv`
// The timestamp column may be absent (3 fields). Ids are integers; they are remapped to dense
// indices 0..U-1 / 0..I-1 in increasing order of the original id (so the mapping does not depend
// on the order of the lines). Every error is a std::invalid_argument "<file>:<line>: <what>".
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sgmcmc {

enum class RatingsFormat { kAuto, kDat, kTsv, kCsv };

// "auto", "dat", "tsv" (alias "udata"), "csv"; std::invalid_argument naming `context` otherwise.
RatingsFormat parse_ratings_format(const std::string& name, const std::string& context = "data.ratings_format");
std::string ratings_format_name(RatingsFormat format);

// Detects the format from the file name (`*.dat` → dat, `u.data`/`*.data`/`*.tsv` → tsv,
// `*.csv` → csv), else from the first non-blank line of `text` ("::", then tab, then comma).
RatingsFormat detect_ratings_format(const std::string& path, const std::string& text);

struct RatingsReadOptions {
  RatingsFormat format = RatingsFormat::kAuto;
  // Ratings outside [min_rating, max_rating] (and NaN / inf) are errors.
  double min_rating = 0.0;
  double max_rating = 5.0;
};

struct RatingsData {
  std::string path;
  RatingsFormat format = RatingsFormat::kAuto;
  torch::Tensor users;       // [N] int64 dense user index
  torch::Tensor items;       // [N] int64 dense item index
  torch::Tensor ratings;     // [N] float32
  torch::Tensor timestamps;  // [N] int64 (0 where the file has no timestamp column)
  std::vector<int64_t> user_ids;  // dense index -> original id (increasing)
  std::vector<int64_t> item_ids;
  double min_rating = 0, max_rating = 0;  // observed range

  int64_t size() const { return ratings.defined() ? ratings.size(0) : 0; }
  int64_t num_users() const { return static_cast<int64_t>(user_ids.size()); }
  int64_t num_items() const { return static_cast<int64_t>(item_ids.size()); }
};

// Reads the whole file and parses it (no per-field streams: ~100k lines in a few ms).
RatingsData read_ratings(const std::string& path, const RatingsReadOptions& options = {});
// Same on text already in memory; `name` is used in error messages.
RatingsData parse_ratings(const std::string& text, const std::string& name,
                          const RatingsReadOptions& options = {});

// Writes the id mapping as CSV: header `kind,index,id`, then one `user,<dense>,<original>` line a
// user and one `item,<dense>,<original>` line an item.
void write_id_map(const RatingsData& data, const std::string& path);
// The same text, for callers that write it themselves.
std::string id_map_csv(const RatingsData& data);

}  // namespace sgmcmc
