#include "train/step_graph.h"

#include <stdexcept>

#include "compat.h"

#if defined(SGMCMC_WITH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace sgmcmc {

struct StepGraph::Cuda {
#if defined(SGMCMC_WITH_CUDA)
  explicit Cuda(torch::Device device) : side(c10::cuda::getStreamFromPool(false, device.index())) {}
  c10::cuda::CUDAStream side;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
#endif
};

StepGraph::StepGraph(torch::Device device, at::Generator generator, int warmup)
    : device_(device), generator_(std::move(generator)), warmup_(warmup) {
  if (warmup < 0) throw std::invalid_argument("StepGraph: warmup must be >= 0");
  if (device.is_cuda()) {
#if defined(SGMCMC_WITH_CUDA)
    if (device_.index() < 0) device_ = torch::Device(torch::kCUDA, c10::cuda::current_device());
    cuda_ = std::make_unique<Cuda>(device_);
#else
    throw std::invalid_argument("train.graph: a CUDA device needs a build with -DSGMCMC_CUDA=ON");
#endif
  }
}

StepGraph::~StepGraph() = default;

void StepGraph::invalidate() {
  captured_ = false;
#if defined(SGMCMC_WITH_CUDA)
  if (cuda_) cuda_->graph.reset();
#endif
}

void StepGraph::run(const std::function<void()>& body, const std::vector<int>& key) {
  if (captured_ && key != key_) invalidate();
  key_ = key;
  const bool warm = warmups_ < warmup_;
  if (!cuda_) {
    if (warm) {
      ++warmups_;
    } else if (!captured_) {
      captured_ = true;
      ++captures_;
      ++replays_;
    } else {
      ++replays_;
    }
    body();
    return;
  }
#if defined(SGMCMC_WITH_CUDA)
  const c10::cuda::CUDAGuard device_guard(device_);
  if (warm || !captured_) {
    // Warm-up and capture run on a side stream, ordered after all work queued on the current stream
    // (the step's uploads) and before anything queued on it afterwards.
    auto main = c10::cuda::getCurrentCUDAStream(device_.index());
    at::cuda::CUDAEvent queued;
    queued.record(main);
    queued.block(cuda_->side);
    {
      const c10::cuda::CUDAStreamGuard stream_guard(cuda_->side);
      if (warm) {
        body();
      } else {
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        if (generator_.defined()) compat::register_graph_generator(*graph, generator_);
        graph->capture_begin();
        body();
        graph->capture_end();
        cuda_->graph = std::move(graph);
      }
    }
    at::cuda::CUDAEvent done;
    done.record(cuda_->side);
    done.block(main);
    if (warm) {
      ++warmups_;
      return;
    }
    captured_ = true;
    ++captures_;
  }
  cuda_->graph->replay();
  ++replays_;
#endif
}

}  // namespace sgmcmc
