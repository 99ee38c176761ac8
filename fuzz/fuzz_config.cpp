// libFuzzer target: the config loader (YAML text -> raw blocks -> typed ExperimentConfig -> resolved
// YAML). Malformed input must end in std::invalid_argument; the message must name the source.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "config/experiment_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    sgmcmc::RawConfig raw = sgmcmc::parse_raw_config(text, "fuzz.yaml");
    sgmcmc::ExperimentConfig c = sgmcmc::build_config(std::move(raw));
    (void)sgmcmc::to_yaml(c);
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find("fuzz.yaml") == std::string::npos) __builtin_trap();
  }
  return 0;
}
