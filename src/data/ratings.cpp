#include "data/ratings.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace sgmcmc {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string base_name(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

[[noreturn]] void fail(const std::string& name, int64_t line, const std::string& what) {
  throw std::invalid_argument(name + ":" + std::to_string(line) + ": " + what);
}

bool parse_int(std::string_view s, int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

bool parse_double(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

std::string fmt_double(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

const char* separator_of(RatingsFormat f) {
  switch (f) {
    case RatingsFormat::kDat: return "::";
    case RatingsFormat::kTsv: return "\t";
    case RatingsFormat::kCsv: return ",";
    default: return "";
  }
}

const char* separator_display(RatingsFormat f) {
  switch (f) {
    case RatingsFormat::kDat: return "'::'";
    case RatingsFormat::kTsv: return "tabs";
    case RatingsFormat::kCsv: return "','";
    default: return "?";
  }
}

// Splits [line) on `sep` into at most 5 fields (a fifth means "too many").
int split_fields(std::string_view line, std::string_view sep, std::string_view* fields) {
  int n = 0;
  size_t start = 0;
  while (n < 5) {
    size_t pos = line.find(sep, start);
    if (pos == std::string_view::npos) {
      fields[n++] = line.substr(start);
      break;
    }
    fields[n++] = line.substr(start, pos - start);
    start = pos + sep.size();
  }
  return n;
}

// Dense re-indexing of raw ids: sorted unique ids, and each raw id replaced by its rank.
std::vector<int64_t> densify(std::vector<int64_t>& raw) {
  std::vector<int64_t> ids(raw);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty()) return ids;
  const int64_t lo = ids.front(), hi = ids.back();
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span < 4 * raw.size() + (1u << 20)) {
    std::vector<int64_t> lookup(span + 1, -1);
    for (size_t k = 0; k < ids.size(); ++k) lookup[ids[k] - lo] = static_cast<int64_t>(k);
    for (auto& r : raw) r = lookup[r - lo];
  } else {
    std::unordered_map<int64_t, int64_t> lookup;
    lookup.reserve(ids.size() * 2);
    for (size_t k = 0; k < ids.size(); ++k) lookup.emplace(ids[k], static_cast<int64_t>(k));
    for (auto& r : raw) r = lookup.at(r);
  }
  return ids;
}

}  // namespace

RatingsFormat parse_ratings_format(const std::string& name, const std::string& context) {
  if (name == "auto") return RatingsFormat::kAuto;
  if (name == "dat") return RatingsFormat::kDat;
  if (name == "tsv" || name == "udata") return RatingsFormat::kTsv;
  if (name == "csv") return RatingsFormat::kCsv;
  throw std::invalid_argument(context + ": unknown ratings format '" + name +
                              "' (expected auto, dat, tsv or csv)");
}

std::string ratings_format_name(RatingsFormat format) {
  switch (format) {
    case RatingsFormat::kAuto: return "auto";
    case RatingsFormat::kDat: return "dat";
    case RatingsFormat::kTsv: return "tsv";
    case RatingsFormat::kCsv: return "csv";
  }
  return "?";
}

RatingsFormat detect_ratings_format(const std::string& path, const std::string& text) {
  const std::string base = base_name(path);
  if (ends_with(base, ".dat")) return RatingsFormat::kDat;
  if (base == "u.data" || ends_with(base, ".data") || ends_with(base, ".tsv")) return RatingsFormat::kTsv;
  if (ends_with(base, ".csv")) return RatingsFormat::kCsv;
  // Sniff the first non-blank line.
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line = trim(std::string_view(text).substr(pos, end - pos));
    if (!line.empty()) {
      if (line.find("::") != std::string_view::npos) return RatingsFormat::kDat;
      if (line.find('\t') != std::string_view::npos) return RatingsFormat::kTsv;
      if (line.find(',') != std::string_view::npos) return RatingsFormat::kCsv;
      fail(path, 1 + static_cast<int64_t>(std::count(text.begin(), text.begin() + pos, '\n')),
           "cannot tell the ratings format (no '::', tab or ',' separator); set data.ratings_format");
    }
    pos = end + 1;
  }
  fail(path, 1, "empty file, no ratings");
}

