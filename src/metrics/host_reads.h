// Scalars computed on the device and read back together: one device-to-host copy (one
// synchronisation on a GPU) for a whole row of metrics, where `.item()` per value waits for the
// device once per value (an evaluation of App. H.1 reads ~22 values). The values
// are the same bits as `.item<double>()` of each would give: float64 scalars are copied, not
// converted.
#pragma once

#include <cstddef>
#include <vector>

#include <ATen/record_function.h>
#include <torch/torch.h>

namespace sgmcmc {

class HostReads {
 public:
  // Queues a one-element tensor of any float dtype; returns its index in read()'s result.
  size_t add(const torch::Tensor& scalar) {
    values_.push_back(scalar.to(torch::kFloat64).reshape({1}));
    return size_++;
  }
  // Queues every element of `t` (any shape, any float dtype, flattened in order); returns the index
  // of its first element in read()'s result.
  size_t add_all(const torch::Tensor& t) {
    const size_t first = size();
    values_.push_back(t.to(torch::kFloat64).reshape({-1}));
    size_ += static_cast<size_t>(t.numel());
    return first;
  }
  size_t size() const { return size_; }
  // Every queued value, in order of add(), as doubles (one copy to the host).
  std::vector<double> read() const { return to_host(packed()); }
  // The device half of read(): every queued value in one float64 vector on their device (undefined
  // when nothing is queued), what a captured phase leaves for to_host() after each replay.
  torch::Tensor packed() const { return values_.empty() ? torch::Tensor() : torch::cat(values_); }
  // The host half: `packed`'s values as doubles (one copy to the host; empty for an undefined tensor).
  static std::vector<double> to_host(const torch::Tensor& packed) {
    if (!packed.defined()) return {};
    RECORD_USER_SCOPE("sgmcmc::host_read");  // counted by bench/bench_epoch.cpp
    const auto host = packed.cpu().contiguous();
    const double* p = host.data_ptr<double>();
    return std::vector<double>(p, p + host.numel());
  }

 private:
  std::vector<torch::Tensor> values_;
  size_t size_ = 0;  // queued elements
};

}  // namespace sgmcmc
