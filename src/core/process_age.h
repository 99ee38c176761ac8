// How long this process has existed: the seconds since the kernel started it (the exec of `sgmcmc`, the
// launcher, whose process `sgmcmc-main` replaces), read from /proc/self/stat. A run reports the age at its
// start as summary.json's time.launch, the share of a run's wall clock that its own clock (wall_seconds)
// does not see: loading LibTorch (and CUDA's libraries), its static initializers, reading the config.
#pragma once

#include <optional>

namespace sgmcmc {

// Seconds since this process started, at a resolution of the kernel's clock ticks (10 ms) on the start
// and nanoseconds on now; never less than the true age (the start is rounded down). nullopt where
// /proc/self/stat cannot be read or parsed (not Linux).
std::optional<double> process_age_seconds();

}  // namespace sgmcmc
