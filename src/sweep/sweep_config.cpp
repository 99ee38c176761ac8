// Sweep files: parsing the YAML (one-line errors naming file and key), the plain-config form
// (--grid/--seeds) and the command line's adjustments. Expansion into runs: sweep_expand.cpp.
#include "sweep/sweep_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/option_map.h"

namespace fs = std::filesystem;

namespace sgmcmc {
namespace {

const std::vector<std::string> kPartKeys = {"name", "description", "base", "set", "grid", "zip", "seeds", "seed_keys", "select"};
const std::vector<std::string> kSelectKeys = {"metric", "mode", "test", "group_by", "report"};

struct Ctx {
  std::string source;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::invalid_argument(source + ": " + key + ": " + what);
  }
};

std::string suggest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string near = nearest(word, candidates);
  return near.empty() ? "" : " (did you mean '" + near + "'?)";
}

// A scalar, or a list of scalars joined by commas (like config files).
std::string scalar_text(const YAML::Node& n, const Ctx& c, const std::string& key) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) {
    std::string out;
    for (const auto& item : n) {
      if (!item.IsScalar()) c.fail(key, "nested lists are not supported");
      out += (out.empty() ? "" : ",") + item.Scalar();
    }
    return out;
  }
  if (n.IsNull()) c.fail(key, "missing value");
  c.fail(key, "expected a value, got a mapping");
}

std::vector<std::string> list_of(const YAML::Node& n, const Ctx& c, const std::string& key, bool allow_empty = false) {
  std::vector<std::string> out;
  if (n.IsScalar()) {
    out.push_back(n.Scalar());
  } else if (n.IsSequence()) {
    for (const auto& item : n) out.push_back(scalar_text(item, c, key));
  } else {
    c.fail(key, n.IsNull() ? "empty (expected a list of values)" : "expected a list of values, got a mapping");
  }
  if (out.empty() && !allow_empty) c.fail(key, "empty list");
  return out;
}

void check_dotted(const std::string& key, const Ctx& c, const std::string& where) {
  static const std::regex re(R"(^(seed|name|device|chains|[a-z_]+\.[A-Za-z0-9_]+)$)");
  if (!std::regex_match(key, re))
    c.fail(where + "." + key, "expected a config key (block.key, or seed/name/device/chains)");
}

KeyValues key_lists(const YAML::Node& n, const Ctx& c, const std::string& where) {
  if (!n.IsMap()) c.fail(where, n.IsNull() ? "empty (expected a mapping of keys to lists)" : "expected a mapping of keys to lists");
  KeyValues out;
  for (const auto& kv : n) {
    std::string k = kv.first.as<std::string>();
    check_dotted(k, c, where);
    out.emplace_back(k, list_of(kv.second, c, where + "." + k));
  }
  if (out.empty()) c.fail(where, "empty mapping");
  return out;
}

void check_keys(const YAML::Node& n, const std::vector<std::string>& allowed, const Ctx& c, const std::string& prefix) {
  for (const auto& kv : n) {
    std::string k = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      c.fail(prefix + k, "unknown key" + suggest(k, allowed));
  }
}


// base: a config path (relative to the sweep file's directory) or an inline mapping.
void read_base(const YAML::Node& b, SweepPart& p, const Ctx& c, const std::string& key, const std::string& base_dir) {
  if (b.IsMap()) {
    YAML::Emitter e;
    e << b;
    p.base_inline = e.c_str();
    p.base_path.clear();
  } else if (b.IsScalar() && !b.Scalar().empty()) {
    fs::path bp = b.Scalar();
    if (bp.is_relative()) bp = fs::path(base_dir) / bp;
    bp = bp.lexically_normal();
    if (!fs::is_regular_file(bp)) c.fail(key, "cannot open config '" + bp.string() + "'");
    p.base_path = bp.string();
    p.base_inline.clear();
  } else {
    c.fail(key, "expected a config path or an inline mapping");
  }
}

// set: a mapping of config keys to values, appended to p.set as "key=value".
void read_set(const YAML::Node& s, SweepPart& p, const Ctx& c, const std::string& key) {
  if (!s.IsMap()) c.fail(key, "expected a mapping of config keys to values");
  for (const auto& kv : s) {
    std::string k = kv.first.as<std::string>();
    check_dotted(k, c, key);
    p.set.push_back(k + "=" + scalar_text(kv.second, c, key + "." + k));
  }
}

