#include "train/run_setup.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <stdexcept>

#include "compat.h"
#include "data/load.h"

namespace sgmcmc {
namespace {

// Prefixes a plug-in's message (sampler / schedule options) with the config file when it lacks it.
[[noreturn]] void rethrow_with_source(const std::invalid_argument& e, const std::string& source) {
  std::string what = e.what();
  if (what.rfind(source, 0) == 0) throw e;
  throw std::invalid_argument(source + ": " + what);
}

template <typename F>
auto with_source(const std::string& source, F&& f) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    rethrow_with_source(e, source);
  }
}

}  // namespace

void jitter_parameters(Model& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = compat::make_generator(torch::kCPU, seed * 2 + 11);
  for (auto& p : model.parameters()) {
    if (!p.is_floating_point() || p.numel() == 0) continue;
    const double rms = p.detach().to(torch::kFloat64).pow(2).mean().sqrt().item<double>();
    const double scale = kChainJitter * (rms > 0 ? rms : 1.0);
    p.add_(at::normal(0.0, scale, p.sizes(), gen).to(p.options()));
  }
}

bool resolve_train_graph(const TrainConfig& train, const torch::Device& device, bool capturable,
                         bool model_capturable, bool data_parallel) {
  if (!train.graph_auto) return train.graph;
  return device.is_cuda() && capturable && model_capturable && !data_parallel;
}

bool resolve_graph_epoch(const TrainConfig& train, bool step_graph) {
  return train.graph_epoch_auto ? step_graph : train.graph_epoch;
}

namespace {

// The sampler of the config, and whether its step is captured as a graph (train.graph resolved).
SamplerPtr make_checked_sampler(RunSetup& s, bool& graph) {
  const ExperimentConfig& cfg = s.config;
  SamplerPtr sampler = with_source(cfg.source, [&] {
    return make_sampler(cfg.sampler_name(), {ParamGroup(s.params)}, cfg.sampler, s.gen_dev);
  });
  sampler->set_fused(cfg.train.fused);
  graph = resolve_train_graph(cfg.train, s.dm.device, sampler->graph_capturable(),
                              cfg.model.get_string("name", "") != "torchscript" && s.dm.model->chains() <= 1,
                              cfg.distributed.data_parallel());
  if (graph)  // a sampler that cannot be captured is refused here, before anything is written
    with_source(cfg.source, [&] {
      sampler->set_step_mode(Sampler::StepMode::kPrepare);
      return 0;
    });
  if (s.dm.model->chains() > 1 && !find_sampler(cfg.sampler_name(), cfg.sampler).chains)
    throw std::invalid_argument(cfg.source + ": chains: " + chains_refusal(cfg.sampler_name()));
  return sampler;
}

}  // namespace

DataAndModel load_data_and_model(const ExperimentConfig& config, const RunPlace& place) {
  DataAndModel dm;
  dm.device = torch::Device(place.device.empty() ? config.device : place.device);
  if (dm.device.is_cuda() && !compat::cuda_available())
    throw std::invalid_argument(config.source + ": device: cuda requested but no CUDA device is available");
  // The device's context (and its allocator's first block) is created on another thread while this one
  // reads and decodes the data: both take a few hundred milliseconds of a GPU run's start-up.
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  std::future<double> device_ready;
  if (dm.device.is_cuda())
    device_ready = std::async(std::launch::async, [d = dm.device, since] {
      const auto t = Clock::now();
      (void)torch::empty({1}, torch::TensorOptions().device(d));
      return since(t);
    });
  auto t = Clock::now();
  Dataset cpu = load_dataset(config.data, config.seed);
  dm.seconds["data"] = since(t);
  t = Clock::now();
  dm.seconds["context"] = device_ready.valid() ? device_ready.get() : 0.0;
  dm.seconds["device_wait"] = since(t);
  t = Clock::now();
  if (cpu.train.size() == 0) throw std::invalid_argument(config.source + ": data: the training set is empty");
  dm.model = with_source(config.source, [&] { return make_model(config.model, cpu, place.chain_seed.value_or(config.seed), config.chains); });
  if (!dm.model->share_minibatch(config.train.chain_minibatch_shared))
    throw std::invalid_argument(config.source + ": train.chain_minibatch: shared is not available for this model");
  if (place.chain_seed && *place.chain_seed != config.seed && config.model.get_string("name", "") == "torchscript")
    jitter_parameters(*dm.model, *place.chain_seed);
  dm.model->to(dm.device);
  dm.data = cpu.to(dm.device);
  dm.seconds["model"] = since(t);
  return dm;
}

