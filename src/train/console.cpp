#include "train/console.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace sgmcmc {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

Console::Console(std::string run_name, bool quiet, bool progress, bool classification, double total_epochs)
    : name_(std::move(run_name)),
      quiet_(quiet || !progress),
      tty_(!quiet && progress && isatty(fileno(stderr))),
      classification_(classification),
      headline_(classification ? "error" : "rmse"),
      total_epochs_(total_epochs),
      last_progress_(std::chrono::steady_clock::now()) {}

void Console::clear() {
  if (tty_) std::cerr << "\r\033[K" << std::flush;
}

void Console::warning(const std::string& line) {
  clear();  // shown with --quiet too: a warning is about the result, not progress
  std::cout << std::flush;  // in a log of both streams, in the order it happened
  std::cerr << name_ << ": warning: " << line << std::endl;
}

void Console::first_epoch(double seconds, double eta_seconds) {
  if (quiet_) return;
  clear();
  std::cout << name_ << ": first epoch " << format_duration(seconds) << "; about " << format_duration(eta_seconds)
            << " to go" << std::endl;
}

void Console::evaluation(const std::map<std::string, double>& row, const std::map<std::string, double>& lambdas,
                         double eta_seconds) {
  if (quiet_) return;
  clear();
  const std::string& mname = headline_;
  auto get = [&](const std::string& k) {
    auto it = row.find(k);
    return it == row.end() ? NAN : it->second;
  };
  auto pct = [&](const std::string& k) {
    const double v = get(k);
    std::ostringstream o;
    if (!std::isfinite(v)) return std::string("-");
    if (classification_ && k.find("error") != std::string::npos) o << std::setprecision(2) << std::fixed << 100 * v << "%";
    else o << std::setprecision(4) << std::fixed << v;
    return o.str();
  };
  std::ostringstream s;
  s << std::fixed << "epoch " << std::setprecision(2) << get("epoch") << "/" << total_epochs_ << " step "
    << static_cast<int64_t>(get("step")) << " | loss " << std::setprecision(4) << get("train_loss");
  s << " | test " << mname << " " << pct("test_" + mname) << " nll " << pct("test_nll") << " (sample "
    << pct("sample_test_" + mname) << ") | samples " << static_cast<int64_t>(get("samples"));
  s << " | λ";
  for (const auto& [k, v] : lambdas) s << " " << std::setprecision(3) << std::defaultfloat << v;
  s << " | lr " << std::setprecision(3) << std::defaultfloat << get("lr") << " | " << std::setprecision(1) << std::fixed
    << get("steps_per_second") << " steps/s | " << format_duration(get("wall_seconds"));
  if (eta_seconds > 0) s << " | ETA " << format_duration(eta_seconds);
  std::cout << s.str() << std::endl;
}

void Console::progress(int64_t step, int64_t total, int64_t spe, double rate) {
  if (!tty_) return;
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_progress_).count() <= 0.5) return;
  last_progress_ = now;
  std::cerr << "\r\033[K[" << name_ << "] epoch " << step / spe << "/" << total / spe << "  step " << step << "/" << total
            << "  " << std::fixed << std::setprecision(1) << rate << " steps/s  ETA "
            << format_duration((total - step) / std::max(rate, 1e-9)) << std::flush;
}

}  // namespace sgmcmc
