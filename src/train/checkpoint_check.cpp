#include "train/checkpoint_check.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

namespace sgmcmc {
namespace {

uint32_t crc_bytes(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {  // zlib's crc32 takes a uInt length
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = static_cast<uint32_t>(::crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

uint32_t crc_text(uint32_t crc, const std::string& s) { return crc_bytes(crc, s.data(), s.size() + 1); }

uint32_t crc_tensor(uint32_t crc, const torch::Tensor& t) {
  if (!t.defined()) return crc_text(crc, "undefined");
  crc = crc_text(crc, std::string(c10::toString(t.scalar_type())));
  for (const int64_t d : t.sizes()) crc = crc_bytes(crc, &d, sizeof d);
  const torch::Tensor c = t.cpu().contiguous();
  return crc_bytes(crc, c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
}

uint32_t crc_archive(uint32_t crc, torch::serialize::InputArchive& ar, bool top) {
  std::vector<std::string> keys = ar.keys();
  std::sort(keys.begin(), keys.end());
  for (const auto& key : keys) {
    if (top && key == kChecksumKey) continue;
    c10::IValue v;
    if (!ar.try_read(key, v)) continue;
    crc = crc_text(crc, key);
    if (v.isTensor()) {
      crc = crc_tensor(crc, v.toTensor());
    } else if (v.isObject() || v.isModule()) {
      torch::serialize::InputArchive nested;
      if (ar.try_read(key, nested)) crc = crc_archive(crc, nested, false);
    } else {
      std::ostringstream text;
      text << v;
      crc = crc_text(crc, text.str());
    }
  }
  return crc;
}

// "block.key" -> value text of a config's YAML (two levels: to_yaml's shape), in document order.
std::vector<std::pair<std::string, std::string>> flatten(const std::string& yaml) {
  std::vector<std::pair<std::string, std::string>> out;
  const YAML::Node root = YAML::Load(yaml);
  if (!root.IsMap()) return out;
  auto text = [](const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    YAML::Emitter e;
    e << YAML::Flow << n;
    return std::string(e.c_str());
  };
  for (const auto& kv : root) {
    const std::string block = kv.first.as<std::string>();
    if (kv.second.IsMap()) {
      for (const auto& inner : kv.second) out.emplace_back(block + "." + inner.first.as<std::string>(), text(inner.second));
    } else {
      out.emplace_back(block, text(kv.second));
    }
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

uint32_t archive_checksum(torch::serialize::InputArchive& ar) {
  return crc_archive(static_cast<uint32_t>(::crc32(0L, Z_NULL, 0)), ar, true);
}

void add_checksum(torch::serialize::OutputArchive& ar) {
  std::ostringstream bytes;
  ar.save_to(bytes);
  const std::string data = bytes.str();
  torch::serialize::InputArchive back;
  back.load_from(data.data(), data.size());
  ar.write(kChecksumKey, torch::tensor(static_cast<int64_t>(archive_checksum(back)), torch::kInt64), true);
}

void verify_checksum(torch::serialize::InputArchive& ar, const std::string& file) {
  torch::Tensor stored;
  if (!ar.try_read(kChecksumKey, stored, true)) return;
  const uint32_t want = static_cast<uint32_t>(stored.item<int64_t>());
  const uint32_t got = archive_checksum(ar);
  if (got != want) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "checksum mismatch (stored %08x, contents %08x)", want, got);
    throw std::invalid_argument(file + ": corrupt checkpoint: " + msg +
                                "; restore it from a copy or start the run again");
  }
}

uint32_t dict_checksum(const c10::impl::GenericDict& dict) {
  std::vector<std::pair<std::string, c10::IValue>> entries;
  for (const auto& item : dict)
    if (item.key().isString() && item.key().toStringRef() != kChecksumKey)
      entries.emplace_back(item.key().toStringRef(), item.value());
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  uint32_t crc = static_cast<uint32_t>(::crc32(0L, Z_NULL, 0));
  for (const auto& [key, v] : entries) {
    crc = crc_text(crc, key);
    if (v.isTensor()) {
      crc = crc_tensor(crc, v.toTensor());
    } else if (v.isInt() || v.isDouble()) {  // "step" is an int; both as a double's bytes
      const double x = v.isInt() ? static_cast<double>(v.toInt()) : v.toDouble();
      crc = crc_bytes(crc, &x, sizeof x);
    } else {
      std::ostringstream text;
      text << v;
      crc = crc_text(crc, text.str());
    }
  }
  return crc;
}

bool resume_may_change(const std::string& key) {
  static const std::vector<std::string> keys = {"name", "train.epochs", "train.steps", "train.threads", "train.eval_every",
                                                "train.eval_every_steps", "train.eval_batch_size", "train.graph_epoch", "train.graph_steps", "train.eval_lag",
                                                // how the ranks meet, not what they compute (distributed.mode does)
                                                "distributed.init", "distributed.backend", "distributed.timeout_s"};
  return std::find(keys.begin(), keys.end(), key) != keys.end() || starts_with(key, "output.") ||
         starts_with(key, "kernels.");
}

bool resume_may_set(const std::string& key) {
  static const std::vector<std::string> keys = {"device",     "train.fused",    "train.graph",
                                                "train.tf32", "train.backward", "train.flush_denormal"};
  return std::find(keys.begin(), keys.end(), key) != keys.end() || starts_with(key, "sampler.") ||
         starts_with(key, "schedule.");
}

std::string first_chain_difference(const std::string& checkpoint_yaml, const std::string& run_yaml,
                                   const std::vector<std::string>& set_keys, std::string* what) {
  const auto before = flatten(checkpoint_yaml);
  const auto now = flatten(run_yaml);
  auto find = [](const std::vector<std::pair<std::string, std::string>>& kv, const std::string& k) -> const std::string* {
    for (const auto& [key, v] : kv)
      if (key == k) return &v;
    return nullptr;
  };
  auto allowed = [&](const std::string& k) {
    if (resume_may_change(k)) return true;
    return resume_may_set(k) && std::find(set_keys.begin(), set_keys.end(), k) != set_keys.end();
  };
  std::vector<std::string> order;
  for (const auto& [k, v] : before) order.push_back(k);
  for (const auto& [k, v] : now)
    if (!find(before, k)) order.push_back(k);
  for (const auto& k : order) {
    const std::string* a = find(before, k);
    const std::string* b = find(now, k);
    if (a && b && *a == *b) continue;
    if (b && *b == "auto") continue;  // resolved when the run started: the checkpoint holds what it became
    if (allowed(k)) continue;
    if (what) *what = (a ? *a : std::string("(unset)")) + " -> " + (b ? *b : std::string("(unset)"));
    return k;
  }
  return "";
}

std::string first_config_difference(const std::string& a_yaml, const std::string& b_yaml, std::string* what) {
  const auto a = flatten(a_yaml), b = flatten(b_yaml);
  for (const auto& [k, v] : a) {
    auto it = std::find_if(b.begin(), b.end(), [&](const auto& kv) { return kv.first == k; });
    if (it != b.end() && it->second == v) continue;
    if (what) *what = v + " -> " + (it == b.end() ? std::string("(unset)") : it->second);
    return k;
  }
  for (const auto& [k, v] : b)
    if (std::find_if(a.begin(), a.end(), [&](const auto& kv) { return kv.first == k; }) == a.end()) {
      if (what) *what = "(unset) -> " + v;
      return k;
    }
  return "";
}

void check_checkpoint_state(const std::string& file, const torch::Tensor& counters, const std::vector<double>& lambda,
                            const torch::Tensor& perm, int64_t train_size, int64_t steps_per_epoch, int64_t chains) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument(file + ": inconsistent checkpoint: " + what);
  };
  if (!counters.defined() || counters.dim() != 1 || counters.numel() < 5) bad("the counters are missing or malformed");
  const torch::Tensor c = counters.cpu().to(torch::kInt64);
  const int64_t step = c[0].item<int64_t>(), pos = c[1].item<int64_t>(), samples = c[2].item<int64_t>(),
                rows = c[3].item<int64_t>(), losses = c[4].item<int64_t>();
  const char* names[] = {"step", "position in the epoch", "samples", "metrics rows", "loss steps"};
  for (int i = 0; i < 5; ++i)
    if (c[i].item<int64_t>() < 0) bad(std::string(names[i]) + " is negative (" + std::to_string(c[i].item<int64_t>()) + ")");
  if (steps_per_epoch > 0 && pos >= steps_per_epoch)
    bad("position in the epoch " + std::to_string(pos) + " is not below the " + std::to_string(steps_per_epoch) +
        " steps of an epoch");
  if (samples > step) bad(std::to_string(samples) + " samples after " + std::to_string(step) + " steps");
  if (rows > step + 1) bad(std::to_string(rows) + " metrics rows after " + std::to_string(step) + " steps");
  if (losses > step) bad(std::to_string(losses) + " loss steps after " + std::to_string(step) + " steps");
  for (size_t g = 0; g < lambda.size(); ++g)
    if (!(std::isfinite(lambda[g]) && lambda[g] > 0))
      bad("prior precision " + std::to_string(g) + " is " + std::to_string(lambda[g]) + " (must be finite and > 0)");
  if (perm.defined()) {
    const int64_t want = chains > 1 ? chains * train_size : train_size;
    if (perm.numel() != want)
      bad("the data order has " + std::to_string(perm.numel()) + " entries for a training set of " +
          std::to_string(train_size));
    if (perm.numel() > 0) {
      const torch::Tensor p = perm.cpu().to(torch::kInt64);
      const int64_t lo = p.min().item<int64_t>(), hi = p.max().item<int64_t>();
      if (lo < 0 || hi >= train_size)
        bad("the data order holds index " + std::to_string(lo < 0 ? lo : hi) + ", outside the training set's 0.." +
            std::to_string(train_size - 1));
    }
  }
}

}  // namespace sgmcmc
