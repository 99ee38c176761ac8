// The OpenMP / OpenBLAS spin settings the binary runs with, as environment variables, which both
// libraries read only when they are loaded. No LibTorch here: src/launcher/main.cpp sets them before
// it executes the program proper (sgmcmc-main), so that LibTorch is loaded once.
#pragma once

#include <string>
#include <vector>

namespace sgmcmc {

// Sets GOMP_SPINCOUNT=3000 (unless the user set it or OMP_WAIT_POLICY) and OPENBLAS_THREAD_TIMEOUT=8
// (unless the user set it), nothing at all when SGMCMC_NO_REEXEC is set; returns the names it set.
// Why these values: runtime/cpu.cpp.
std::vector<std::string> set_spin_env();

}  // namespace sgmcmc
