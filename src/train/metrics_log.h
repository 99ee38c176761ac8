// metrics.csv: one row per evaluation. The columns are fixed by the first row (the headline
// metrics first, then every other key of that row in name order: λ's, likelihood hyperparameters,
// sampler diagnostics); later keys outside them are not written. Resuming keeps the header and the
// rows the checkpoint knows about and drops any written after it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sgmcmc {

class MetricsLog {
 public:
  // `headline`: "error" or "rmse". With `kept_rows` > 0 (a resumed run), the file is cut to its
  // header and that many rows, and its header gives the columns. An empty `file`: rows are counted,
  // nothing is written.
  MetricsLog(std::filesystem::path file, const std::string& headline, int64_t kept_rows = 0);

  void append(const std::map<std::string, double>& row);
  int64_t rows() const { return rows_; }

 private:
  void write_header(const std::map<std::string, double>& row);

  std::filesystem::path file_;
  std::string headline_;
  std::vector<std::string> columns_;
  int64_t rows_ = 0;
};

// A number as metrics.csv writes it: 8 significant digits, empty when not finite.
std::string csv_number(double v);

}  // namespace sgmcmc
