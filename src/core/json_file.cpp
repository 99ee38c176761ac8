#include "core/json_file.h"

#include "core/atomic_file.h"

namespace sgmcmc {

std::string json_text(const nlohmann::ordered_json& j) { return j.dump(2) + "\n"; }

void write_json_file(const std::string& path, const nlohmann::ordered_json& j) { write_file_atomic(path, json_text(j)); }

}  // namespace sgmcmc
