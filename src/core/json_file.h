// JSON files as the project writes them: nlohmann-json, 2-space indent, non-finite numbers as null,
// replaced atomically (util/atomic_file.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace sgmcmc {

std::string json_text(const nlohmann::ordered_json& j);
void write_json_file(const std::string& path, const nlohmann::ordered_json& j);

}  // namespace sgmcmc
