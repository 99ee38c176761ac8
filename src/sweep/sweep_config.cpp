#include "sweep/sweep_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "config/option_map.h"

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
  static const std::regex re(R"(^(seed|name|device|[a-z_]+\.[A-Za-z0-9_]+)$)");
  if (!std::regex_match(key, re))
    c.fail(where + "." + key, "expected a config key (block.key, or seed/name/device)");
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

// Fills `p` from the keys of mapping `n` (on top of what it has).
void read_part(const YAML::Node& n, SweepPart& p, const Ctx& c, const std::string& prefix, const std::string& base_dir) {
  auto K = [&](const std::string& k) { return prefix + k; };
  if (n["name"]) p.name = scalar_text(n["name"], c, K("name"));
  if (auto b = n["base"]) {
    if (b.IsMap()) {
      YAML::Emitter e;
      e << b;
      p.base_inline = e.c_str();
      p.base_path.clear();
    } else if (b.IsScalar() && !b.Scalar().empty()) {
      fs::path bp = b.Scalar();
      if (bp.is_relative()) bp = fs::path(base_dir) / bp;
      bp = bp.lexically_normal();
      if (!fs::is_regular_file(bp)) c.fail(K("base"), "cannot open config '" + bp.string() + "'");
      p.base_path = bp.string();
      p.base_inline.clear();
    } else {
      c.fail(K("base"), "expected a config path or an inline mapping");
    }
  }
  if (auto s = n["set"]) {
    if (!s.IsMap()) c.fail(K("set"), "expected a mapping of config keys to values");
    for (const auto& kv : s) {
      std::string k = kv.first.as<std::string>();
      check_dotted(k, c, K("set"));
      p.set.push_back(k + "=" + scalar_text(kv.second, c, K("set." + k)));
    }
  }
  if (auto g = n["grid"]) p.grid = key_lists(g, c, K("grid"));
  if (auto z = n["zip"]) {
    p.zip.clear();
    std::vector<YAML::Node> groups;
    if (z.IsMap()) groups.push_back(z);
    else if (z.IsSequence()) for (const auto& item : z) groups.push_back(item);
    else c.fail(K("zip"), "expected a mapping of keys to equal-length lists, or a list of such mappings");
    if (groups.empty()) c.fail(K("zip"), "empty list");
    for (size_t i = 0; i < groups.size(); ++i) {
      std::string where = K("zip") + (z.IsSequence() ? "[" + std::to_string(i) + "]" : "");
      KeyValues kv = key_lists(groups[i], c, where);
      for (const auto& [k, v] : kv)
        if (v.size() != kv[0].second.size())
          c.fail(where + "." + k, "zip lists of unequal length (" + kv[0].first + " has " +
                                      std::to_string(kv[0].second.size()) + " values, " + k + " has " +
                                      std::to_string(v.size()) + ")");
      p.zip.push_back(kv);
    }
  }
  if (auto s = n["seeds"]) {
    p.seeds = list_of(s, c, K("seeds"));
    for (const auto& v : p.seeds)
      if (!std::regex_match(v, std::regex("[0-9]+"))) c.fail(K("seeds"), "expected non-negative integers, got '" + v + "'");
  }
  if (auto s = n["seed_keys"]) {
    p.seed_keys = list_of(s, c, K("seed_keys"));
    for (const auto& k : p.seed_keys) check_dotted(k, c, K("seed_keys"));
  }
  if (auto s = n["select"]) {
    if (!s.IsMap()) c.fail(K("select"), "expected a mapping {metric: val_..., mode: min|max, test: test_..., group_by: [...]}");
    check_keys(s, kSelectKeys, c, K("select."));
    if (s["metric"]) {
      p.select.metric = scalar_text(s["metric"], c, K("select.metric"));
      p.select.test.clear();
    }
    if (s["mode"]) {
      std::string m = scalar_text(s["mode"], c, K("select.mode"));
      if (m != "min" && m != "max") c.fail(K("select.mode"), "expected min or max, got '" + m + "'");
      p.select.maximize = m == "max";
    }
    if (s["test"]) p.select.test = scalar_text(s["test"], c, K("select.test"));
    if (s["group_by"]) p.select.group_by = list_of(s["group_by"], c, K("select.group_by"), true);
    if (s["report"]) p.select.report = list_of(s["report"], c, K("select.report"), true);
  }
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
  for (const auto& k : p.select.group_by)
    if (!seen.count(k) || std::find(p.seed_keys.begin(), p.seed_keys.end(), k) != p.seed_keys.end())
      c.fail(prefix + "select.group_by", "'" + k + "' is not a grid or zip key");
}

