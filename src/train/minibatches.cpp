#include "train/minibatches.h"

#include <stdexcept>
#include <vector>

namespace sgmcmc {

MinibatchStream::MinibatchStream(int64_t train_size, int64_t batch_size, int64_t chains, torch::Device device,
                                 at::Generator gen)
    : n_total_(train_size),
      n_(batch_size),
      chains_(chains),
      steps_per_epoch_(train_size / batch_size),
      device_(device),
      gen_(std::move(gen)) {}

void MinibatchStream::draw_if_epoch_starts() {
  if (pos_ != 0) return;
  if (chains_ == 1)
    perm_ = at::randperm(n_total_, gen_, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  else  // one independent permutation per chain, [C, N]
    perm_ = at::rand({chains_, n_total_}, gen_, torch::TensorOptions().dtype(torch::kFloat64).device(device_))
                .argsort(/*dim=*/static_cast<int64_t>(1), /*descending=*/false);
}

torch::Tensor MinibatchStream::next() {
  draw_if_epoch_starts();
  auto idx = chains_ == 1 ? perm_.slice(0, pos_ * n_, pos_ * n_ + n_) : perm_.narrow(1, pos_ * n_, n_).reshape({-1});
  if (++pos_ == steps_per_epoch_) pos_ = 0;
  return idx;
}

torch::Tensor MinibatchStream::next_block(int64_t k) {
  if (k < 1) throw std::invalid_argument("MinibatchStream::next_block: k must be >= 1");
  if (chains_ == 1 && pos_ + k <= steps_per_epoch_) {
    draw_if_epoch_starts();
    auto idx = perm_.slice(0, pos_ * n_, (pos_ + k) * n_);
    pos_ = (pos_ + k) % steps_per_epoch_;
    return idx;
  }
  std::vector<torch::Tensor> parts;
  parts.reserve(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) parts.push_back(next());
  return k == 1 ? parts.front() : torch::cat(parts);
}

void MinibatchStream::save(torch::serialize::OutputArchive& ar) const {
  if (perm_.defined()) ar.write("perm", perm_, true);
}

void MinibatchStream::load(torch::serialize::InputArchive& ar, int64_t position, const std::string& file) {
  pos_ = position;
  torch::Tensor p;
  if (ar.try_read("perm", p, true)) perm_ = p.to(device_);
  if (pos_ != 0 && !perm_.defined()) throw std::invalid_argument(file + ": checkpoint lacks the data order");
}

}  // namespace sgmcmc
