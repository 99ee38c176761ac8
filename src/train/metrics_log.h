// metrics.csv: one row per evaluation. The columns are fixed by the first row (the headline
// metrics first, then every other key of that row in name order: λ's, likelihood hyperparameters,
// sampler diagnostics); later keys outside them are not written. The checkpoint keeps the file's text
// as it stood (text()), and a resumed run writes that text back: rows written after the checkpoint
// go, and a file cut mid-row or overwritten since is restored rather than appended to.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sgmcmc {

class MetricsLog {
 public:
  // `headline`: "error" or "rmse". A resumed run passes the checkpoint's `kept_rows` and `kept_text`
  // (its text()): the file becomes that text and its header gives the columns. A checkpoint of an
  // earlier version has no text (empty): the file is cut to its header and `kept_rows` rows, each
  // checked whole (std::invalid_argument "FILE:LINE: ..." on a torn or foreign row). An empty `file`:
  // rows are counted, nothing is written.
  MetricsLog(std::filesystem::path file, const std::string& headline, int64_t kept_rows = 0,
             const std::string& kept_text = "");

  void append(const std::map<std::string, double>& row);
  int64_t rows() const { return rows_; }
  // The header and every row written so far, as in the file.
  const std::string& text() const { return text_; }

 private:
  void write_header(const std::map<std::string, double>& row);

  std::filesystem::path file_;
  std::string headline_;
  std::vector<std::string> columns_;
  std::string text_;
  int64_t rows_ = 0;
};

// A number as metrics.csv writes it: 8 significant digits, empty when not finite.
std::string csv_number(double v);

}  // namespace sgmcmc
