#include "data/tensors.h"

#include "data/labels.h"

#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "data/splits.h"
#include "core/atomic_file.h"
#include "core/error_text.h"

namespace sgmcmc {
namespace {

class TensorFile {
 public:
  TensorFile(std::string path, std::map<std::string, torch::Tensor> dict) : path_(std::move(path)), dict_(std::move(dict)) {}
  bool has(const std::string& key) const { return dict_.count(key) > 0; }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::invalid_argument(path_ + ": " + key + ": " + what);
  }
  const torch::Tensor& get(const std::string& key) const {
    auto it = dict_.find(key);
    if (it == dict_.end()) fail(key, "missing (expected x_train, y_train, x_test, y_test, optionally x_val, y_val)");
    return it->second;
  }
  torch::Tensor inputs(const std::string& key) const {
    const auto& x = get(key);
    if (!x.is_floating_point()) fail(key, "expected a floating-point tensor, got " + std::string(c10::toString(x.scalar_type())));
    if (x.dim() < 2) fail(key, "expected [n, ...] with at least 2 dimensions, got shape " + shape_text(x));
    if (!torch::isfinite(x).all().item<bool>()) fail(key, "has non-finite values");
    return x.to(torch::kFloat32).contiguous();
  }
  torch::Tensor targets(const std::string& key, Task task) const {
    auto y = get(key);
    if (task == Task::kClassification) {
      if (y.is_floating_point() || y.scalar_type() == torch::kBool)
        fail(key, "classification needs integer class labels, got " + std::string(c10::toString(y.scalar_type())) +
                      " (data.task: regression for real-valued targets)");
      if (y.dim() != 1) fail(key, "expected labels of shape [n], got " + shape_text(y));
      y = y.to(torch::kInt64);
      if (y.numel() && y.min().item<int64_t>() < 0) fail(key, "has a negative label");
      return y.contiguous();
    }
    if (!y.is_floating_point())
      fail(key, "regression needs floating-point targets, got " + std::string(c10::toString(y.scalar_type())));
    if (!(y.dim() == 1 || (y.dim() == 2 && y.size(1) == 1))) fail(key, "expected [n] or [n, 1], got " + shape_text(y));
    if (!torch::isfinite(y).all().item<bool>()) fail(key, "has non-finite values");
    return y.reshape({y.size(0)}).to(torch::kFloat32).contiguous();
  }
  Batch split(const std::string& x_key, const std::string& y_key, Task task, bool targets_required = true) const {
    Batch b{inputs(x_key), {}};
    if (!targets_required && !has(y_key)) return b;
    b.targets = targets(y_key, task);
    if (b.inputs.size(0) != b.targets.size(0))
      fail(y_key, std::to_string(b.targets.size(0)) + " targets for " + std::to_string(b.inputs.size(0)) + " inputs in " +
                      x_key);
    return b;
  }
  Batch split(const std::string& name, Task task) const { return split("x_" + name, "y_" + name, task); }

 private:
  std::string path_;
  std::map<std::string, torch::Tensor> dict_;
};

std::string description(const std::string& path, const Dataset& ds) {
  std::string d = std::filesystem::path(path).filename().string() + " (tensors): " + std::to_string(ds.train.size()) +
                  " train / " + std::to_string(ds.val.size()) + " val / " + std::to_string(ds.test.size()) + " test, " +
                  std::to_string(ds.dims.at("features")) + " features";
  if (ds.task == Task::kClassification) d += ", " + std::to_string(ds.num_classes) + " classes";
  return d;
}

}  // namespace

std::vector<OptionDoc> tensors_option_docs() {
  return {
      {"path", "text", "(required)", "a dict of tensors saved by torch.save (docs/python.md)", {}, ""},
      {"task", "choice", "classification", "classification | regression", {"classification", "regression"}, ""},
  };
}

TensorsOptions parse_tensors_options(const OptionMap& o) {
  const std::string where = o.context().empty() ? "data" : o.context();
  TensorsOptions t;
  t.path = o.get_string("path", "");
  if (t.path.empty()) throw std::invalid_argument(where + ".path: required for data.format: tensors (a torch.save file)");
  t.task = o.get_choice("task", tensors_option_docs()[1].default_text, {"classification", "regression"}) == "regression"
               ? Task::kRegression : Task::kClassification;
  return t;
}

