// `sgmcmc train --help-keys`: every config key with its default and meaning. The typed blocks' come
// from a config built from nothing but a sampler's name (their parsers' own defaults); the plug-ins'
// (samplers, models, schedules, data formats) from the key tables declared beside their parsers,
// which also give the keys those parsers accept, so the list cannot drift from them.
#include <iomanip>
#include <iostream>
#include <map>
#include <string>

#include "cli/commands.h"
#include "config/experiment_config.h"
#include "core/kernel_settings.h"
#include "data/load.h"
#include "models/factory.h"
#include "samplers/registry.h"
#include "samplers/schedules.h"

namespace sgmcmc {
namespace {

// One line per key of the typed blocks; the plug-ins' keys are documented in their headers.
const std::map<std::string, std::string>& meanings() {
  static const std::map<std::string, std::string> m = {
      {"name", "the run's name (runs/<name>-<timestamp> by default)"},
      {"seed", "seeds the data split, the model, the minibatches and the noise"},
      {"device", "cpu | cuda | cuda:N"},
      {"chains", "C parallel chains in one process, parameters stacked [C, ...] (models mlp and torchscript; 0: one plain model)"},
      {"data.format", "idx | ratings | csv | tensors | libsvm | bow"},
      {"data.dir", "idx: the directory of {train,t10k}-{images,labels} files"},
      {"data.val_size", "validation examples carved from train; auto: a sixth of it"},
      {"data.train_limit", "use only the first N training examples (0: all)"},
      {"data.test_limit", "use only the first N test examples (0: all)"},
      {"data.normalize", "idx: pixels scaled to [0, 1]"},
      {"data.ood", "out-of-distribution inputs for OOD metrics: none | classes | idx"},
      {"data.ood_classes", "classes held out of training as the OOD set"},
      {"data.ood_dir", "idx directory of the OOD set"},
      {"prior.precision", "the initial (or fixed) precision λ of N(0, 1/λ)"},
      {"prior.hyperprior", "gamma: Gibbs steps for λ | none: λ fixed"},
      {"prior.alpha", "Gamma(α, β) hyperprior's shape"},
      {"prior.beta", "Gamma(α, β) hyperprior's rate"},
      {"prior.init", "initial λ: precision | prior_draw | init_scale"},
      {"prior.gibbs_every_epochs", "a Gibbs step for λ every E epochs"},
      {"prior.gibbs_every_steps", "... or every K steps (takes precedence when > 0)"},
      {"prior.gibbs_start_epochs", "no Gibbs step in the first E epochs"},
      {"prior.gibbs_start_steps", "... or the first K steps (>= 0 takes precedence)"},
      {"prior.groups", "which parameters share a λ: per_tensor | single | model | {name: glob}"},
      {"train.epochs", "passes over the training set; auto: about 10,000 steps (at least 10 epochs; beyond 1,000 epochs a sample every thousandth and an evaluation every hundredth of the run)"},
      {"train.steps", "total steps (> 0 overrides epochs)"},
      {"train.batch_size", "minibatch per chain; auto: N/50, 32 to 500, or with sampler.lr: auto the largest doubling of it up to N whose step costs at most 2x (or whose run takes at most 30 s): less minibatch noise where it is cheap"},
      {"train.burn_in", "epochs before samples are averaged; auto: a tenth of the run"},
      {"train.burn_in_steps", "... in steps (>= 0 overrides burn_in)"},
      {"train.thin", "steps between averaged samples (0: one per epoch)"},
      {"train.eval_every", "epochs between evaluations (rows of metrics.csv)"},
      {"train.eval_every_steps", "... or steps (> 0 overrides eval_every)"},
      {"train.eval_batch_size", "examples per forward pass when predicting"},
      {"train.eval_lag", "auto | N: steps queued after an evaluation before its row is read and written (0: at once; "
                         "on a GPU the host's work on the row then overlaps them; the same values; with "
                         "train.graph_steps, at the end of the block it falls in; auto: 20 on a GPU, at most half "
                         "the evaluation or Gibbs interval, 0 on the CPU)"},
      {"train.chain_minibatch", "own | shared: with chains, each chain its own minibatch (default) or one a step for "
                                "all (mlp: the first layer one product over the chains)"},
      {"train.threads", "CPU threads (0: the process's CPUs)"},
      {"train.fused", "fused sampler kernels (false: per-parameter ATen ops, the same noise)"},
      {"train.tf32", "TF32 matrix products on CUDA"},
      {"train.flush_denormal", "CPU: denormal floats flushed to zero (true; false keeps IEEE gradual underflow)"},
      {"train.graph", "auto | true | false: capture the step as a CUDA graph"},
      {"train.graph_steps", "auto | N | epoch: where the step is captured, N steps (or an epoch's) in one graph "
                            "launch, their minibatches gathered at once, wherever no Gibbs step, sample or "
                            "evaluation falls inside (1: a launch a step; the same values; auto: the steps between "
                            "those events, up to 256)"},
      {"train.graph_epoch", "auto | true | false: capture a run's per-epoch phases (a classification run's sample "
                            "predictions and evaluation metrics, the Gibbs step) as CUDA graphs (auto: where the step "
                            "is captured)"},
      {"train.backward", "auto: the model's own backward pass where it has one | autograd"},
      {"train.require_healthy", "exit 4 when the final predictive is worse than the trivial one (false: warn)"},
      {"output.dir", "run directory (--out overrides)"},
      {"output.save_samples", "auto: at most max_samples / max_sample_mb, thinned | true: all | false: none"},
      {"output.max_samples", "save_samples: auto keeps at most this many samples"},
      {"output.max_sample_mb", "... and at most this many megabytes"},
      {"output.checkpoint", "write checkpoint.pt (resumable runs)"},
      {"output.checkpoint_every_seconds", "at an evaluation, a checkpoint once this long has passed"},
      {"output.progress", "a progress line on a terminal"},
      {"distributed.mode", "chains: a chain per rank | data: one chain, the minibatch split over ranks"},
      {"distributed.init", "env (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) | file:///path"},
      {"distributed.timeout_s", "seconds before a lost rank stops the others"},
      {"distributed.backend", "auto | gloo | nccl"},
      {"sampler.lr", "step size in the sampler's parametrisation; auto (the default): chosen by a pilot"},
      {"sampler.lr_scaling", "total | per_datum (lr divided by N)"},
  };
  return m;
}

// The key's meaning: meanings(), or for kernels.* the key's own line in core/kernel_settings.cpp's table.
std::string meaning(const std::string& key) {
  auto it = meanings().find(key);
  if (it != meanings().end()) return it->second;
  const std::string kernels = "kernels.";
  return key.rfind(kernels, 0) == 0 ? kernel_setting_help(key.substr(kernels.size())) : "";
}

void line(std::ostream& out, const std::string& key, const std::string& value, const std::string& meaning) {
  out << "  " << std::left << std::setw(34) << key << " " << std::setw(12) << value
      << (meaning.empty() ? "" : "  " + meaning) << "\n";
}

void line(std::ostream& out, const std::string& key, const std::string& value) {
  line(out, key, value, meaning(key));
}

// A declared key's meaning with its range, or its choices where the meaning does not list them.
std::string meaning_of(const OptionDoc& d) {
  std::string m = d.meaning;
  if (!d.range.empty()) m += (m.empty() ? "" : "; ") + d.range;
  if (!d.choices.empty() && m.find(d.choices.front()) == std::string::npos) {
    std::string list;
    for (const auto& c : d.choices) list += (list.empty() ? "" : " | ") + c;
    m += (m.empty() ? "" : "; ") + list;
  }
  return m;
}

// The declared keys of a plug-in (a sampler's option table, a model's, a schedule's or a data
// format's docs), each with its default and meaning. `lr` is left out: sampler.lr is printed once,
// its default being the pilot's (auto), not the sampler's.
void plugin(std::ostream& out, const std::string& block, const std::vector<OptionDoc>& docs) {
  for (const auto& d : docs)
    if (d.key != "lr") line(out, block + "." + d.key, d.default_text, meaning_of(d));
}

}  // namespace

void print_config_keys(std::ostream& out) {
  const ExperimentConfig c = build_config(parse_raw_config("sampler: {name: sgld, lr: 1.0e-5}\n", "keys"));
  out << "Config keys (block.key  default  meaning); --set block.key=value sets any of them.\n\n";
  for (const std::string block : {"", "data", "prior", "train", "output", "distributed", "kernels"}) {
    out << (block.empty() ? "top level" : block + ":") << "\n";
    auto it = c.typed_blocks.find(block);
    const OptionMap& m = block == "data" ? c.data.options : it->second;
    for (const auto& k : typed_block_keys(block)) {
      auto r = m.resolved();
      auto v = r.find(k);
      line(out, block.empty() ? k : block + "." + k, v == r.end() ? "" : v->second);
    }
    if (block == "data")
      for (const auto& f : data_formats())
        if (!f.options.empty()) {
          out << "  format: " << f.name << "\n";
          plugin(out, "data", f.options);
        }
    out << "\n";
  }
  out << "sampler: (name: one of `sgmcmc list`)\n";
  line(out, "sampler.lr", "auto");
  line(out, "sampler.lr_scaling", "total");
  for (const auto& e : sampler_registry()) {
    out << "  name: " << e.name << "\n";
    plugin(out, "sampler", e.options);
  }
  out << "\nmodel: (name)\n";
  for (const auto& e : model_registry()) {
    out << "  name: " << e.name << "\n";
    plugin(out, "model", e.options);
  }
  out << "\nschedule: (type)\n";
  for (const auto& e : schedule_types()) {
    out << "  type: " << e.name << "\n";
    plugin(out, "schedule", e.options);
  }
}

}  // namespace sgmcmc