// zip: one mapping of equal-length lists, or a list of such mappings (groups).
std::vector<KeyValues> read_zip(const YAML::Node& z, const Ctx& c, const std::string& key) {
  std::vector<YAML::Node> groups;
  if (z.IsMap()) groups.push_back(z);
  else if (z.IsSequence()) for (const auto& item : z) groups.push_back(item);
  else c.fail(key, "expected a mapping of keys to equal-length lists, or a list of such mappings");
  if (groups.empty()) c.fail(key, "empty list");
  std::vector<KeyValues> zip;
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string where = key + (z.IsSequence() ? "[" + std::to_string(i) + "]" : "");
    KeyValues kv = key_lists(groups[i], c, where);
    for (const auto& [k, v] : kv)
      if (v.size() != kv[0].second.size())
        c.fail(where + "." + k, "zip lists of unequal length (" + kv[0].first + " has " +
                                    std::to_string(kv[0].second.size()) + " values, " + k + " has " +
                                    std::to_string(v.size()) + ")");
    zip.push_back(kv);
  }
  return zip;
}

std::vector<std::string> read_seeds(const YAML::Node& s, const Ctx& c, const std::string& key) {
  std::vector<std::string> seeds = list_of(s, c, key);
  static const std::regex digits("[0-9]+");
  for (const auto& v : seeds)
    if (!std::regex_match(v, digits)) c.fail(key, "expected non-negative integers, got '" + v + "'");
  return seeds;
}

// select: {metric, mode, test, group_by, report}, on top of `sel`.
void read_select(const YAML::Node& s, SweepSelect& sel, const Ctx& c, const std::string& prefix) {
  auto K = [&](const std::string& k) { return prefix + k; };
  if (!s.IsMap()) c.fail(K("select"), "expected a mapping {metric: val_..., mode: min|max, test: test_..., group_by: [...]}");
  check_keys(s, kSelectKeys, c, K("select."));
  if (s["metric"]) {
    sel.metric = scalar_text(s["metric"], c, K("select.metric"));
    sel.test.clear();
  }
  if (s["mode"]) {
    std::string m = scalar_text(s["mode"], c, K("select.mode"));
    if (m != "min" && m != "max") c.fail(K("select.mode"), "expected min or max, got '" + m + "'");
    sel.maximize = m == "max";
  }
  if (s["test"]) sel.test = scalar_text(s["test"], c, K("select.test"));
  if (s["group_by"]) sel.group_by = list_of(s["group_by"], c, K("select.group_by"), true);
  if (s["report"]) sel.report = list_of(s["report"], c, K("select.report"), true);
}

// Fills `p` from the keys of mapping `n` (on top of what it has).
void read_part(const YAML::Node& n, SweepPart& p, const Ctx& c, const std::string& prefix, const std::string& base_dir) {
  auto K = [&](const std::string& k) { return prefix + k; };
  if (n["name"]) p.name = scalar_text(n["name"], c, K("name"));
  if (auto b = n["base"]) read_base(b, p, c, K("base"), base_dir);
  if (auto s = n["set"]) read_set(s, p, c, K("set"));
  if (auto g = n["grid"]) p.grid = key_lists(g, c, K("grid"));
  if (auto z = n["zip"]) p.zip = read_zip(z, c, K("zip"));
  if (auto s = n["seeds"]) p.seeds = read_seeds(s, c, K("seeds"));
  if (auto s = n["seed_keys"]) {
    p.seed_keys = list_of(s, c, K("seed_keys"));
    for (const auto& k : p.seed_keys) check_dotted(k, c, K("seed_keys"));
  }
  if (auto s = n["select"]) read_select(s, p.select, c, prefix);
}

void finish_part(SweepPart& p, const Ctx& c, const std::string& prefix) {
  if (p.base_path.empty() && p.base_inline.empty())
    c.fail(prefix + "base", "missing (a config path relative to the sweep file, or an inline mapping)");
  if (p.select.metric.rfind("test_", 0) == 0)
    c.fail(prefix + "select.metric", "'" + p.select.metric + "' is a test metric; select on a validation metric (val_...)");
  if (p.select.test.empty())
    p.select.test = "test_" + (p.select.metric.rfind("val_", 0) == 0 ? p.select.metric.substr(4) : p.select.metric);
  std::set<std::string> seen;
  auto add = [&](const std::string& k, const std::string& where) {
    if (!seen.insert(k).second) c.fail(where + "." + k, "key varies twice (in grid, zip or seed_keys)");
  };
  for (const auto& [k, v] : p.grid) add(k, prefix + "grid");
  for (const auto& g : p.zip)
    for (const auto& [k, v] : g) add(k, prefix + "zip");
  if (!p.seeds.empty())
    for (const auto& k : p.seed_keys) add(k, prefix + "seed_keys");
  // A group_by key the part does not vary (sampler.name in a part per sampler) is one group there; that
  // it names a key of the runs' configs is checked with their configs (sweep_runner.cpp).
  for (const auto& k : p.select.group_by)
    if (!p.seeds.empty() && std::find(p.seed_keys.begin(), p.seed_keys.end(), k) != p.seed_keys.end())
      c.fail(prefix + "select.group_by", "'" + k + "' is a seed key: the seeds are averaged, not grouped");
}