c10::IValue read_pickle_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open the file");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue v;
  try {
    v = torch::pickle_load(bytes);
  } catch (const c10::Error& e) {
    const std::string what = first_line(e.what_without_backtrace());
    if (what.find("Unknown opcode") != std::string::npos && what.find("0x73") != std::string::npos)
      throw std::invalid_argument(path + ": a dict with a single entry is written with a pickle opcode (SETITEM) that "
                                         "LibTorch 1.13 cannot read; save at least two entries (e.g. {\"x\": X, \"y\": y}, or "
                                         "{\"x\": X, \"n\": torch.tensor(len(X))}: other keys are ignored)");
    throw std::invalid_argument(path + ": not a file of torch.save (" + what + ")");
  }
  return v;
}

std::map<std::string, torch::Tensor> read_tensor_dict(const std::string& path) {
  const c10::IValue v = read_pickle_file(path);
  if (!v.isGenericDict()) throw std::invalid_argument(path + ": expected a dict of tensors (torch.save({...}, path)), got " + v.tagKind());
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : v.toGenericDict()) {
    if (!item.key().isString()) throw std::invalid_argument(path + ": dict keys must be strings");
    const std::string key = item.key().toStringRef();
    if (!item.value().isTensor()) continue;  // other entries (numbers, strings) are ignored
    out[key] = item.value().toTensor();
  }
  return out;
}

Batch read_tensor_split(const std::map<std::string, torch::Tensor>& dict, const std::string& path,
                        const std::string& x_key, const std::string& y_key, Task task, bool targets_required) {
  return TensorFile(path, dict).split(x_key, y_key, task, targets_required);
}

void write_pickle_file(const std::string& path, const c10::IValue& value) {
  const std::vector<char> bytes = torch::pickle_save(value);
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

Dataset load_tensors_dataset(const TensorsOptions& o, int64_t val_size, uint64_t seed, const std::string& where) {
  if (!std::filesystem::is_regular_file(o.path)) throw std::invalid_argument(where + ".path: '" + o.path + "': no such file");
  const TensorFile f(o.path, read_tensor_dict(o.path));
  Dataset ds;
  ds.task = o.task;
  ds.train = f.split("train", o.task);
  ds.test = f.split("test", o.task);
  if (f.has("x_val") || f.has("y_val")) {
    ds.val = f.split("val", o.task);
  } else {
    // val_size < 0 (auto): a sixth of the training split
    auto [tr, val] = split_validation(ds.train, val_size >= 0 ? val_size : ds.train.size() / 6, seed, where + ".val_size");
    ds.train = tr;
    ds.val = val;
  }
  const auto trailing = ds.train.inputs.sizes().slice(1);
  for (const auto& [key, b] : {std::pair<const char*, const Batch*>{"x_test", &ds.test}, {"x_val", &ds.val}})
    if (b->size() > 0 && b->inputs.sizes().slice(1) != trailing)
      f.fail(key, "shape " + shape_text(b->inputs) + " does not match x_train's " + shape_text(ds.train.inputs));
  if (ds.train.size() == 0) f.fail("x_train", "is empty");
  int64_t features = 1;
  for (auto d : trailing) features *= d;
  ds.dims["features"] = features;
  if (trailing.size() == 3) {
    ds.dims["channels"] = trailing[0];
    ds.dims["height"] = trailing[1];
    ds.dims["width"] = trailing[2];
  }
  if (o.task == Task::kClassification) {
    // The training labels decide the class count; the other splits' labels must be among them (data/labels.h).
    ds.num_classes = class_count(ds.train.targets, o.path + ": y_train");
    check_labels(ds.val.targets, ds.num_classes, o.path + (f.has("y_val") ? ": y_val" : ": y_train"));
    check_labels(ds.test.targets, ds.num_classes, o.path + ": y_test");
    ds.dims["classes"] = ds.num_classes;
  }
  ds.description = description(o.path, ds);
  return ds;
}

}  // namespace sgmcmc
