// Repeatable `--set key=value` options as given. cxxopts splits a vector option's value at commas
// (its delimiter is a macro, and another translation unit's instantiation can win), which would cut
// list values (`--set model.hidden=100,100`, `--set data.ood_classes=5,6`, `--set
// prior.groups=w=*.weight,rest=*`) apart; the pieces are joined back: a piece starts a new assignment
// only when the text before its first '=' is a config key (block.key, or a top-level key).
#pragma once

#include <string>
#include <vector>

namespace sgmcmc {

inline bool starts_assignment(const std::string& piece) {
  const auto eq = piece.find('=');
  if (eq == std::string::npos) return false;
  const std::string key = piece.substr(0, eq);
  return key.find('.') != std::string::npos || key == "name" || key == "seed" || key == "device" || key == "chains";
}

inline std::vector<std::string> assignments(const std::vector<std::string>& parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) {
    if (!starts_assignment(p) && !out.empty()) out.back() += "," + p;
    else out.push_back(p);
  }
  return out;
}

}  // namespace sgmcmc
