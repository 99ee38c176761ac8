// Experiment configuration: YAML file -> typed structs (+ OptionMaps for the blocks whose keys
// belong to a plug-in: sampler, schedule, model, data format extras).
//
// Layout of a config file (every block optional except sampler.name; unknown keys are errors):
//   name: mnist_bnn_sghmc     # run name (default: file stem)
//   seed: 1
//   device: cpu               # cpu | cuda | cuda:N
//   chains: 8                 # optional: C parallel chains in one model (mlp: batched; torchscript: in turn)
//   data:     {format: idx, dir: ..., val_size: 10000, ...}          -> DataConfig
//   model:    {name: mlp, hidden: [100], activation: sigmoid, ...}   -> OptionMap (models/factory)
//   prior:    {precision: 1, hyperprior: gamma, alpha: 1, beta: 1, ...} -> PriorConfig
//   sampler:  {name: sghmc, lr: 2e-6, ...}                           -> OptionMap (samplers/registry)
//   schedule: {type: constant | polynomial | step | cyclical, ...}   -> OptionMap (samplers/schedules)
//   train:    {epochs: 800, burn_in: 50, batch_size: 500, ...}       -> TrainConfig
//   output:   {dir: ..., save_samples: false, checkpoint: true}      -> OutputConfig
//   distributed: {mode: chains | data, init: env, timeout_s: 300}   -> DistributedOptions
// Only src/config/ includes yaml-cpp. YAML sequences become comma-separated strings ("100,100").
//
// build_config checks a config in three phases, so that the first error reported is the real one:
//   1. keys: every key of every block (file and --set) against the keys declared by the block's
//      reader: the typed blocks here, and the chosen plug-in's (sampler_registry(), schedule_types(),
//      model_registry(), data_formats()); choosing the plug-in (sampler.name, schedule.type,
//      model.name, data.format) is the only value read;
//   2. values: one function per block, the plug-ins' options through the same parsers their
//      factories use (parse_model_options, the sampler's parser, parse_schedule_options,
//      parse_csv_options / parse_ratings_options); then checks across fields (burn-in < epochs, ...);
//   3. data: load_dataset, which opens files and no longer meets an unknown key or a bad value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <optional>

#include "core/kernel_settings.h"
#include "core/option_map.h"
#include "data/data_config.h"
#include "distributed/distributed_options.h"