std::string fmt(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

std::string fmt4(double v) {
  std::ostringstream s;
  s << std::setprecision(4) << v;
  return s.str();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

struct Stat {
  int n = 0;
  double mean = NAN, sd = NAN;
  bool all_finite = false;
};

Stat stat_of(const std::vector<double>& xs) {
  Stat s;
  std::vector<double> v;
  for (double x : xs)
    if (std::isfinite(x)) v.push_back(x);
  s.n = static_cast<int>(v.size());
  s.all_finite = !xs.empty() && v.size() == xs.size();
  if (v.empty()) return s;
  double m = 0;
  for (double x : v) m += x;
  m /= v.size();
  double q = 0;
  for (double x : v) q += (x - m) * (x - m);
  s.mean = m;
  s.sd = v.size() > 1 ? std::sqrt(q / (v.size() - 1)) : NAN;
  return s;
}

std::string stat_text(const Stat& s) {
  if (s.n == 0) return "–";
  return fmt4(s.mean) + (s.n > 1 ? " ± " + fmt4(s.sd) : "");
}

double value_of(const RunOutcome& o, const std::string& key) {
  if (o.status != "done") return NAN;
  auto it = o.values.find(key);
  return it == o.values.end() ? NAN : it->second;
}

// Short names of a part's varying keys: last dotted component when unique.
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

}  // namespace

std::string safe_name(const std::string& text) {
  std::string out;
  for (char ch : text) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '=' || ch == '+' || ch == '-' || ch == '_') ? ch : '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

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
    if (!parts.IsSequence() || parts.size() == 0) c.fail("parts", "expected a non-empty list of mappings");
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
      spec.parts.push_back(p);
    }
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

std::vector<SweepRun> expand(const SweepSpec& spec) {
  std::vector<SweepRun> runs;
  std::set<std::string> names;
  for (size_t pi = 0; pi < spec.parts.size(); ++pi) {
    const SweepPart& p = spec.parts[pi];
    // Axes: each zip group is one axis (its lists move together), each grid key one axis.
    std::vector<KeyValues> axes = p.zip;
    for (const auto& kv : p.grid) axes.push_back({kv});
    std::vector<std::string> keys = point_keys(p);
    std::vector<std::string> all_keys = keys;
    if (!p.seeds.empty()) all_keys.push_back("seed");
    auto shorts = short_names(all_keys);
    std::vector<std::vector<std::pair<std::string, std::string>>> points = {{}};
    for (const auto& axis : axes) {
      std::vector<std::vector<std::pair<std::string, std::string>>> next;
      for (const auto& pt : points)
        for (size_t i = 0; i < axis[0].second.size(); ++i) {
          auto q = pt;
          for (const auto& [k, v] : axis) q.emplace_back(k, v[i]);
          next.push_back(q);
        }
      points = next;
    }
    std::vector<std::string> seeds = p.seeds.empty() ? std::vector<std::string>{""} : p.seeds;
    for (const auto& pt : points) {
      std::string label, dir;
      for (const auto& [k, v] : pt) {
        label += (label.empty() ? "" : " ") + shorts[k] + "=" + v;
        dir += (dir.empty() ? "" : "_") + safe_name(shorts[k] + "=" + v);
      }
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
        if (d.empty()) d = "base";
        if (d.size() > 180) {  // keep names within filesystem limits; the hash keeps them unique
          std::ostringstream h;
          h << std::hex << std::hash<std::string>{}(d);
          d = d.substr(0, 160) + "_" + h.str();
        }
        r.name = p.name.empty() ? d : p.name + "/" + d;
        r.overrides = p.set;
        for (const auto& [k, v] : r.varying) r.overrides.push_back(k + "=" + v);
        if (!names.insert(r.name).second)
          throw std::invalid_argument(spec.source + ": two runs get the same name '" + r.name + "' (repeated values in a list?)");
        runs.push_back(r);
      }
    }
  }
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

