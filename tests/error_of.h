// The message of the std::invalid_argument a callable throws ("" if it throws none): the tests of
// config, data and sweep parsers compare it with the one-line error they expect.
#pragma once

#include <stdexcept>
#include <string>

namespace sgmcmc::test_util {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace sgmcmc::test_util