// parts: each part starts from the top level (`top`) and reads its own keys on top.
std::vector<SweepPart> read_parts(const YAML::Node& parts, const SweepPart& top, const Ctx& c,
                                  const std::string& base_dir) {
  if (!parts.IsSequence() || parts.size() == 0) c.fail("parts", "expected a non-empty list of mappings");
  std::vector<SweepPart> out;
  std::set<std::string> names;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string prefix = "parts[" + std::to_string(i) + "].";
    if (!parts[i].IsMap()) c.fail("parts[" + std::to_string(i) + "]", "expected a mapping");
    check_keys(parts[i], kPartKeys, c, prefix);
    SweepPart p = top;
    p.name.clear();
    // grid/zip of the top level are defaults; a part's own grid/zip replace them.
    read_part(parts[i], p, c, prefix, base_dir);
    if (p.name.empty()) c.fail(prefix + "name", "missing (each part needs a name)");
    if (safe_name(p.name) != p.name) c.fail(prefix + "name", "'" + p.name + "' must be [A-Za-z0-9._=+-]");
    if (!names.insert(p.name).second) c.fail(prefix + "name", "duplicate part name '" + p.name + "'");
    // set: top first, then the part's (read_part appended).
    finish_part(p, c, prefix);
    out.push_back(p);
  }
  return out;
}

}  // namespace

SweepSpec parse_sweep(const std::string& text, const std::string& source, const std::string& base_dir) {
  Ctx c{source};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(source + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) throw std::invalid_argument(source + ": expected a mapping (base:, grid:, seeds:, ...)");
  std::vector<std::string> top_keys = kPartKeys;
  top_keys.push_back("parts");
  check_keys(root, top_keys, c, "");
  SweepSpec spec;
  spec.source = source;
  SweepPart top;
  read_part(root, top, c, "", base_dir);
  spec.name = top.name.empty() ? fs::path(source).stem().string() : top.name;
  if (auto parts = root["parts"]) {
    spec.parts = read_parts(parts, top, c, base_dir);
  } else {
    top.name.clear();
    finish_part(top, c, "");
    spec.parts.push_back(top);
  }
  return spec;
}

SweepSpec load_sweep(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open sweep file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_sweep(ss.str(), path, fs::path(path).parent_path().empty() ? "." : fs::path(path).parent_path().string());
}

bool is_sweep_file(const std::string& path) {
  try {
    YAML::Node root = YAML::LoadFile(path);
    return root.IsMap() && (root["base"] || root["parts"]);
  } catch (const YAML::Exception&) {
    return false;
  }
}

namespace {
void set_metric(SweepPart& p, const std::string& metric, const std::string& source) {
  auto colon = metric.find(':');
  std::string m = metric.substr(0, colon), mode = colon == std::string::npos ? "min" : metric.substr(colon + 1);
  if (mode != "min" && mode != "max") throw std::invalid_argument("--metric " + metric + ": expected METRIC[:min|max]");
  p.select.metric = m;
  p.select.maximize = mode == "max";
  p.select.test.clear();
  finish_part(p, Ctx{source + " (--metric)"}, "");
}
}  // namespace

SweepSpec sweep_of_config(const std::string& config_path, const std::vector<std::string>& set,
                          const std::vector<std::string>& grid, const std::vector<std::string>& seeds) {
  SweepSpec spec;
  spec.source = config_path;
  spec.name = fs::path(config_path).stem().string();
  SweepPart p;
  if (!fs::is_regular_file(config_path)) throw std::invalid_argument(config_path + ": cannot open config file");
  p.base_path = config_path;
  p.set = set;
  Ctx c{"--grid"};
  for (const auto& g : grid) {
    auto eq = g.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--grid " + g + ": expected key=v1,v2,...");
    std::vector<std::string> vals;
    std::stringstream ss(g.substr(eq + 1));
    for (std::string v; std::getline(ss, v, ',');)
      if (!v.empty()) vals.push_back(v);
    if (vals.empty()) throw std::invalid_argument("--grid " + g + ": empty list");
    check_dotted(g.substr(0, eq), c, "--grid");
    p.grid.emplace_back(g.substr(0, eq), vals);
  }
  p.seeds = seeds;
  finish_part(p, Ctx{config_path}, "");
  spec.parts.push_back(p);
  return spec;
}

void adjust_sweep(SweepSpec& spec, const std::vector<std::string>& set, const std::vector<std::string>& seeds,
                  const std::string& metric) {
  for (auto& p : spec.parts) {
    p.set.insert(p.set.end(), set.begin(), set.end());
    if (!seeds.empty()) p.seeds = seeds;
    if (!metric.empty()) set_metric(p, metric, spec.source);
  }
}

}  // namespace sgmcmc
