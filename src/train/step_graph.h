// Whole-step capture and replay (train.graph).
//
// run(body) executes one training step's device work: `body` is the step after its host part, i.e.
// zero_grad, forward and backward from static input buffers, the prior's gradient, the sampler's
// prepared launches (Sampler::launch_prepared) and the loss accumulation. The host part (the batch's
// indices copied into a static buffer, the sampler's kPrepare step writing the step's scalars) runs
// before each call, outside.
//
//  CUDA: the first `warmup` calls run `body` eagerly on a side stream (cuBLAS handles, the autograd
//  engine and the caching allocator settle, as PyTorch's graph capture requires); the next call
//  captures `body` into an at::cuda::CUDAGraph (the generator, when one is given, registered, so each
//  replay draws at fresh Philox offsets) and replays it; every later call replays it: one graph launch per
//  step and no host synchronisation.
//  CPU: `body` is called every time (nothing to capture); warm-up, capture and recapture are counted
//  the same way, so the host/device split of a step is exercised by the CPU tests.
//
// `key` names what the captured launches depend on besides their buffers (the sampler's fused rules,
// Sampler::prepared_rules()); a call with another key than the captured graph's captures again,
// without a warm-up. invalidate() drops the graph outright.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace sgmcmc {

class StepGraph {
 public:
  StepGraph(torch::Device device, at::Generator generator, int warmup = 3);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  void run(const std::function<void()>& body, const std::vector<int>& key = {});
  void invalidate();

  int64_t warmups() const { return warmups_; }
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }

 private:
  struct Cuda;
  torch::Device device_;
  at::Generator generator_;
  int warmup_;
  bool captured_ = false;
  std::vector<int> key_;
  int64_t warmups_ = 0, captures_ = 0, replays_ = 0;
  std::unique_ptr<Cuda> cuda_;
};

}  // namespace sgmcmc