std::map<std::string, double> read_summary_json(const std::string& path) {
  std::map<std::string, double> out;
  std::ifstream in(path);
  static const std::regex re(R"re(^\s*"([^"]+)":\s*(-?[0-9.eE+-]+|null|true|false|nan|-?inf),?\s*$)re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, re)) continue;
    const std::string v = m[2];
    out[m[1]] = v == "true" ? 1.0 : v == "false" ? 0.0 : (v == "null" || v == "nan") ? NAN : std::strtod(v.c_str(), nullptr);
  }
  return out;
}

std::string summary_csv(const SweepSpec& spec, const std::vector<SweepRun>& runs, const std::vector<RunOutcome>& outcomes) {
  std::vector<std::string> keys;
  std::set<std::string> metrics;
  for (const auto& r : runs)
    for (const auto& [k, v] : r.varying)
      if (k != "seed" && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);  // seed: own column
  for (const auto& o : outcomes)
    for (const auto& [k, v] : o.values) metrics.insert(k);
  std::ostringstream s;
  s << "run,part,point,seed,status";
  for (const auto& k : keys) s << "," << csv_field(k);
  for (const auto& m : metrics) s << "," << csv_field(m);
  s << "\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    s << csv_field(r.name) << "," << csv_field(spec.parts[r.part].name) << "," << csv_field(r.point) << "," << r.seed
      << "," << outcomes[i].status;
    for (const auto& k : keys) {
      std::string v;
      for (const auto& [kk, vv] : r.varying)
        if (kk == k) v = vv;
      s << "," << csv_field(v);
    }
    for (const auto& m : metrics) {
      auto it = outcomes[i].values.find(m);
      s << "," << (it == outcomes[i].values.end() ? "" : fmt(it->second));
    }
    s << "\n";
  }
  return s.str();
}

namespace {

struct PointRows {
  std::string label;
  std::vector<std::pair<std::string, std::string>> values;  // point keys -> value
  std::vector<size_t> runs;
};

std::vector<PointRows> points_of(size_t part, const std::vector<SweepRun>& runs) {
  std::vector<PointRows> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].part != part) continue;
    if (out.empty() || out.back().label != runs[i].point) {
      PointRows pr;
      pr.label = runs[i].point;
      pr.values = runs[i].varying;
      out.push_back(pr);
    }
    out.back().runs.push_back(i);
  }
  return out;
}

std::string group_label(const SweepPart& p, const PointRows& pr) {
  std::string g;
  for (const auto& k : p.select.group_by)
    for (const auto& [kk, v] : pr.values)
      if (kk == k) g += (g.empty() ? "" : " ") + k + "=" + v;
  return g;
}

}  // namespace

std::map<std::string, std::string> best_points(const SweepSpec& spec, size_t part, const std::vector<SweepRun>& runs,
                                               const std::vector<RunOutcome>& outcomes) {
  const SweepPart& p = spec.parts.at(part);
  std::map<std::string, std::string> best;
  std::map<std::string, double> best_val;
  for (const auto& pr : points_of(part, runs)) {
    std::vector<double> xs;
    for (size_t i : pr.runs) xs.push_back(value_of(outcomes[i], p.select.metric));
    Stat s = stat_of(xs);
    if (!s.all_finite) continue;  // a failed or diverged seed disqualifies the point
    std::string g = group_label(p, pr);
    auto it = best_val.find(g);
    if (it == best_val.end() || (p.select.maximize ? s.mean > it->second : s.mean < it->second)) {
      best_val[g] = s.mean;
      best[g] = pr.label;
    }
  }
  return best;
}