namespace sgmcmc {

struct PriorConfig {
  double precision = 1.0;          // initial (or fixed) λ_g of the N(0, 1/λ_g) prior
  std::string hyperprior = "gamma";  // gamma | none
  double alpha = 1.0, beta = 1.0;  // Gamma(α, β) hyperprior (rate β)
  int64_t gibbs_every_epochs = 1;  // Gibbs step for the λ's every E epochs ...
  int64_t gibbs_every_steps = 0;   // ... or every K steps (takes precedence when > 0)
  int64_t gibbs_start_epochs = 0;  // a warm-up: no Gibbs step in the first E epochs (λ at its initial value) ...
  int64_t gibbs_start_steps = -1;  // ... or the first K steps (>= 0 takes precedence)
  // The initial λ_g: precision (prior.precision for every group) | prior_draw (a draw from the
  // Gamma(α, β) hyperprior per group) | init_scale (n_g / ‖θ_g‖² at initialisation: the precision
  // under which the initial weights are typical).
  std::string init = "precision";
  std::string groups = "per_tensor";  // per_tensor (App. H.1) | single | model (the model's prior_groups())
                                      // | patterns (group_patterns, from a mapping prior.groups: {name: glob})
  // prior.groups: {conv: "*conv*.weight", biases: "*.bias", rest: "*"}: (group, pattern) in order;
  // a parameter joins the group of the first pattern (fnmatch) its name matches.
  std::vector<std::pair<std::string, std::string>> group_patterns;
};

// train.threads' bound.
constexpr int64_t kMaxThreads = 1024;

struct TrainConfig {
  // -1: auto (the default), resolved from the training set's size N by make_run_plan (train/run_plan.h):
  // batch_size clamp(N/50, 32, 500) (with sampler.lr: auto the pilot may take a larger one: train/lr_pilot.h),
  // epochs for about 10,000 steps (at least 10), burn-in a tenth of the run.
  int64_t epochs = -1;
  int64_t steps = 0;               // total steps; > 0 overrides epochs
  int64_t batch_size = -1;
  double burn_in = -1;             // epochs (may be fractional) before samples are averaged
  int64_t burn_in_steps = -1;      // alternative in steps (>= 0 overrides burn_in)
  int64_t thin = 0;                // steps between averaged samples; 0 = one sample per epoch
  int64_t eval_every = 1;          // epochs between evaluations (rows of metrics.csv)
  int64_t eval_every_steps = 0;    // or every K steps (> 0 overrides eval_every)
  // Steps queued after an evaluation before its metrics row is read and written (0: at once). On a GPU
  // the evaluation's one read then waits for the evaluation alone, and the host's work on the row (the
  // files, the console, the checks) overlaps those steps instead of leaving the device idle; the row's
  // values are the same (train/trainer.cpp, PendingEvaluation). -1: auto (the default), resolved by
  // make_run_setup (RunPlan::auto_eval_lag: 20 steps on a GPU, 0 on the CPU).
  int64_t eval_lag = -1;
  int64_t eval_batch_size = 10000; // chunk size for predictions
  // train.chain_minibatch: own (the default): with parallel chains each chain draws its own minibatch
  // of batch_size; shared: one minibatch a step that every chain's gradient uses. Each chain is the
  // same sampler either way; shared minibatches correlate the chains' gradient noise, and the mlp's
  // first layer's products become one product over all chains (models/mlp_chains.h).
  bool chain_minibatch_shared = false;
  int64_t threads = 0;             // torch intra-op threads (0 = leave the default; at most kMaxThreads)
  bool fused = true;               // fused sampler kernels (false: per-parameter ATen ops, same noise)
  bool tf32 = false;               // allow TF32 matmuls/convolutions on CUDA (Ampere and later)
  bool flush_denormal = true;      // CPU: denormal floats flushed to zero (runtime/cpu.h)
  bool graph = false;              // capture the whole step once and replay it (CUDA graph; see StepGraph)
  bool graph_auto = true;          // train.graph: auto (the default): decided by make_run_setup
                                   // (resolve_train_graph); true / false set `graph` and clear this
  // Steps captured together as one graph where the step is captured (train.graph, resolved): a
  // block of that many steps is one graph launch, its minibatches gathered at once; the loop takes a
  // block wherever no Gibbs step, sample or evaluation falls inside it, single steps elsewhere (a
  // deferred row due inside a block is read after it). The same values as single steps, bit for bit.
  // 0: `epoch` (the epoch's steps); -1: auto (the default), resolved by make_run_setup where the step is
  // captured (RunPlan::auto_graph_steps: the steps between due events, up to 256).
  int64_t graph_steps = -1;
  // The per-epoch phases of a run (a classification run's sample predictions and evaluation metrics,
  // the Gibbs step) captured as CUDA graphs and replayed (train/phase_graph.h); the same values either
  // way. auto (the default): wherever the step is captured (train.graph, resolved).
  bool graph_epoch = false;
  bool graph_epoch_auto = true;    // train.graph_epoch: auto; true / false set graph_epoch and clear this
  // A run whose final predictive is worse than the trivial one exits with code 4 (train/health.h);
  // false: it warns and exits 0 (smoke tests of a pipeline, equivalence tests of a few steps).
  bool require_healthy = true;
  std::string backward = "auto";   // auto: the model's own backward pass where it has one (mlp, cnn, bpmf on the CPU) | autograd
};

struct OutputConfig {
  std::string dir;                 // run directory (default runs/<name>-<timestamp>)
  // samples/ on disk: auto (the default) keeps at most max_samples samples and max_sample_mb
  // megabytes, thinned evenly over the run; true: every averaged sample; false: none.
  std::string save_samples = "auto";
  int64_t max_samples = 100;
  double max_sample_mb = 1024;
  bool checkpoint = true;          // write checkpoint.pt at evaluations (see checkpoint_every_seconds)
  // At an evaluation, checkpoint.pt is written when this long has passed since the last one, and at the
  // run's last step; 0: at every evaluation. (A checkpoint holds the predictive's sums, MB per write
  // with an fsync: at every epoch of App. H.1 it was 800 writes of 2.8 MB.)
  double checkpoint_every_seconds = 60;
  bool progress = true;            // progress line with ETA when stderr is a terminal
};

struct ExperimentConfig {
  std::string source;              // file the config came from (for messages)
  std::string name;
  uint64_t seed = 1;
  std::string device = "cpu";
  int64_t chains = 0;              // parallel chains in one batched model (0: not set, the plain model)
  DataConfig data;
  OptionMap model{"model"};
  PriorConfig prior;
  OptionMap sampler{"sampler"};
  // sampler.lr_scaling: total (the papers': lr multiplies ∇Ũ = (N/n)Σ∇ℓ + ∇prior) | per_datum (the
  // step is lr/N, i.e. lr multiplies the mean per-datum gradient, so a config carries over to another
  // N). For the samplers with SamplerEntry::lr_per_datum.
  std::string lr_scaling = "total";
  // sampler.lr: auto, or no lr given: the step size is chosen by a pilot (train/lr_pilot.h) before the
  // run; `sampler` then holds no lr (the sampler's default is the pilot's starting point).
  bool lr_auto = false;
  OptionMap schedule{"schedule"};
  TrainConfig train;
  OutputConfig output;
  DistributedOptions distributed;  // used when launched with WORLD_SIZE > 1 (src/distributed)
  KernelSettings kernels;          // which implementation runs each part of the step (core/kernel_settings.h)
  // The parsed blocks "" (top level), "prior", "train", "output", "distributed", "kernels" with their keys marked used (for to_yaml).
  std::map<std::string, OptionMap> typed_blocks;

  std::string sampler_name() const;
};

// Raw, unparsed form: block name -> OptionMap, plus top-level scalars under block "".
struct RawConfig {
  std::string source;
  std::map<std::string, OptionMap> blocks;
};

// Reads a YAML file into raw blocks. Throws std::invalid_argument "<file>: ..." on syntax errors,
// unknown blocks (with a suggestion) and nesting deeper than block.key.
RawConfig read_raw_config(const std::string& path);
RawConfig parse_raw_config(const std::string& yaml_text, const std::string& source);
// Applies one "a.b=value" (or "seed=3") override; unknown blocks are errors with a suggestion.
void apply_override(RawConfig& raw, const std::string& assignment);
// Converts raw blocks to typed structs in the three phases above: every key of every block known,
// then every value that needs no data (the plug-ins' options included), then cross-field checks.
// Throws std::invalid_argument "<file>: <block>.<key>: ..." (one line).
ExperimentConfig build_config(RawConfig raw);
// The keys of a typed block: "" (top level), "data" (the keys every format takes; the format's own
// are in data_formats()), "prior", "train", "output"; empty for a plug-in block.
const std::vector<std::string>& typed_block_keys(const std::string& block);
// read_raw_config + overrides + build_config.
ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// YAML text of the resolved config: typed fields with defaults filled in; the OptionMap blocks with
// the given values plus every default their consumers read (OptionMap::resolved()).
std::string to_yaml(const ExperimentConfig& config);


}  // namespace sgmcmc