namespace {

struct RatingRow {
  int64_t user = 0, item = 0, stamp = 0;
  double rating = 0;
};

// The fields of one content line (`n` of them, split at the format's separator) into `row`.
RatingRow parse_rating_fields(const std::string_view* f, int n, RatingsFormat format, const std::string& name,
                              int64_t line_no, const RatingsReadOptions& options) {
  const std::string sep = separator_of(format);
  if (n < 3)
    fail(name, line_no, "missing field: expected user" + sep + "item" + sep + "rating[" + sep +
                            "timestamp] separated by " + separator_display(format) + ", got " + std::to_string(n) +
                            " field" + (n == 1 ? "" : "s"));
  if (n > 4)
    fail(name, line_no, std::string("too many fields: expected at most 4 separated by ") + separator_display(format));
  RatingRow row;
  if (!parse_int(f[0], row.user)) fail(name, line_no, "user id '" + std::string(trim(f[0])) + "' is not an integer");
  if (!parse_int(f[1], row.item)) fail(name, line_no, "item id '" + std::string(trim(f[1])) + "' is not an integer");
  double& r = row.rating;
  if (!parse_double(f[2], r)) fail(name, line_no, "rating '" + std::string(trim(f[2])) + "' is not a number");
  if (!std::isfinite(r)) fail(name, line_no, "rating '" + std::string(trim(f[2])) + "' is not finite");
  if (r < options.min_rating || r > options.max_rating)
    fail(name, line_no, "rating " + fmt_double(r) + " is outside [" + fmt_double(options.min_rating) + ", " +
                            fmt_double(options.max_rating) + "]");
  if (n == 4 && !parse_int(f[3], row.stamp))
    fail(name, line_no, "timestamp '" + std::string(trim(f[3])) + "' is not an integer");
  return row;
}

// The parsed rows, column by column.
struct RatingColumns {
  std::vector<int64_t> users, items, stamps;
  std::vector<float> ratings;
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();

  void reserve(size_t n) {
    users.reserve(n);
    items.reserve(n);
    ratings.reserve(n);
    stamps.reserve(n);
  }
  void add(const RatingRow& row) {
    users.push_back(row.user);
    items.push_back(row.item);
    ratings.push_back(static_cast<float>(row.rating));
    stamps.push_back(row.stamp);
    lo = std::min(lo, row.rating);
    hi = std::max(hi, row.rating);
  }
  // Dense ids and tensors (consumes the columns).
  RatingsData finish(const std::string& name, RatingsFormat format) {
    RatingsData out;
    out.path = name;
    out.format = format;
    out.user_ids = densify(users);
    out.item_ids = densify(items);
    const auto n = static_cast<int64_t>(ratings.size());
    auto i64 = torch::TensorOptions().dtype(torch::kInt64);
    out.users = torch::from_blob(users.data(), {n}, i64).clone();
    out.items = torch::from_blob(items.data(), {n}, i64).clone();
    out.timestamps = torch::from_blob(stamps.data(), {n}, i64).clone();
    out.ratings = torch::from_blob(ratings.data(), {n}, torch::TensorOptions().dtype(torch::kFloat32)).clone();
    out.min_rating = lo;
    out.max_rating = hi;
    return out;
  }
};

}  // namespace

RatingsData parse_ratings(const std::string& text, const std::string& name, const RatingsReadOptions& options) {
  RatingsFormat format = options.format == RatingsFormat::kAuto ? detect_ratings_format(name, text) : options.format;
  const std::string_view sep = separator_of(format);
  RatingColumns cols;
  cols.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  const std::string_view all(text);
  int64_t line_no = 0, last_line = 0;
  bool first_content_line = true;
  size_t pos = 0;
  std::string_view f[5];
  while (pos < all.size()) {
    size_t end = all.find('\n', pos);
    if (end == std::string_view::npos) end = all.size();
    ++line_no;
    std::string_view line = all.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    last_line = line_no;
    const int n = split_fields(line, sep, f);
    if (first_content_line) {
      first_content_line = false;
      // ratings.csv starts with a header such as "userId,movieId,rating,timestamp".
      int64_t user = 0;
      if (format == RatingsFormat::kCsv && !parse_int(f[0], user)) continue;
    }
    cols.add(parse_rating_fields(f, n, format, name, line_no, options));
  }
  if (cols.ratings.empty())
    fail(name, std::max<int64_t>(last_line, 1),
         last_line == 0 ? "empty file, no ratings" : "no ratings after the header");
  return cols.finish(name, format);
}

RatingsData read_ratings(const std::string& path, const RatingsReadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open ratings file (" + std::strerror(errno) + ")");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::streamoff>(in.tellg());
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(size), '\0');
  if (size > 0 && !in.read(&text[0], size)) throw std::invalid_argument(path + ": read error");
  return parse_ratings(text, path, options);
}

std::string id_map_csv(const RatingsData& data) {
  std::string buf = "kind,index,id\n";
  buf.reserve(32 * (data.user_ids.size() + data.item_ids.size()) + 16);
  for (size_t k = 0; k < data.user_ids.size(); ++k)
    buf += "user," + std::to_string(k) + "," + std::to_string(data.user_ids[k]) + "\n";
  for (size_t k = 0; k < data.item_ids.size(); ++k)
    buf += "item," + std::to_string(k) + "," + std::to_string(data.item_ids[k]) + "\n";
  return buf;
}

void write_id_map(const RatingsData& data, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::invalid_argument(path + ": cannot write the id map");
  out << id_map_csv(data);
  if (!out) throw std::invalid_argument(path + ": write error");
}

}  // namespace sgmcmc
