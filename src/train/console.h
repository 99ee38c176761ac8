// What a run prints: one line per evaluation on stdout, and a progress line with the ETA on stderr
// when it is a terminal (cleared before anything else is printed).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace sgmcmc {

class Console {
 public:
  // `quiet` (--quiet) or not `progress` (output.progress: false): no evaluation lines, no first-epoch
  // line; `progress` on a terminal: the progress line too. Warnings are printed either way.
  Console(std::string run_name, bool quiet, bool progress, bool classification, double total_epochs);
  // The metric the evaluation line shows (default: error for classification, else rmse).
  void set_headline(std::string metric) { headline_ = std::move(metric); }

  // The evaluation line from a metrics row (and the prior's λ's), with the time left at this rate.
  void evaluation(const std::map<std::string, double>& row, const std::map<std::string, double>& lambdas,
                  double eta_seconds);
  // After the session's first epoch: its time and the estimate of the rest.
  void first_epoch(double seconds, double eta_seconds);
  // The progress line, at most twice a second.
  void progress(int64_t step, int64_t total, int64_t steps_per_epoch, double steps_per_second);
  // Clears the progress line.
  void clear();
  // One line on stderr, "<run>: warning: <line>" (also when quiet), after what stdout holds so far.
  void warning(const std::string& line);

 private:
  std::string name_;
  bool quiet_, tty_, classification_;
  std::string headline_;  // the metric shown: error, rmse or perplexity
  double total_epochs_;
  std::chrono::steady_clock::time_point last_progress_;
};

// h:mm:ss or m:ss ("?" for a negative or non-finite number).
std::string format_duration(double seconds);

}  // namespace sgmcmc
