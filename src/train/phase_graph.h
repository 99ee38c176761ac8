// A per-epoch phase of a run captured as CUDA graphs (train.graph_epoch): a sample's predictions, an
// evaluation's metrics, a Gibbs step's draw. On a GPU such a phase is ~100 small ATen ops whose cost is the host's time to
// issue them (~20 µs each on the H100 machines measured: docs/performance.md), not the device's; a
// replayed graph is one launch.
//
// run(key, body): `body` queues the phase's device work and returns what the host needs of it (`Out`:
// tensors, and host bookkeeping that is the same at every call with this key). With capture on and a
// CUDA device, the first `warmup` calls with a key run `body` eagerly (StepGraph's warm-up, on a side
// stream), the next captures it, and every later call with that key replays the graph and returns the
// captured `Out`, whose tensors the replay has refreshed. Otherwise (the CPU, or capture off) every
// call runs `body`: the split of a phase into its device work and its host part is the same code
// either way, so the CPU tests check it.
//
// The key is what the captured launches depend on besides the contents of their inputs: the phase's
// branches, and the addresses of its inputs (StepGraph replays the same pointers; an input that was
// reallocated is a new key and a new capture, never a stale read). Host scalars a body passes to
// ATen ops are constants of its graph, so a body reads changing scalars from device tensors
// (PosteriorPredictive::summary with a device count). At most `max_keys` keys hold a graph; a new key
// beyond them takes the place of the least recently used one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/record_function.h>
#include <torch/torch.h>

#include "train/step_graph.h"

namespace sgmcmc {

// The profiler scope around a body that is (or, on the CPU, would be) captured: no op inside it may wait
// for the device (.item(), a copy to the host, an op whose output size depends on the data).
inline constexpr const char* kBodyScope = "sgmcmc::phase_graph_body";

template <typename Out>
class PhaseGraph {
 public:
  // `gen`: the generator a phase draws from (registered with each capture, as StepGraph does), if any.
  PhaseGraph(torch::Device device, bool capture, at::Generator gen = {}, int warmup = 1, size_t max_keys = 8)
      : device_(device), capture_(capture), gen_(std::move(gen)), warmup_(warmup), max_keys_(max_keys) {}

  Out& run(const std::vector<int64_t>& key, const std::function<Out()>& body) {
    if (!capture_) {
      RECORD_USER_SCOPE(kBodyScope);  // as a capture's: bench_epoch counts the ops a replay leaves to the host
      eager_ = body();
      return eager_;
    }
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (entries_.size() >= max_keys_) evict_least_recent();
      it = entries_.emplace(key, Entry{std::make_unique<StepGraph>(device_, gen_, warmup_), Out{}, 0}).first;
    }
    Entry& e = it->second;
    e.used = ++calls_;
    const int64_t captured = e.graph->captures(), replayed = e.graph->replays();
    e.graph->run([&] {
      RECORD_USER_SCOPE(kBodyScope);  // what a capture holds (tests/test_graph.cpp checks it reads nothing back)
      e.out = body();
    });
    captures_ += e.graph->captures() - captured;
    replays_ += e.graph->replays() - replayed;
    return e.out;
  }

  bool capture() const { return capture_; }
  // Calls that captured / replayed a graph, over every key (the CPU counts them as StepGraph does).
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }

 private:
  struct Entry {
    std::unique_ptr<StepGraph> graph;
    Out out;
    int64_t used;  // the call that used it last
  };
  // A key that stops recurring (an input reallocated) gives its place to the next one.
  void evict_least_recent() {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second.used < oldest->second.used) oldest = it;
    entries_.erase(oldest);
  }

  torch::Device device_;
  bool capture_;
  at::Generator gen_;
  int warmup_;
  size_t max_keys_;
  std::map<std::vector<int64_t>, Entry> entries_;
  int64_t calls_ = 0;
  int64_t captures_ = 0, replays_ = 0;  // over every key, evicted ones too
  Out eager_;
};

// A tensor's address as a key entry (0 for an undefined tensor).
inline int64_t address_key(const torch::Tensor& t) {
  return t.defined() ? static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(t.data_ptr())) : 0;
}

}  // namespace sgmcmc
