#include "train/metrics_log.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "core/atomic_file.h"

namespace sgmcmc {

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream s;
  s << std::setprecision(8) << v;
  return s.str();
}

MetricsLog::MetricsLog(std::filesystem::path file, const std::string& headline, int64_t kept_rows)
    : file_(std::move(file)), headline_(headline), rows_(kept_rows) {
  if (kept_rows <= 0 || file_.empty()) return;
  std::ifstream in(file_);
  std::string line, kept, header;
  for (int64_t i = 0; i <= kept_rows && std::getline(in, line); ++i) {
    if (i == 0) header = line;
    kept += line + "\n";
  }
  in.close();
  write_file_atomic(file_.string(), kept);
  std::stringstream ss(header);
  for (std::string c; std::getline(ss, c, ',');) columns_.push_back(c);
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
  std::ofstream(file_) << header << "\n";
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
  ++rows_;
}

}  // namespace sgmcmc
