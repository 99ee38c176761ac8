#include "core/process_age.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace sgmcmc {

std::optional<double> process_age_seconds() {
  std::ifstream f("/proc/self/stat");
  std::string stat;
  if (!f || !std::getline(f, stat)) return std::nullopt;
  // Field 2, the command in parentheses, may hold spaces and parentheses itself: the fields after it
  // start after the last ')'. starttime is field 22, the 20th after it (state is field 3).
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i < 22; ++i)
    if (!(rest >> field)) return std::nullopt;
  unsigned long long start_ticks = 0;
  if (!(rest >> start_ticks)) return std::nullopt;
  const long hz = sysconf(_SC_CLK_TCK);
  timespec now{};
  // starttime counts from boot including suspended time: CLOCK_BOOTTIME is the same clock
  if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return std::nullopt;
  const double age = static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9 - static_cast<double>(start_ticks) / hz;
  return age >= 0 ? std::optional<double>(age) : std::nullopt;
}

}  // namespace sgmcmc
