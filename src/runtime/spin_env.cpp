#include "runtime/spin_env.h"

#include <cstdlib>

namespace sgmcmc {

std::vector<std::string> set_spin_env() {
  std::vector<std::string> set;
  if (std::getenv("SGMCMC_NO_REEXEC")) return set;
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT") && setenv("GOMP_SPINCOUNT", "3000", 1) == 0)
    set.push_back("GOMP_SPINCOUNT");
  if (!std::getenv("OPENBLAS_THREAD_TIMEOUT") && setenv("OPENBLAS_THREAD_TIMEOUT", "8", 1) == 0)
    set.push_back("OPENBLAS_THREAD_TIMEOUT");
  return set;
}

}  // namespace sgmcmc