std::string summary_md(const SweepSpec& spec, const std::vector<SweepRun>& runs, const std::vector<RunOutcome>& outcomes) {
  std::ostringstream s;
  s << "# Sweep " << spec.name << "\n\n";
  s << "Sweep file `" << spec.source << "`, " << runs.size()
    << " runs. Cells: mean ± sample std over seeds (one value when n = 1); n = runs done / in the point.\n";
  for (size_t pi = 0; pi < spec.parts.size(); ++pi) {
    const SweepPart& p = spec.parts[pi];
    std::vector<std::string> metrics = {p.select.metric, p.select.test};
    for (const auto& m : p.select.report)
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
    auto keys = point_keys(p);
    auto shorts = short_names(keys);
    auto best = best_points(spec, pi, runs, outcomes);
    std::set<std::string> best_labels;
    for (auto& [g, l] : best) best_labels.insert(l);
    s << "\n";
    if (!p.name.empty()) s << "## " << p.name << "\n\n";
    s << "Base `" << (p.base_path.empty() ? std::string("(inline)") : p.base_path) << "`";
    if (!p.set.empty()) {
      s << "; set";
      for (const auto& a : p.set) s << " `" << a << "`";
    }
    if (!p.seeds.empty()) {
      s << "; seeds";
      for (const auto& x : p.seeds) s << " " << x;
      if (p.seed_keys != std::vector<std::string>{"seed"}) {
        s << " (assigned to";
        for (const auto& k : p.seed_keys) s << " `" << k << "`";
        s << ")";
      }
    }
    s << ". Selection: " << (p.select.maximize ? "max " : "min ") << "`" << p.select.metric << "`";
    if (!p.select.group_by.empty()) {
      s << " per";
      for (const auto& k : p.select.group_by) s << " `" << k << "`";
    }
    s << "; `*` = selected.\n\n|";
    for (const auto& k : keys) s << " " << shorts[k] << " |";
    s << " n |";
    for (const auto& m : metrics) s << " " << m << " |";
    s << " |\n|";
    for (size_t i = 0; i < keys.size() + metrics.size() + 2; ++i) s << "---|";
    s << "\n";
    std::vector<std::string> failed;
    for (const auto& pr : points_of(pi, runs)) {
      s << "|";
      for (const auto& k : keys) {
        std::string v;
        for (const auto& [kk, vv] : pr.values)
          if (kk == k) v = vv;
        s << " " << v << " |";
      }
      int done = 0;
      for (size_t i : pr.runs) {
        if (outcomes[i].status == "done") ++done;
        else failed.push_back("`" + runs[i].name + "`: " + outcomes[i].status +
                              (outcomes[i].message.empty() ? "" : " (" + outcomes[i].message + ")"));
      }
      s << " " << done << "/" << pr.runs.size() << " |";
      for (const auto& m : metrics) {
        std::vector<double> xs;
        for (size_t i : pr.runs) xs.push_back(value_of(outcomes[i], m));
        s << " " << stat_text(stat_of(xs)) << " |";
      }
      s << " " << (best_labels.count(pr.label) ? "*" : "") << " |\n";
    }
    s << "\n";
    if (best.empty()) s << "No point has a finite `" << p.select.metric << "` for every seed: nothing selected.\n";
    for (const auto& [g, label] : best) {
      s << "- Best" << (g.empty() ? "" : " for " + g) << " by " << p.select.metric << ": **" << label << "**";
      for (const auto& pr : points_of(pi, runs)) {
        if (pr.label != label) continue;
        for (const auto& m : metrics) {
          std::vector<double> xs;
          for (size_t i : pr.runs) xs.push_back(value_of(outcomes[i], m));
          s << ", " << m << " " << stat_text(stat_of(xs));
        }
      }
      s << "\n";
    }
    if (!failed.empty()) {
      s << "\nNot done (" << failed.size() << "):\n";
      for (const auto& f : failed) s << "- " << f << "\n";
    }
  }
  return s.str();
}

}  // namespace sgmcmc
