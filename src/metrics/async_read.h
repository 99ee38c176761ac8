// HostReads::to_host in two halves, for a caller that has more work to queue before it needs the
// values: start() queues the copy of a float64 device vector into pinned host memory on the current
// stream and records an event behind it; values() waits for that event only, not for what was queued
// after it, and returns the doubles. The same bits as to_host(). On the CPU start() copies at once.
#pragma once

#include <memory>
#include <vector>

#include <torch/torch.h>

namespace sgmcmc {

class AsyncHostRead {
 public:
  AsyncHostRead();
  ~AsyncHostRead();
  AsyncHostRead(AsyncHostRead&&) noexcept;
  AsyncHostRead& operator=(AsyncHostRead&&) noexcept;

  // Queues the copy of `packed` (float64, any device; undefined: nothing to read).
  void start(const torch::Tensor& packed);
  // Its values, once the copy has finished (a RecordFunction scope "sgmcmc::host_read", as to_host's).
  std::vector<double> values();
  // Whether start() was given a tensor to read.
  bool started() const { return host_.defined(); }

 private:
  struct Event;  // the CUDA event of a CUDA build
  torch::Tensor host_;
  std::unique_ptr<Event> done_;
};

}  // namespace sgmcmc
