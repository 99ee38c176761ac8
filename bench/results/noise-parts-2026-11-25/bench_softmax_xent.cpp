#include <torch/torch.h>
#include "models/softmax_xent.h"
#include <chrono>
#include <cstdio>
using namespace sgmcmc;
template <class F> double best_of(F fn) { double best = 1e9; for (int r = 0; r < 3000; ++r) { auto t0 = std::chrono::steady_clock::now(); fn(); auto t1 = std::chrono::steady_clock::now(); best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count()); } return best; }
int main() {
  at::set_num_threads(2);
  torch::manual_seed(1);
  auto f = torch::randn({500, 10}) * 3; auto y = torch::randint(0, 10, {500}, torch::kInt64);
  auto g = torch::empty_like(f); auto b = torch::zeros({10});
  printf("with bias %.2f us\n", best_of([&]{ softmax_xent_backward(f, y, 50.0, g, b); }));
  printf("no bias   %.2f us\n", best_of([&]{ softmax_xent_backward(f, y, 50.0, g, torch::Tensor()); }));
  printf("torch::full alone %.2f us\n", best_of([&]{ auto t = torch::full({}, 3.0, f.options()); }));
  printf("parallel_for 1 task %.2f us\n", best_of([&]{ at::parallel_for(0, 1, 1, [&](int64_t, int64_t){}); }));
}
