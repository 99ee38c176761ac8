// Expansion of a sweep into runs: zip × grid points (row-major, first key slowest) × seeds, the
// runs' stable, filesystem-safe directory names and their overrides; inline base configs as files.
#include "sweep/sweep_config.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace sgmcmc {
namespace {

using Point = std::vector<std::pair<std::string, std::string>>;  // varying key -> value

// The cartesian product of a part's axes: each zip group is one axis (its lists move together),
// each grid key one axis.
std::vector<Point> grid_points(const SweepPart& p) {
  std::vector<KeyValues> axes = p.zip;
  for (const auto& kv : p.grid) axes.push_back({kv});
  std::vector<Point> points = {{}};
  for (const auto& axis : axes) {
    std::vector<Point> next;
    for (const auto& pt : points)
      for (size_t i = 0; i < axis[0].second.size(); ++i) {
        auto q = pt;
        for (const auto& [k, v] : axis) q.emplace_back(k, v[i]);
        next.push_back(q);
      }
    points = next;
  }
  return points;
}

// A run directory name within filesystem limits ("base" when nothing varies); the hash keeps long
// names unique.
std::string bounded_name(std::string d) {
  if (d.empty()) d = "base";
  if (d.size() > 180) {
    std::ostringstream h;
    h << std::hex << std::hash<std::string>{}(d);
    d = d.substr(0, 160) + "_" + h.str();
  }
  return d;
}

// The runs of one grid point of part `pi`: one per seed (one without seeds).
void add_point_runs(const SweepPart& p, size_t pi, const Point& pt, std::map<std::string, std::string>& shorts,
                    std::vector<SweepRun>& runs) {
  std::string label, dir;
  for (const auto& [k, v] : pt) {
    label += (label.empty() ? "" : " ") + shorts[k] + "=" + v;
    dir += (dir.empty() ? "" : "_") + safe_name(shorts[k] + "=" + v);
  }
  const std::vector<std::string> seeds = p.seeds.empty() ? std::vector<std::string>{""} : p.seeds;
  for (const auto& seed : seeds) {
    SweepRun r;
    r.part = pi;
    r.point = label;
    r.seed = seed;
    r.varying = pt;
    std::string d = dir;
    if (!seed.empty()) {
      for (const auto& k : p.seed_keys) r.varying.emplace_back(k, seed);
      d += (d.empty() ? "" : "_") + safe_name(shorts["seed"] + "=" + seed);
    }
    d = bounded_name(d);
    r.name = p.name.empty() ? d : p.name + "/" + d;
    r.overrides = p.set;
    for (const auto& [k, v] : r.varying) r.overrides.push_back(k + "=" + v);
    runs.push_back(r);
  }
}

}  // namespace

std::string safe_name(const std::string& text) {
  std::string out;
  for (char ch : text) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '=' || ch == '+' || ch == '-' || ch == '_') ? ch : '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::map<std::string, std::string> short_names(const std::vector<std::string>& keys) {
  std::map<std::string, int> count;
  auto last = [](const std::string& k) { return k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1); };
  for (const auto& k : keys) ++count[last(k)];
  std::map<std::string, std::string> out;
  for (const auto& k : keys) out[k] = count[last(k)] == 1 ? last(k) : k;
  return out;
}

std::vector<std::string> point_keys(const SweepPart& p) {
  std::vector<std::string> keys;
  for (const auto& g : p.zip)
    for (const auto& [k, v] : g) keys.push_back(k);
  for (const auto& [k, v] : p.grid) keys.push_back(k);
  return keys;
}

std::vector<SweepRun> expand(const SweepSpec& spec) {
  std::vector<SweepRun> runs;
  for (size_t pi = 0; pi < spec.parts.size(); ++pi) {
    const SweepPart& p = spec.parts[pi];
    std::vector<std::string> all_keys = point_keys(p);
    if (!p.seeds.empty()) all_keys.push_back("seed");
    auto shorts = short_names(all_keys);
    for (const auto& pt : grid_points(p)) add_point_runs(p, pi, pt, shorts, runs);
  }
  std::set<std::string> names;
  for (const auto& r : runs)
    if (!names.insert(r.name).second)
      throw std::invalid_argument(spec.source + ": two runs get the same name '" + r.name + "' (repeated values in a list?)");
  return runs;
}

std::string materialize_base(const SweepSpec& spec, size_t part, const std::string& dir) {
  const SweepPart& p = spec.parts.at(part);
  if (!p.base_path.empty()) return p.base_path;
  fs::create_directories(dir);
  fs::path f = fs::path(dir) / ((p.name.empty() ? spec.name : p.name) + ".base.yaml");
  std::ofstream(f) << "# inline base config of " << spec.source << "\n" << p.base_inline << "\n";
  return f.string();
}

}  // namespace sgmcmc
