#include "train/divergence_guard.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "core/signals.h"
#include "samplers/registry.h"

namespace sgmcmc {

std::string divergence_hint(const std::string& sampler, const OptionMap& options) {
  // The sampler's own hint (SamplerTraits::divergence_hint), its "{key}"s filled from the options.
  for (const auto& e : sampler_registry())
    if (e.name == sampler) return divergence_hint(e, options);
  return SamplerTraits().divergence_hint;
}

DivergenceGuard::DivergenceGuard(std::string sampler, const OptionMap& options, std::vector<torch::Tensor> params,
                                 bool check_every_step, std::string checkpoint_file, Report report)
    : sampler_(std::move(sampler)),
      options_(options),
      params_(std::move(params)),
      check_every_step_(check_every_step),
      checkpoint_file_(std::move(checkpoint_file)),
      report_(std::move(report)) {}

void DivergenceGuard::check_step_loss(int64_t step, const torch::Tensor& batch_nll, double lr) {
  if (!check_every_step_ || std::isfinite(batch_nll.item<double>())) return;
  // Step 1's loss is the model's at its initial parameters, before any update: the step size plays no
  // part in it, so "lower sampler.lr" would send the user the wrong way.
  if (step == 1)
    diverge(step, lr, "non-finite loss at the initial parameters, before any update",
            "the model's output or the data hold NaN or infinity (the step size is not the cause): check the "
            "model's forward and the data's values");
  diverge(step, lr, "non-finite loss");
}

torch::Tensor DivergenceGuard::state_sum(int64_t step) const {
  if (!state_due(step)) return {};
  torch::NoGradGuard no_grad;
  // Σ 0·θ over every parameter: 0 when all are finite, NaN when any is NaN or ±∞ (0·∞ = NaN), and
  // never an overflow (every term is 0 or NaN). The parameters go in flat chunks of up to 2^24
  // elements (one for any model up to 16M parameters: three device ops), which bound the temporary
  // copy; isfinite(θ).all() would be five ops per parameter.
  constexpr int64_t kChunk = int64_t{1} << 24;
  std::vector<torch::Tensor> sums, chunk;
  int64_t in_chunk = 0;
  auto flush = [&] {
    if (chunk.empty()) return;
    sums.push_back((chunk.size() == 1 ? chunk[0].mul(0) : torch::cat(chunk).mul_(0)).sum());
    chunk.clear();
    in_chunk = 0;
  };
  for (const auto& p : params_) {
    if (!p.is_floating_point()) continue;
    if (in_chunk > 0 && in_chunk + p.numel() > kChunk) flush();
    chunk.push_back(p.detach().reshape({-1}));
    in_chunk += p.numel();
  }
  flush();
  if (sums.empty()) return torch::zeros({}, torch::kFloat64);
  return sums.size() == 1 ? sums[0] : torch::stack(sums).sum();
}

void DivergenceGuard::resolve_state(int64_t step, double lr, double state_sum) {
  if (std::isnan(state_sum)) diverge(step, lr, "non-finite parameters");
  checked_step_ = step;
}

void DivergenceGuard::check_state(int64_t step, double lr, bool loss_finite) {
  if (const auto sum = state_sum(step); sum.defined()) resolve_state(step, lr, sum.item<double>());  // a device sync
  if (!loss_finite) diverge(step, lr, "non-finite loss");
}

void DivergenceGuard::diverge(int64_t step, double lr, const std::string& what, const std::string& hint) {
  std::ostringstream m;
  m << "run diverged at step " << step << " (" << sampler_ << ", lr " << lr << "): " << what << "; "
    << (hint.empty() ? divergence_hint(sampler_, options_) : hint);
  if (last_checkpoint_ >= 0)
    m << " (last good checkpoint, step " << last_checkpoint_ << ", kept in " << checkpoint_file_ << ")";
  report_(step, what);
  throw RunDiverged(m.str());
}

bool DivergenceGuard::is_numeric_error(const std::string& message) {
  const std::string m = message.substr(0, message.find('\n'));
  for (const char* needle : {"overflow", "non-finite", "not finite", " nan", "NaN", " inf ", "infinity", "Infinity"})
    if (m.find(needle) != std::string::npos) return true;
  return false;
}

void DivergenceGuard::diverge_on_error(int64_t step, double lr, const std::exception& error) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&error);
  const std::string m = c10_error ? c10_error->what_without_backtrace() : error.what();
  if (dynamic_cast<const RunDiverged*>(&error) || dynamic_cast<const RunInterrupted*>(&error) || !is_numeric_error(m))
    throw;  // the exception being handled, unchanged
  diverge(step, lr, "non-finite values (" + m.substr(0, m.find('\n')) + ")");
}

}  // namespace sgmcmc
