// The tiled backward launch (kernels/weight_grad.h) with the sampler's update in its epilogue. CUDA sources
// only.
#pragma once

#include "kernels/pass_update_cuda.h"
#include "kernels/weight_grad.h"

namespace sgmcmc::kernels {

// weight_grad_cuda(t), and each element of θ and the sampler's state whose gradient the launch finishes
// updated by the thread that wrote that gradient, with the normal the sampler's own kernel would draw for it
// (update_element). `up` must cover θ exactly with the launch's gradients (pass_update_of's checks, the
// caller's: every layer's ∇W and ∇b a problem's); rule < 0: no update. T: float or double, t's dtype.
template <typename T>
bool weight_grad_cuda_with_update(const WeightGradLaunch& t, const PassUpdate<T>& up);

}  // namespace sgmcmc::kernels
