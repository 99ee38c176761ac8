#include "train/model_io.h"

#include <torch/serialize.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "data/tensors.h"
#include "train/checkpoint_check.h"

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace sgmcmc {

void save_model(torch::serialize::OutputArchive& ar, Model& model, const std::string& prefix) {
  for (const auto& item : model.named_parameters()) ar.write(prefix + item.key(), item.value().detach());
  for (const auto& item : model.named_buffers()) ar.write(prefix + item.key(), item.value(), /*is_buffer=*/true);
}

void load_model(torch::serialize::InputArchive& ar, Model& model, const std::string& prefix, const std::string& file) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    torch::Tensor t;
    if (!ar.try_read(prefix + item.key(), t)) throw std::invalid_argument(file + ": missing parameter " + item.key());
    if (t.sizes() != item.value().sizes())
      throw std::invalid_argument(file + ": parameter " + item.key() + " has the wrong shape");
    item.value().copy_(t);
  }
  for (auto& item : model.named_buffers()) {
    torch::Tensor t;
    if (ar.try_read(prefix + item.key(), t, /*is_buffer=*/true)) item.value().copy_(t);
  }
}

struct ParameterSnapshot::Event {
#if defined(SGMCMC_WITH_CUDA)
  // one a device the copies came from; blocking: the writer thread sleeps rather than spins while it waits
  std::vector<at::cuda::CUDAEvent> events;
#endif
};

ParameterSnapshot::ParameterSnapshot(Model& model, std::map<std::string, double> scalars) : scalars_(std::move(scalars)) {
  std::vector<c10::DeviceIndex> devices;  // the CUDA devices copied from
  const auto take = [&](const std::string& name, const torch::Tensor& t) {
    const auto v = t.detach();
#if defined(SGMCMC_WITH_CUDA)
    if (v.is_cuda()) {
      // queued on the current stream of v's device (not of the current device: a run on cuda:1), behind
      // the steps queued there
      auto host = torch::empty(v.sizes(), v.options().device(torch::kCPU).pinned_memory(true));
      host.copy_(v, /*non_blocking=*/true);
      tensors_.emplace_back(name, host);
      if (std::find(devices.begin(), devices.end(), v.device().index()) == devices.end())
        devices.push_back(v.device().index());
      return;
    }
#endif
    tensors_.emplace_back(name, v.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true));
  };
  for (const auto& item : model.named_parameters()) take(item.key(), item.value());
  for (const auto& item : model.named_buffers()) take(item.key(), item.value());
#if defined(SGMCMC_WITH_CUDA)
  if (!devices.empty()) {
    copied_ = std::make_unique<Event>();
    for (const auto d : devices) {
      copied_->events.emplace_back(cudaEventBlockingSync | cudaEventDisableTiming);
      copied_->events.back().record(c10::cuda::getCurrentCUDAStream(d));
    }
  }
#endif
}

ParameterSnapshot::~ParameterSnapshot() = default;
ParameterSnapshot::ParameterSnapshot(ParameterSnapshot&&) noexcept = default;
ParameterSnapshot& ParameterSnapshot::operator=(ParameterSnapshot&&) noexcept = default;

c10::IValue ParameterSnapshot::dict() const {
#if defined(SGMCMC_WITH_CUDA)
  if (copied_)
    for (const auto& e : copied_->events) e.synchronize();
#endif
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [name, t] : tensors_) dict.insert(name, t);
  for (const auto& [key, x] : scalars_)
    if (!dict.contains(key) && key != kChecksumKey)
      dict.insert(key, key == "step" ? c10::IValue(static_cast<int64_t>(x)) : c10::IValue(x));
  dict.insert(kChecksumKey, static_cast<int64_t>(dict_checksum(dict)));
  return c10::IValue(dict);
}

void write_parameter_file(const std::string& path, const ParameterSnapshot& snapshot) {
  write_pickle_file(path, snapshot.dict());
}

void save_parameter_file(const std::string& path, Model& model, const std::map<std::string, double>& scalars) {
  write_parameter_file(path, ParameterSnapshot(model, scalars));
}

void load_parameter_file(const std::string& path, Model& model, const torch::Device& device) {
  c10::IValue value;
  try {
    value = read_pickle_file(path);
  } catch (const std::invalid_argument&) {
    const auto not_a_dict = std::current_exception();
    torch::serialize::InputArchive ar;  // a run made before the dict format?
    try {
      ar.load_from(path, device);
    } catch (const c10::Error&) {
      std::rethrow_exception(not_a_dict);  // neither: the pickle reader's message
    }
    return load_model(ar, model, "", path);
  }
  if (!value.isGenericDict()) throw std::invalid_argument(path + ": not a parameter file (expected a dict)");
  const c10::impl::GenericDict entries = value.toGenericDict();
  // Files written by sgmcmc carry a checksum (those of earlier versions, or Python's own, may not): a
  // flipped bit is a one-line error naming the file, never a sample averaged in.
  if (entries.contains(kChecksumKey)) {
    const c10::IValue stored = entries.at(kChecksumKey);
    const uint32_t want = stored.isInt() ? static_cast<uint32_t>(stored.toInt()) : 0;
    const uint32_t got = dict_checksum(entries);
    if (!stored.isInt() || want != got) {
      char msg[96];
      std::snprintf(msg, sizeof msg, "checksum mismatch (stored %08x, contents %08x)", want, got);
      throw std::invalid_argument(path + ": corrupt parameter file: " + msg + "; delete it or restore it from a copy");
    }
  }
  std::map<std::string, torch::Tensor> dict;
  for (const auto& item : entries)
    if (item.key().isString() && item.value().isTensor()) dict[item.key().toStringRef()] = item.value().toTensor();
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    auto it = dict.find(item.key());
    if (it == dict.end()) throw std::invalid_argument(path + ": missing parameter " + item.key());
    if (it->second.sizes() != item.value().sizes())
      throw std::invalid_argument(path + ": parameter " + item.key() + " has the wrong shape");
    item.value().copy_(it->second);
  }
  for (auto& item : model.named_buffers()) {
    auto it = dict.find(item.key());
    if (it != dict.end()) item.value().copy_(it->second);
  }
}

}  // namespace sgmcmc
