#include "data/ood.h"

#include <algorithm>
#include <stdexcept>

#include "compat.h"
#include "data/idx.h"

namespace sgmcmc {
namespace {

// Examples of `b` whose label is (keep = false: is not) in `held`, labels renumbered by `map`.
Batch select(const Batch& b, const torch::Tensor& held_mask_of_label, bool keep_held, const torch::Tensor& map) {
  if (b.size() == 0) return b;
  auto is_held = held_mask_of_label.index_select(0, b.targets);
  auto idx = torch::nonzero(keep_held ? is_held : is_held.logical_not()).flatten();
  Batch out{b.inputs.index_select(0, idx), b.targets.index_select(0, idx)};
  if (!keep_held) out.targets = map.index_select(0, out.targets);
  return out;
}

void hold_out_classes(Dataset& ds, const std::vector<int64_t>& classes, const std::string& where) {
  if (classes.empty()) throw std::invalid_argument(where + ".ood_classes: needed for ood: classes (e.g. [5, 6, 7, 8, 9])");
  auto held = torch::zeros({ds.num_classes}, torch::kBool);
  for (int64_t c : classes) {
    if (c < 0 || c >= ds.num_classes)
      throw std::invalid_argument(where + ".ood_classes: class " + std::to_string(c) + " is not in 0.." +
                                  std::to_string(ds.num_classes - 1));
    held[c] = true;
  }
  const int64_t kept = ds.num_classes - held.sum().item<int64_t>();
  if (kept < 2) throw std::invalid_argument(where + ".ood_classes: at least two classes must remain");
  auto map = torch::zeros({ds.num_classes}, torch::kInt64);
  for (int64_t k = 0, next = 0; k < ds.num_classes; ++k)
    if (!held[k].item<bool>()) map[k] = next++;
  ds.ood = select(ds.test, held, true, map);
  ds.train = select(ds.train, held, false, map);
  ds.val = select(ds.val, held, false, map);
  ds.test = select(ds.test, held, false, map);
  ds.num_classes = kept;
  ds.dims["classes"] = kept;
}

torch::Tensor other_idx(const OodOptions& o, const Dataset& ds, const std::string& where) {
  if (o.dir.empty()) throw std::invalid_argument(where + ".ood_dir: needed for ood: idx");
  auto im = read_idx_images(find_idx_file(o.dir, "t10k-images-idx3-ubyte"), find_idx_file(o.dir, "t10k-labels-idx1-ubyte"));
  auto x = im.images.unsqueeze(1).to(torch::kFloat32);
  if (o.normalize) x.div_(255.0);
  if (x.sizes().slice(1) != ds.test.inputs.sizes().slice(1))
    throw std::invalid_argument(where + ".ood_dir: images of shape " + c10::str(x.sizes().slice(1)) +
                                " do not match the data set's " + c10::str(ds.test.inputs.sizes().slice(1)));
  return x;
}

}  // namespace

const std::vector<std::string>& ood_kinds() {
  static const std::vector<std::string> kinds = {"none", "classes", "noise", "invert", "rotate", "idx"};
  return kinds;
}

void apply_ood(Dataset& ds, const OodOptions& o, uint64_t seed, const std::string& where) {
  if (o.kind == "none") return;
  if (ds.task != Task::kClassification)
    throw std::invalid_argument(where + ".ood: out-of-distribution sets are for classification data sets");
  const auto& x = ds.test.inputs;
  torch::Tensor ood;
  if (o.kind == "classes") {
    hold_out_classes(ds, o.classes, where);
  } else if (o.kind == "noise") {
    auto gen = compat::make_generator(torch::kCPU, seed * 7919 + 17);
    ood = x + at::randn(x.sizes(), gen, x.options()) * ds.train.inputs.std().item<double>();
  } else if (o.kind == "invert") {
    ood = ds.train.inputs.min() + ds.train.inputs.max() - x;
  } else if (o.kind == "rotate") {
    if (x.dim() < 3 || x.size(-1) != x.size(-2))
      throw std::invalid_argument(where + ".ood: rotate needs square inputs [n, ..., h, w], got " + c10::str(x.sizes()));
    ood = torch::rot90(x, 1, {x.dim() - 2, x.dim() - 1}).contiguous();
  } else if (o.kind == "idx") {
    ood = other_idx(o, ds, where);
  } else {
    throw std::invalid_argument(where + ".ood: unknown kind '" + o.kind + "'");
  }
  if (o.kind != "classes") ds.ood = Batch{ood, torch::zeros({ood.size(0)}, torch::kInt64)};
  if (o.kind == "classes") {
    std::string held;
    for (int64_t c : o.classes) held += (held.empty() ? "" : ",") + std::to_string(c);
    ds.description += "; classes " + held + " held out: " + std::to_string(ds.train.size()) + " train / " +
                      std::to_string(ds.val.size()) + " val / " + std::to_string(ds.test.size()) + " test, " +
                      std::to_string(ds.num_classes) + " classes";
  }
  ds.description += "; ood " + o.kind + ": " + std::to_string(ds.ood.size());
}

}  // namespace sgmcmc
