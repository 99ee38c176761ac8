#include "distributed/distributed_options.h"

#include <cmath>
#include <stdexcept>

namespace sgmcmc {
namespace {
const std::string kFilePrefix = "file://";
}

std::string DistributedOptions::file_store_path() const {
  return init.rfind(kFilePrefix, 0) == 0 ? init.substr(kFilePrefix.size()) : std::string();
}

const std::vector<std::string>& distributed_keys() {
  static const std::vector<std::string> keys = {"mode", "init", "timeout_s", "backend"};
  return keys;
}

DistributedOptions parse_distributed_options(const OptionMap& block) {
  DistributedOptions o;
  const std::string& where = block.context();
  o.mode = block.get_choice("mode", "chains", {"chains", "data"});
  o.init = block.get_string("init", "env");
  if (o.init != "env" && (o.init.rfind(kFilePrefix, 0) != 0 || o.file_store_path().size() < 2 ||
                          o.file_store_path()[0] != '/'))
    throw std::invalid_argument(where + ".init: expected env or file:///absolute/path, got '" + o.init + "'");
  o.timeout_s = block.get_double("timeout_s", 300);
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s))
    throw std::invalid_argument(where + ".timeout_s: must be a positive number of seconds");
  o.backend = block.get_choice("backend", "auto", {"auto", "gloo", "nccl"});
  return o;
}

}  // namespace sgmcmc
