#include "train/metrics_log.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "core/atomic_file.h"

namespace sgmcmc {

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream s;
  s << std::setprecision(8) << v;
  return s.str();
}

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string c; std::getline(ss, c, ',');) out.push_back(c);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// The header and `rows` rows of a metrics.csv written before checkpoints kept its text: each line
// whole (ends in a newline), the header's first column "epoch", every row as many fields as it has and
// each field a number or empty.
std::string checked_rows(const std::filesystem::path& file, int64_t rows) {
  std::ifstream in(file, std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](int64_t line, const std::string& what) {
    throw std::invalid_argument(file.string() + ":" + std::to_string(line) + ": " + what + "; the checkpoint knows " +
                                std::to_string(rows) + " rows (restore the file, or start the run again)");
  };
  size_t pos = 0;
  size_t fields = 0;
  for (int64_t i = 0; i <= rows; ++i) {
    const size_t end = all.find('\n', pos);
    if (end == std::string::npos)
      fail(i + 1, pos < all.size() ? "row cut short (no end of line)" : "missing (the file ends early)");
    const std::vector<std::string> cells = split_csv(all.substr(pos, end - pos));
    if (i == 0) {
      if (cells.empty() || cells[0] != "epoch") fail(1, "not a metrics.csv header");
      fields = cells.size();
    } else {
      if (cells.size() != fields)
        fail(i + 1, std::to_string(cells.size()) + " fields where the header has " + std::to_string(fields));
      for (const auto& c : cells) {
        char* stop = nullptr;
        if (!c.empty() && (std::strtod(c.c_str(), &stop), *stop != '\0')) fail(i + 1, "'" + c + "' is not a number");
      }
    }
    pos = end + 1;
  }
  return all.substr(0, pos);
}

}  // namespace

MetricsLog::MetricsLog(std::filesystem::path file, const std::string& headline, int64_t kept_rows,
                       const std::string& kept_text)
    : file_(std::move(file)), headline_(headline), rows_(kept_rows) {
  if (kept_rows <= 0 || file_.empty()) return;
  text_ = !kept_text.empty() ? kept_text : checked_rows(file_, kept_rows);
  write_file_atomic(file_.string(), text_);
  columns_ = split_csv(text_.substr(0, text_.find('\n')));
}

void MetricsLog::write_header(const std::map<std::string, double>& row) {
  const std::string& m = headline_;
  columns_ = {"epoch", "step", "wall_seconds", "lr", "train_loss", "test_" + m, "test_nll", "val_" + m,
              "val_nll", "sample_test_" + m, "sample_test_nll", "samples", "steps_per_second"};
  // The first row may come before any sample: every metric of the current sample (sample_test_*)
  // also gets its test_ and val_ column, and classification its mutual information.
  std::map<std::string, double> keys = row;
  for (const auto& [k, v] : row)
    if (k.rfind("sample_test_", 0) == 0) keys["test_" + k.substr(12)] = keys["val_" + k.substr(12)] = NAN;
  if (m == "error") keys["test_mi"] = keys["val_mi"] = NAN;
  for (const auto& [k, v] : keys)
    if (std::find(columns_.begin(), columns_.end(), k) == columns_.end()) columns_.push_back(k);
  std::string header;
  for (const auto& c : columns_) header += (header.empty() ? "" : ",") + c;
  text_ = header + "\n";
  std::ofstream(file_) << text_;
}

void MetricsLog::append(const std::map<std::string, double>& row) {
  if (file_.empty()) {  // a distributed run's ranks other than 0 count rows only
    ++rows_;
    return;
  }
  if (columns_.empty()) write_header(row);
  std::string line;
  for (size_t i = 0; i < columns_.size(); ++i) {
    auto it = row.find(columns_[i]);
    line += (i ? "," : "") + (it == row.end() ? std::string() : csv_number(it->second));
  }
  std::ofstream(file_, std::ios::app) << line << "\n";
  text_ += line + "\n";
  ++rows_;
}

}  // namespace sgmcmc
