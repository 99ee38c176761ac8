// The order in which training examples are visited: a fresh permutation of the training set at
// the start of every epoch (one per chain with parallel chains), drawn from the run's device
// generator, cut into minibatches of n; the remainder of an epoch is dropped.
#pragma once

#include <cstdint>
#include <string>

#include <torch/torch.h>

namespace sgmcmc {

class MinibatchStream {
 public:
  MinibatchStream(int64_t train_size, int64_t batch_size, int64_t chains, torch::Device device, at::Generator gen);

  // Indices of the next minibatch: [n], or [C·n] chain-major with C chains.
  torch::Tensor next();
  // The next k minibatches' indices one after the other ([k·n] or [k·C·n]): next() k times,
  // concatenated; one chain's block inside one epoch is a view of the permutation (no copy).
  torch::Tensor next_block(int64_t k);
  // Position in the current epoch (0 = a new permutation is drawn by the next call).
  int64_t position() const { return pos_; }

  // Checkpoint entry "perm" (the position is the caller's: the run's counters).
  void save(torch::serialize::OutputArchive& ar) const;
  void load(torch::serialize::InputArchive& ar, int64_t position, const std::string& file);

 private:
  int64_t n_total_, n_, chains_, steps_per_epoch_;
  torch::Device device_;
  at::Generator gen_;
  void draw_if_epoch_starts();  // a fresh permutation when the position is 0
  torch::Tensor perm_;
  int64_t pos_ = 0;
};

}  // namespace sgmcmc
