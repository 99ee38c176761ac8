#include "kernels/cuda_mlp/gemm_lt_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/json_file.h"

namespace sgmcmc::kernels {

namespace {

// One warning per file and process: every new shape opens the cache again.
void warn_once(const std::string& path, const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(path).second) return;
  std::cerr << "sgmcmc: " << path << ": " << why << "; kernels.cuda_gemm_cache is off for this run" << std::endl;
}

GemmLtRecord parse_record(const std::string& key, const nlohmann::json& v) {
  const auto bad = [&](const std::string& what) {
    return std::invalid_argument("entry \"" + key + "\": " + what);
  };
  if (!v.is_object()) throw bad("not an object");
  for (const char* field : {"algo", "workspace", "kernel", "candidates", "us", "heuristic_us"})
    if (!v.contains(field)) throw bad(std::string("no \"") + field + "\"");
  GemmLtRecord r;
  const auto& algo = v.at("algo");
  if (!algo.is_array() || algo.empty()) throw bad("\"algo\" is not a list of unsigned integers");
  for (const auto& w : algo) {
    if (!w.is_number_unsigned()) throw bad("\"algo\" is not a list of unsigned integers");
    r.algo.push_back(w.get<uint64_t>());
  }
  if (!v.at("workspace").is_number_unsigned()) throw bad("\"workspace\" is not an unsigned integer");
  r.workspace = v.at("workspace").get<uint64_t>();
  if (!v.at("kernel").is_string()) throw bad("\"kernel\" is not a string");
  r.kernel = v.at("kernel").get<std::string>();
  if (!v.at("candidates").is_number_integer()) throw bad("\"candidates\" is not an integer");
  r.candidates = v.at("candidates").get<int>();
  if (!v.at("us").is_number() || !v.at("heuristic_us").is_number()) throw bad("\"us\" or \"heuristic_us\" is not a number");
  r.us = v.at("us").get<double>();
  r.heuristic_us = v.at("heuristic_us").get<double>();
  return r;
}

}  // namespace

std::string gemm_lt_cache_path(const std::string& setting) {
  if (setting == "off") return "";
  if (setting != "auto") return setting;
  // the XDG base directory convention: the cache's location, not a setting of its own
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x == '/')
    return std::string(x) + "/sgmcmc/gemm_lt.json";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h == '/') return std::string(h) + "/.cache/sgmcmc/gemm_lt.json";
  return "";
}

GemmLtCache::GemmLtCache(const std::string& path) : path_(path) {
  if (path_.empty()) return;
  std::error_code ec;
  const auto dir = std::filesystem::path(path_).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) {
    off("cannot create its directory (" + ec.message() + ")");
    return;
  }
  const std::string lock = path_ + ".lock";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    off("cannot open " + lock + " (" + std::strerror(errno) + ")");
    return;
  }
  int rc;
  do rc = ::flock(lock_fd_, LOCK_EX);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    off("cannot lock " + lock + " (" + std::strerror(errno) + ")");
    return;
  }
  std::ifstream in(path_);
  if (!in) {
    if (std::filesystem::exists(path_, ec)) {
      off("cannot be read");
      return;
    }
    on_ = true;  // no file yet: the first add() writes it
    return;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto j = nlohmann::json::parse(text.str());
    if (!j.is_object()) throw std::invalid_argument("not a JSON object");
    for (const auto& [key, v] : j.items()) records_.emplace(key, parse_record(key, v));
  } catch (const std::exception& e) {
    records_.clear();
    off(std::string("not a gemm_lt choice cache (") + e.what() + "): left as it is");
    return;
  }
  on_ = true;
}

GemmLtCache::~GemmLtCache() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void GemmLtCache::off(const std::string& why) {
  on_ = false;
  warn_once(path_, why);
}

std::optional<GemmLtRecord> GemmLtCache::find(const std::string& key) const {
  if (!on_) return std::nullopt;
  const auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

void GemmLtCache::add(const std::string& key, const GemmLtRecord& record) {
  if (!on_ || records_.count(key) != 0) return;
  records_.emplace(key, record);
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, r] : records_)
    j[k] = {{"algo", r.algo},       {"workspace", r.workspace}, {"kernel", r.kernel},
            {"candidates", r.candidates}, {"us", r.us},         {"heuristic_us", r.heuristic_us}};
  try {
    write_json_file(path_, j);
  } catch (const std::exception& e) {
    off(std::string("cannot be written (") + e.what() + ")");
  }
}

}  // namespace sgmcmc::kernels
