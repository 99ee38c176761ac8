// A model's parameters and buffers in files:
//  - torch archives (checkpoint.pt, "model." prefix): save_model / load_model;
//  - parameter files Python opens (samples/sample_NNNNNN.pt, final.pt): a dict written by
//    torch::pickle_save, which Python's torch.load returns as
//        {parameter or buffer name: Tensor (CPU), "step": int, "lambda.<group>": float, ...}
//    (the names are the model's: fc1.weight, ..., or a TorchScript module's own, so
//    `module.load_state_dict({k: v for k, v in d.items() if k in module.state_dict()})` works).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "models/model.h"

namespace sgmcmc {

void save_model(torch::serialize::OutputArchive& ar, Model& model, const std::string& prefix);
// Copies every parameter (required, same shape; std::invalid_argument naming `file` otherwise) and
// every buffer present into `model`.
void load_model(torch::serialize::InputArchive& ar, Model& model, const std::string& prefix, const std::string& file);

// The dict above taken at one point of a run: host copies of the model's parameters and buffers and the
// scalars. On a GPU the copies go into pinned memory, queued on the current stream behind the steps so
// far, and the snapshot waits for them (an event, not the device) when it is written; on the CPU they are
// copies at once. So it may be written on another thread while later steps change the model
// (ParameterFileWriter).
class ParameterSnapshot {
 public:
  ParameterSnapshot(Model& model, std::map<std::string, double> scalars);
  ~ParameterSnapshot();
  ParameterSnapshot(ParameterSnapshot&&) noexcept;
  ParameterSnapshot& operator=(ParameterSnapshot&&) noexcept;
  // The dict (after the copies have landed).
  c10::IValue dict() const;

 private:
  struct Event;  // the copies' CUDA event in a CUDA build
  std::vector<std::pair<std::string, torch::Tensor>> tensors_;
  std::map<std::string, double> scalars_;
  std::unique_ptr<Event> copied_;
};

// Writes the dict above to `path` (atomically): the model's tensors, then `scalars` (names not
// already taken by a tensor).
void save_parameter_file(const std::string& path, Model& model, const std::map<std::string, double>& scalars);
void write_parameter_file(const std::string& path, const ParameterSnapshot& snapshot);
// Reads a parameter file into `model` (every parameter required, same shape; buffers when present).
// Files of runs made before the dict format (torch archives) are read as such.
void load_parameter_file(const std::string& path, Model& model, const torch::Device& device);

}  // namespace sgmcmc
