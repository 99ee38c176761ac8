// The collectives the trainer needs across processes, without c10d's types: the trainer sees this
// interface; c10d_communicator.cpp implements it over c10d's ProcessGroupGloo / ProcessGroupNCCL,
// and a single process gets LocalCommunicator (every collective is the identity). Every rank must make the same calls in
// the same order (collectives are matched by order, not by name).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace sgmcmc {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual int local_rank() const { return rank(); }
  bool distributed() const { return world_size() > 1; }

  // Σ over ranks, in place, of each tensor (same shapes, dtypes and device types on every rank).
  // The tensors of one dtype and device travel as one buffer; every rank receives the same bits.
  virtual void all_reduce_sum(std::vector<torch::Tensor>& tensors) = 0;
  // Every rank's `t` (same shape everywhere), in rank order.
  virtual std::vector<torch::Tensor> all_gather(const torch::Tensor& t) = 0;
  // `t` of rank `root` into `t` of every rank.
  virtual void broadcast(torch::Tensor& t, int root) = 0;
  virtual void barrier() = 0;
};

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void all_reduce_sum(std::vector<torch::Tensor>&) override {}
  std::vector<torch::Tensor> all_gather(const torch::Tensor& t) override { return {t}; }
  void broadcast(torch::Tensor&, int) override {}
  void barrier() override {}
};

using CommunicatorPtr = std::shared_ptr<Communicator>;

}  // namespace sgmcmc
