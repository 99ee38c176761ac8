// Everything a run is made of, built from a config and checked before the run directory is
// touched: device, data set and model (shared with `sgmcmc predict`), the two generators, the
// sampler, the prior, the step plan and the step-size schedule.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "config/experiment_config.h"
#include "data/dataset.h"
#include "models/factory.h"
#include "priors/gaussian_prior.h"
#include "samplers/registry.h"
#include "samplers/schedules.h"
#include "train/run_plan.h"

namespace sgmcmc {

// Where a run's chain runs: the device (a rank's own GPU with several ranks) and the seed of its
// model and generators (a distributed chains-mode rank's own; the data split always follows
// config.seed). Derived from the config and the process, never written into the config.
struct RunPlace {
  std::string device;                  // "" = config.device
  std::optional<uint64_t> chain_seed;  // nullopt = config.seed
};

struct DataAndModel {
  torch::Device device{torch::kCPU};
  Dataset data;   // on the device
  ModelPtr model; // on the device
  // Where the load's seconds went (summary.json's time.setup.<part>): "data" (reading, inflating and
  // decoding the files), "context" (the device's context created on its own thread beside the data; 0 on
  // the CPU), "device_wait" (what of the context the data did not hide), "model" (building the model,
  // moving it and the data to the device).
  std::map<std::string, double> seconds;
};

// A TorchScript module starts at its file's weights whatever the seed. A chain of its own (a distributed
// chains-mode rank, whose chain seed differs from config.seed) starts from them plus N(0, (0.1·rms)²) per
// tensor (rms: the tensor's root mean square), drawn from the chain seed, so that the chains R̂ compares
// did not all start at one point.
constexpr double kChainJitter = 0.1;
void jitter_parameters(Model& model, uint64_t seed);

// The data set and the model of a config, both on `place`'s device (default config.device).
// `place.chain_seed` (default config.seed) initializes the model; the data always follows config.seed.
DataAndModel load_data_and_model(const ExperimentConfig& config, const RunPlace& place = {});

struct RunSetup {
  ExperimentConfig config;  // as checked; only the plug-ins' read marks change (for config.yaml)
  DataAndModel dm;
  at::Generator gen_dev;    // on the device: data order, sampler noise, likelihood Gibbs steps
  at::Generator gen_cpu;    // on the CPU: prior precision Gibbs steps
  std::vector<torch::Tensor> params;
  SamplerPtr sampler;
  std::unique_ptr<GaussianPrior> prior;
  RunPlan plan;
  std::unique_ptr<Schedule> schedule;
  // summary.json's parts of the start-up: time.setup.<part> (DataAndModel::seconds, and the training
  // run's own construction, "trainer", from `built_at` on) and time.launch (the process's age when the
  // run started: LibTorch's load, outside wall_seconds; set by the caller that knows it).
  std::map<std::string, double> seconds;
  std::chrono::steady_clock::time_point built_at;  // when make_run_setup returned
};

// train.graph: auto → a whole-step graph exactly where one is known to pay and to hold: a CUDA device
// (on the H100, App. H.1 in full went from 35.8 s eager to 25.7 s captured, with the same results), a
// sampler whose step can be captured (Sampler::graph_capturable), a model known to capture: a built-in
// one with one chain (a TorchScript module of the user's may synchronize with the host inside its
// forward, which a capture refuses; batched chains have been captured only on the CPU twin so far), and
// no distributed.mode: data (its all-reduce cannot sit inside the graph). Explicit true / false are
// kept as given.
bool resolve_train_graph(const TrainConfig& train, const torch::Device& device, bool capturable,
                         bool model_capturable, bool data_parallel);

// train.graph_epoch: auto → the per-epoch phases captured wherever the step is (`step_graph`: train.graph
// resolved; on the H100, App. H.1 in full 6.03 s against 6.30 s, the same results bit for bit); explicit
// true / false as given.
bool resolve_graph_epoch(const TrainConfig& train, bool step_graph);

// Builds and checks every part (std::invalid_argument "<config file>: ..." on bad input).
// `place.chain_seed` (default config.seed) seeds the model and the two generators, the data split
// always config.seed: a distributed chains-mode rank's own chains over the same data (distributed/).
RunSetup make_run_setup(const ExperimentConfig& config, const RunPlace& place = {});

}  // namespace sgmcmc
