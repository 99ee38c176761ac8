// sgmcmc sweep: one config over seeds (and optionally a grid of option values), run one after
// another into OUT/<tag>-seed<k>, then a table of mean ± std per grid point (sweep.csv, stdout).
#define CXXOPTS_VECTOR_DELIMITER '\x1f'
#include <cxxopts.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <regex>
#include <sstream>

#include "cli/commands.h"
#include "config/experiment_config.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace sgmcmc {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The numeric "key": value lines of a summary.json written by run_training.
std::map<std::string, double> read_summary(const fs::path& path) {
  std::map<std::string, double> out;
  std::ifstream in(path);
  std::regex re(R"re(^\s*"([^"]+)":\s*(-?[0-9.eE+-]+),?\s*$)re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, re)) out[m[1]] = std::stod(m[2]);
  }
  return out;
}

}  // namespace

int cmd_sweep(int argc, char** argv) {
  try {
    cxxopts::Options options("sgmcmc sweep", "Runs a config over several seeds and option values; prints mean ± std.");
    options.custom_help("CONFIG.yaml --out DIR [--seeds 1,2,3] [--grid key=v1,v2]... [--set key=value]...");
    options.add_options()
        ("config", "YAML config file", cxxopts::value<std::string>())
        ("out", "sweep directory (one run directory per combination inside)", cxxopts::value<std::string>())
        ("seeds", "comma-separated seeds", cxxopts::value<std::string>()->default_value("1,2,3"))
        ("grid", "key=v1,v2,... : values to sweep (repeatable; the grid is the product)",
         cxxopts::value<std::vector<std::string>>())
        ("set", "override a config key for every run (repeatable)", cxxopts::value<std::vector<std::string>>())
        ("overwrite", "rerun combinations that already have a summary.json")
        ("q,quiet", "only the final table")
        ("h,help", "show this help");
    options.parse_positional({"config"});
    auto r = options.parse(argc, argv);
    if (r.count("help")) {
      std::cout << options.help() << std::endl;
      return 0;
    }
    if (!r.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + r.unmatched()[0] + "'");
    if (!r.count("config")) throw std::invalid_argument("missing CONFIG.yaml");
    if (!r.count("out")) throw std::invalid_argument("missing --out DIR");
    const std::string config_path = r["config"].as<std::string>();
    const fs::path out = r["out"].as<std::string>();
    std::vector<std::string> sets;
    if (r.count("set")) sets = r["set"].as<std::vector<std::string>>();
    std::vector<std::string> seeds = split(r["seeds"].as<std::string>(), ',');
    // Grid points: list of assignment lists.
    std::vector<std::vector<std::string>> points = {{}};
    if (r.count("grid"))
      for (const auto& g : r["grid"].as<std::vector<std::string>>()) {
        auto eq = g.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("--grid " + g + ": expected key=v1,v2,...");
        std::vector<std::vector<std::string>> next;
        for (const auto& p : points)
          for (const auto& v : split(g.substr(eq + 1), ',')) {
            auto q = p;
            q.push_back(g.substr(0, eq) + "=" + v);
            next.push_back(q);
          }
        points = next;
      }
    // Check every combination's config before running anything.
    for (const auto& p : points) {
      auto all = sets;
      all.insert(all.end(), p.begin(), p.end());
      all.push_back("seed=" + seeds.at(0));
      load_config(config_path, all);
    }
    fs::create_directories(out);
    std::ofstream csv(out / "sweep.csv");
    csv << "point,seed,test_error,test_nll,test_rmse,val_error,val_nll,samples,wall_seconds,steps_per_second\n";
    std::ostringstream table;
    table << std::left << std::setw(40) << "point" << "  test_error (mean ± std)   test_nll (mean ± std)   n\n";
    for (const auto& p : points) {
      std::string tag;
      for (const auto& a : p) tag += (tag.empty() ? "" : "_") + a;
      if (tag.empty()) tag = "base";
      std::string safe = std::regex_replace(tag, std::regex("[^A-Za-z0-9_.=-]"), "_");
      std::vector<double> errs, nlls;
      for (const auto& seed : seeds) {
        auto all = sets;
        all.insert(all.end(), p.begin(), p.end());
        all.push_back("seed=" + seed);
        fs::path dir = out / (safe + "-seed" + seed);
        std::map<std::string, double> s;
        if (!r.count("overwrite") && fs::exists(dir / "summary.json") && read_summary(dir / "summary.json").count("steps")) {
          s = read_summary(dir / "summary.json");
          if (!r.count("quiet")) std::cout << dir.string() << ": done before, reusing its summary.json\n";
        } else {
          RunOptions ro;
          ro.out_dir = dir.string();
          ro.overwrite = true;
          ro.quiet = r.count("quiet") > 0;
          if (!ro.quiet) std::cout << "== " << tag << " seed " << seed << " -> " << dir.string() << std::endl;
          s = run_training(load_config(config_path, all), ro).values;
        }
        auto g = [&](const char* k) {
          auto it = s.find(k);
          return it == s.end() || !std::isfinite(it->second) ? std::string() : std::to_string(it->second);
        };
        csv << tag << "," << seed << "," << g("test_error") << "," << g("test_nll") << "," << g("test_rmse") << ","
            << g("val_error") << "," << g("val_nll") << "," << g("samples") << "," << g("wall_seconds") << ","
            << g("steps_per_second") << "\n";
        csv.flush();
        double err = s.count("test_error") ? s["test_error"] : NAN;
        if (!std::isfinite(err) && s.count("test_rmse")) err = s["test_rmse"];
        errs.push_back(err);
        nlls.push_back(s.count("test_nll") ? s["test_nll"] : NAN);
      }
      auto ms = [](const std::vector<double>& v) {
        double m = 0, q = 0;
        for (double x : v) m += x;
        m /= v.size();
        for (double x : v) q += (x - m) * (x - m);
        double sd = v.size() > 1 ? std::sqrt(q / (v.size() - 1)) : 0.0;
        std::ostringstream o;
        o << std::fixed << std::setprecision(5) << m << " ± " << sd;
        return o.str();
      };
      table << std::left << std::setw(40) << tag << "  " << std::setw(26) << ms(errs) << std::setw(24) << ms(nlls)
            << errs.size() << "\n";
    }
    std::cout << table.str();
    std::ofstream(out / "sweep.txt") << "(std = sample standard deviation over seeds)\n" << table.str();
    return 0;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "sgmcmc sweep: error: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    std::cerr << "sgmcmc sweep: error: " << m.substr(0, m.find('\n')) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::string m = e.what();
    std::cerr << "sgmcmc sweep: error: " << m.substr(0, m.find('\n')) << "\n";
    return 1;
  }
}

}  // namespace sgmcmc