RunSetup make_run_setup(const ExperimentConfig& config, const RunPlace& place) {
  RunSetup s;
  s.config = config;
  const ExperimentConfig& cfg = s.config;
  const uint64_t seed = place.chain_seed.value_or(cfg.seed);
  s.dm = load_data_and_model(cfg, {place.device, seed});
  s.gen_dev = compat::make_generator(s.dm.device, seed * 2 + 1);
  s.gen_cpu = compat::make_generator(torch::kCPU, seed * 2 + 2);
  for (const auto& p : s.dm.model->parameters()) s.params.push_back(p);
  bool graph = false;
  s.sampler = make_checked_sampler(s, graph);
  const bool is_sampler = s.sampler->is_sampler();
  auto groups = with_source(cfg.source, [&] {
    return make_prior_groups(*s.dm.model, cfg.prior.groups, cfg.prior.group_patterns);
  });
  s.prior = std::make_unique<GaussianPrior>(std::move(groups), cfg.prior.precision,
                                            is_sampler && cfg.prior.hyperprior == "gamma", cfg.prior.alpha,
                                            cfg.prior.beta);
  s.prior->initialize(cfg.prior.init, s.gen_cpu);
  // On an accelerator the Gibbs step's Gamma draws come from the device's generator and stay there
  // (no host sync an epoch: GaussianPrior::gibbs_step); the CPU keeps the host's generator and bits.
  s.prior->set_draw_on_device(!s.dm.device.is_cpu());
  s.plan = make_run_plan(cfg, s.dm.data.train.size(), is_sampler);
  s.plan.graph = graph;
  if (graph) {
    const int64_t gs = cfg.train.graph_steps;
    const int64_t k = gs < 0 ? s.plan.auto_graph_steps() : gs == 0 ? s.plan.steps_per_epoch : gs;
    s.plan.graph_steps = std::max<int64_t>(1, std::min(k, s.plan.total_steps));
    if (gs <= 0) s.plan.resolved["train.graph_steps"] = static_cast<double>(s.plan.graph_steps);
  }
  s.plan.eval_lag = cfg.train.eval_lag >= 0 ? cfg.train.eval_lag : s.plan.auto_eval_lag(!s.dm.device.is_cpu());
  if (cfg.train.eval_lag < 0) s.plan.resolved["train.eval_lag"] = static_cast<double>(s.plan.eval_lag);
  // lr_scaling: per_datum: the configured lr is per datum, the step is lr/N. The schedule sets the
  // sampler's lr from this base at every step; the first step's is installed here.
  s.plan.base_lr = s.sampler->lr() / (cfg.lr_scaling == "per_datum" ? static_cast<double>(s.plan.train_size) : 1.0);
  s.sampler->set_lr(s.plan.base_lr);
  s.schedule = with_source(cfg.source, [&] {
    auto schedule = make_schedule(cfg.schedule, s.plan.base_lr, s.plan.total_steps, s.plan.steps_per_epoch);
    cfg.schedule.check_all_used();
    // Exploration stages run the sampler at temperature 0.
    if (schedule->has_stages() && !s.sampler->runs_at_zero_temperature())
      throw std::invalid_argument("schedule.explore_fraction: needs a sampler that runs at temperature 0 (" +
                                  sampler_names([](const SamplerEntry& e) { return e.zero_temperature; }) +
                                  "), not " + cfg.sampler_name());
    return schedule;
  });
  for (const auto& [part, x] : s.dm.seconds) s.seconds["time.setup." + part] = x;
  s.built_at = std::chrono::steady_clock::now();
  return s;
}

}  // namespace sgmcmc
