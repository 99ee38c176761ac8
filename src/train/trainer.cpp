#include "train/trainer.h"

#include "metrics/convergence.h"
#include "runtime/cpu.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "compat.h"
#include "data/load.h"
#include "models/factory.h"
#include "priors/gaussian_prior.h"
#include "samplers/registry.h"
#include "samplers/schedules.h"
#include "train/step_graph.h"
#include "util/atomic_file.h"
#include "util/signals.h"

namespace fs = std::filesystem;

namespace sgmcmc {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string num(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream s;
  s << std::setprecision(8) << v;
  return s.str();
}

std::string json_num(double v) { return std::isfinite(v) ? num(v) : "null"; }

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out;
}

void write_atomic(const fs::path& path, const std::string& text) { write_file_atomic(path.string(), text); }

// Prefixes a plug-in's message (sampler / schedule options) with the config file when it lacks it.
[[noreturn]] void rethrow_with_source(const std::invalid_argument& e, const std::string& source) {
  std::string what = e.what();
  if (what.rfind(source, 0) == 0) throw e;
  throw std::invalid_argument(source + ": " + what);
}

// The likely cause of a divergence, from the sampler's (resolved) options.
std::string divergence_hint(const std::string& sampler, const OptionMap& options) {
  auto r = options.resolved();
  auto val = [&](const std::string& k) {
    auto it = r.find(k);
    return it == r.end() ? std::string("?") : it->second;
  };
  if (sampler == "sghmc")
    return "step size too large for the friction alpha=" + val("alpha") + " \u2014 lower sampler.lr or raise sampler.alpha";
  if (sampler == "sgnht" || sampler == "msgnht")
    return "step size too large for the thermostat (diffusion=" + val("diffusion") +
           ") \u2014 lower sampler.lr or raise sampler.diffusion";
  if (sampler == "santa")
    return "step size too large for the thermostat (friction=" + val("friction") + ") \u2014 lower sampler.lr";
  if (sampler == "sghmc-naive") return "naive SGHMC has no friction to absorb the gradient noise \u2014 lower sampler.lr";
  if (sampler == "sgd" || sampler == "sgd-momentum" || sampler == "rmsprop" || sampler == "adam")
    return "learning rate too large \u2014 lower sampler.lr";
  return "step size too large \u2014 lower sampler.lr";
}

bool all_finite(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params)
    if (!torch::isfinite(p).all().item<bool>()) return false;
  return true;
}

// Model outputs on a whole split, in chunks, without gradients.
// `f` (a model's predict or predict_chains) over a whole split in chunks, concatenated along `dim`.
template <typename F>
torch::Tensor predict_chunked(const Batch& split, int64_t chunk, int64_t dim, F&& f) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  const int64_t n = split.size();
  for (int64_t i = 0; i < n; i += chunk) parts.push_back(f(split.inputs.slice(0, i, std::min(n, i + chunk))));
  return parts.empty() ? torch::Tensor() : torch::cat(parts, dim);
}

// Model outputs on a whole split [n, ...].
torch::Tensor predict_all(Model& model, const Batch& split, int64_t chunk) {
  return predict_chunked(split, chunk, 0, [&](const torch::Tensor& x) { return model.predict(x); });
}

// Per-chain outputs [C, n, ...] on a whole split.
torch::Tensor predict_all_chains(Model& model, const Batch& split, int64_t chunk) {
  return predict_chunked(split, chunk, 1, [&](const torch::Tensor& x) { return model.predict_chains(x); });
}

// Mean test log-likelihood of each chain's current sample [C] (classification: log p(y|x); regression:
// Gaussian with noise precision tau).
torch::Tensor chain_log_likelihood(const torch::Tensor& per_chain, const torch::Tensor& targets, bool classification,
                                   double tau) {
  auto p = per_chain.to(torch::kFloat64);
  if (classification) {
    auto idx = targets.to(torch::kInt64).view({1, -1, 1}).expand({p.size(0), -1, 1});
    return p.gather(2, idx).squeeze(2).clamp_min(1e-300).log().mean(1);
  }
  auto r = p - targets.to(torch::kFloat64).unsqueeze(0);
  return (0.5 * std::log(tau / (2 * M_PI)) - 0.5 * tau * r.square()).mean(1);
}

double tau_of(Model& model) {
  auto h = model.likelihood_hyperparameters();
  auto it = h.find("tau");
  return it == h.end() ? 1.0 : it->second;
}

// Per-point Gaussian log-density log N(y; f, 1/τ) (float64), for the mixture predictive of
// standardized-target data sets.
torch::Tensor gaussian_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau) {
  auto r2 = (f.to(torch::kFloat64) - y.to(torch::kFloat64)).pow(2);
  return -0.5 * tau * r2 + 0.5 * std::log(tau) - 0.5 * std::log(2 * M_PI);
}

// log of the chain-averaged density (1/C) Σ_c N(y; f_c, 1/τ) per point, from predictions [C, n] (or [n]).
torch::Tensor mixture_log_density(const torch::Tensor& f, const torch::Tensor& y, double tau) {
  if (f.dim() == 1) return gaussian_log_density(f, y, tau);
  auto ld = gaussian_log_density(f, y.unsqueeze(0), tau);
  return torch::logsumexp(ld, 0) - std::log(static_cast<double>(f.size(0)));
}

// Running log Σ_s p_s(y) per point.
void accumulate_lse(torch::Tensor& lse, const torch::Tensor& log_density) {
  lse = lse.defined() ? torch::logaddexp(lse, log_density) : log_density.clone();
}

// predictive_metrics, then for standardized targets: rmse in the original units and the nll of the
// mixture (1/S) Σ_s N(y; f_s, 1/τ_s) (from `lse` = log Σ_s, S = samples) or of N(y; f, 1/τ) when
// there is no mixture, both + log(target_scale) (the density of the original-unit target).
std::map<std::string, double> split_metrics(const Dataset& data, const torch::Tensor& prediction,
                                            const torch::Tensor& targets, double tau, const torch::Tensor& lse,
                                            int64_t samples) {
  auto m = predictive_metrics(prediction, targets, data.task == Task::kClassification, tau, data.clip,
                              data.target_min, data.target_max);
  if (!data.standardized_targets || m.empty()) return m;
  m["rmse"] *= data.target_scale;
  if (lse.defined() && samples > 0)
    m["nll"] = -(lse - std::log(static_cast<double>(samples))).mean().item<double>();
  m["nll"] += std::log(data.target_scale);
  return m;
}

void save_model(torch::serialize::OutputArchive& ar, Model& model, const std::string& prefix) {
  for (const auto& item : model.named_parameters()) ar.write(prefix + item.key(), item.value().detach());
  for (const auto& item : model.named_buffers()) ar.write(prefix + item.key(), item.value(), /*is_buffer=*/true);
}

void load_model(torch::serialize::InputArchive& ar, Model& model, const std::string& prefix, const std::string& file) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    torch::Tensor t;
    if (!ar.try_read(prefix + item.key(), t)) throw std::invalid_argument(file + ": missing parameter " + item.key());
    if (t.sizes() != item.value().sizes()) throw std::invalid_argument(file + ": parameter " + item.key() + " has the wrong shape");
    item.value().copy_(t);
  }
  for (auto& item : model.named_buffers()) {
    torch::Tensor t;
    if (ar.try_read(prefix + item.key(), t, /*is_buffer=*/true)) item.value().copy_(t);
  }
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

struct Everything {
  ExperimentConfig config;
  Dataset data;
  ModelPtr model;
  torch::Device device{torch::kCPU};
};

// Data set (on the device) and model (on the device) for a config.
void build_data_and_model(Everything& e) {
  e.device = torch::Device(e.config.device);
  if (e.device.is_cuda() && !compat::cuda_available())
    throw std::invalid_argument(e.config.source + ": device: cuda requested but no CUDA device is available");
  Dataset cpu = load_dataset(e.config.data, e.config.seed);
  if (cpu.train.size() == 0) throw std::invalid_argument(e.config.source + ": data: the training set is empty");
  e.model = make_model(e.config.model, cpu, e.config.seed, e.config.chains);
  e.model->to(e.device);
  e.data = cpu.to(e.device);
}

}  // namespace

std::map<std::string, double> predictive_metrics(const torch::Tensor& prediction, const torch::Tensor& targets,
                                                 bool classification, double tau, bool clip, double lo, double hi) {
  std::map<std::string, double> m;
  if (!prediction.defined() || prediction.size(0) == 0) return m;
  torch::NoGradGuard no_grad;
  if (classification) {
    auto p = prediction.to(torch::kFloat64);
    auto pred = p.argmax(1);
    m["error"] = pred.ne(targets).to(torch::kFloat64).mean().item<double>();
    auto py = p.gather(1, targets.unsqueeze(1)).squeeze(1).clamp_min(1e-300);
    m["nll"] = -py.log().mean().item<double>();
  } else {
    auto f = prediction.to(torch::kFloat64);
    if (clip) f = f.clamp(lo, hi);
    auto r2 = (f - targets.to(torch::kFloat64)).pow(2);
    m["rmse"] = std::sqrt(r2.mean().item<double>());
    m["nll"] = 0.5 * tau * r2.mean().item<double>() - 0.5 * std::log(tau) + 0.5 * std::log(2 * M_PI);
  }
  return m;
}

std::string default_run_dir(const std::string& name) {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&now));
  return (fs::path("runs") / (name + "-" + buf)).string();
}

RunSummary run_training(ExperimentConfig config, const RunOptions& opt) {
  const auto t_start = Clock::now();
  tune_allocator();
  if (config.train.threads > 0) set_cpu_threads(static_cast<int>(config.train.threads));
  // TF32 tensor-core matmuls and convolutions on CUDA: ~10-bit mantissa products, off by default.
  at::globalContext().setAllowTF32CuBLAS(config.train.tf32);
  at::globalContext().setAllowTF32CuDNN(config.train.tf32);

  // Run directory.
  fs::path dir = !opt.out_dir.empty() ? fs::path(opt.out_dir)
                 : !config.output.dir.empty() ? fs::path(config.output.dir)
                                              : fs::path(default_run_dir(config.name));
  const fs::path ckpt_path = dir / "checkpoint.pt";
  // Nothing is written or removed until the config, data, model, sampler and schedule are all
  // known to be valid: a bad input never costs the user an existing run directory.
  bool replace_dir = false;
  if (opt.resume) {
    if (!fs::exists(ckpt_path))
      throw std::invalid_argument(dir.string() + ": cannot resume, no checkpoint.pt in the run directory");
  } else if (fs::exists(dir) && !(fs::is_directory(dir) && fs::is_empty(dir))) {
    if (!opt.overwrite)
      throw std::invalid_argument(dir.string() + ": run directory exists (use --overwrite to replace it or --resume to continue it)");
    replace_dir = true;
  } else if (fs::exists(dir) && !fs::is_directory(dir)) {
    throw std::invalid_argument(dir.string() + ": exists and is not a directory");
  }
  config.output.dir = dir.string();

  Everything e;
  e.config = config;
  build_data_and_model(e);
  ExperimentConfig& cfg = e.config;
  Model& model = *e.model;
  const Dataset& data = e.data;
  const bool classification = data.task == Task::kClassification;

  // Generators: one on the device (data order, sampler noise, likelihood Gibbs), one on the CPU (λ Gibbs).
  auto gen_dev = compat::make_generator(e.device, cfg.seed * 2 + 1);
  auto gen_cpu = compat::make_generator(torch::kCPU, cfg.seed * 2 + 2);

  std::vector<torch::Tensor> params;
  for (const auto& p : model.parameters()) params.push_back(p);
  SamplerPtr sampler;
  try {
    sampler = make_sampler(cfg.sampler_name(), {ParamGroup(params)}, cfg.sampler, gen_dev);
  } catch (const std::invalid_argument& ex) {
    rethrow_with_source(ex, cfg.source);
  }
  sampler->set_fused(cfg.train.fused);
  if (cfg.train.graph) {  // before anything is written: a sampler that cannot be captured is refused here
    try {
      sampler->set_step_mode(Sampler::StepMode::kPrepare);
    } catch (const std::invalid_argument& ex) {
      rethrow_with_source(ex, cfg.source);
    }
  }
  const bool is_sampler = sampler->is_sampler();
  const int64_t chains = model.chains();
  if (chains > 1 && (cfg.sampler_name() == "sgnht" || cfg.sampler_name() == "hmc"))
    throw std::invalid_argument(cfg.source + ": chains: sampler " + cfg.sampler_name() +
                                " couples all parameters (one thermostat / one accept step); use an elementwise "
                                "sampler (sgld, psgld, sghmc, msgnht, santa) with parallel chains");
  GaussianPrior prior(make_prior_groups(model, cfg.prior.groups), cfg.prior.precision,
                      is_sampler && cfg.prior.hyperprior == "gamma", cfg.prior.alpha, cfg.prior.beta);

  const int64_t N = data.train.size(), n = cfg.train.batch_size;
  if (n > N)
    throw std::invalid_argument(cfg.source + ": train.batch_size " + std::to_string(n) + " exceeds the training set (" +
                                std::to_string(N) + " examples)");
  const int64_t spe = N / n;  // steps per epoch (the remainder of each shuffled epoch is dropped)
  const int64_t total = cfg.train.steps > 0 ? cfg.train.steps : cfg.train.epochs * spe;
  const int64_t burn = cfg.train.burn_in_steps >= 0 ? cfg.train.burn_in_steps
                                                    : static_cast<int64_t>(std::llround(cfg.train.burn_in * spe));
  if (is_sampler && burn >= total)
    throw std::invalid_argument(cfg.source + ": train.burn_in: burn-in (" + std::to_string(burn) +
                                " steps) must be shorter than the run (" + std::to_string(total) + " steps)");
  const int64_t thin = cfg.train.thin > 0 ? cfg.train.thin : spe;
  const int64_t eval_every = cfg.train.eval_every_steps > 0 ? cfg.train.eval_every_steps : cfg.train.eval_every * spe;
  const int64_t gibbs_every = cfg.prior.gibbs_every_steps > 0 ? cfg.prior.gibbs_every_steps
                                                              : cfg.prior.gibbs_every_epochs * spe;
  std::unique_ptr<Schedule> schedule;
  try {
    schedule = make_schedule(cfg.schedule, sampler->lr(), total, spe);
    cfg.schedule.check_all_used();
  } catch (const std::invalid_argument& ex) {
    rethrow_with_source(ex, cfg.source);
  }
  const double scale = static_cast<double>(N) / static_cast<double>(n);
  const int64_t chunk = cfg.train.eval_batch_size;

  // State.
  int64_t step = 0, pos = 0, samples = 0, rows = 0;
  double wall_before = 0;
  torch::Tensor perm;
  auto fopts = torch::TensorOptions().dtype(torch::kFloat64).device(e.device);
  torch::Tensor loss_sum = torch::zeros({}, fopts);
  int64_t loss_count = 0;
  torch::Tensor avg_test, avg_val;  // running sums of predictive outputs (float64)
  torch::Tensor lse_test, lse_val;  // standardized targets: running log Σ_s N(y; f_s, 1/τ_s) per point
  torch::Tensor last_test_pred;     // current sample's test prediction at its last computation
  // Convergence traces, one row per thinned sample: per-chain test log-likelihood [C] and a few
  // weights [C, k] (split-R̂ and ESS in summary.json).
  constexpr int64_t kTraceWeights = 3;
  std::vector<torch::Tensor> trace_ll, trace_w;

  if (opt.resume) {
    torch::serialize::InputArchive ar;
    try {
      ar.load_from(ckpt_path.string(), e.device);
    } catch (const c10::Error& ex) {
      std::string what = ex.what_without_backtrace();
      throw std::invalid_argument(ckpt_path.string() + ": not a readable checkpoint (" + what.substr(0, what.find('\n')) + ")");
    }
    load_model(ar, model, "model.", ckpt_path.string());
    torch::serialize::InputArchive sa;
    ar.read("sampler", sa);
    sampler->load(sa);
    // A fresh tensor per key: InputArchive::read into a defined tensor resizes it in place.
    auto rd = [&](const std::string& key, bool is_buffer) {
      torch::Tensor x;
      ar.read(key, x, is_buffer);
      return x;
    };
    auto opt_rd = [&](const std::string& key) {
      torch::Tensor x;
      ar.try_read(key, x, true);
      return x;
    };
    torch::Tensor t = rd("prior.lambda", false).cpu().contiguous();
    prior.set_precisions(std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel()));
    compat::set_generator_state(gen_dev, rd("gen_dev", true).cpu());
    compat::set_generator_state(gen_cpu, rd("gen_cpu", true).cpu());
    t = rd("counters", true).cpu();
    step = t[0].item<int64_t>();
    pos = t[1].item<int64_t>();
    samples = t[2].item<int64_t>();
    rows = t[3].item<int64_t>();
    loss_count = t[4].item<int64_t>();
    wall_before = rd("wall", true).item<double>();
    loss_sum = rd("loss_sum", true).to(fopts);
    if (auto x = opt_rd("perm"); x.defined()) perm = x.to(e.device);
    if (auto x = opt_rd("avg_test"); x.defined()) avg_test = x.to(e.device);
    if (auto x = opt_rd("avg_val"); x.defined()) avg_val = x.to(e.device);
    if (auto x = opt_rd("lse_test"); x.defined()) lse_test = x.to(e.device);
    if (auto x = opt_rd("lse_val"); x.defined()) lse_val = x.to(e.device);
    if (auto x = opt_rd("trace_ll"); x.defined())
      for (int64_t i = 0; i < x.size(0); ++i) trace_ll.push_back(x[i].clone());
    if (auto x = opt_rd("trace_w"); x.defined())
      for (int64_t i = 0; i < x.size(0); ++i) trace_w.push_back(x[i].clone());
    if (pos != 0 && !perm.defined()) throw std::invalid_argument(ckpt_path.string() + ": checkpoint lacks the data order");
    if (step > total)
      throw std::invalid_argument(ckpt_path.string() + ": checkpoint is at step " + std::to_string(step) +
                                  ", beyond the configured run (" + std::to_string(total) + " steps)");
  }

  // Everything is valid: now the run directory may be (re)created.
  if (replace_dir) fs::remove_all(dir);
  fs::create_directories(dir);
  // Resolved config (defaults filled in by every consumer above).
  write_atomic(dir / "config.yaml", to_yaml(cfg));
  for (const auto& [file, text] : data.run_files) write_atomic(dir / file, text);
  if (opt.resume) {
    // metrics.csv: keep the header and the rows the checkpoint knows about.
    std::ifstream in(dir / "metrics.csv");
    std::string line, kept;
    for (int64_t i = 0; i <= rows && std::getline(in, line); ++i) kept += line + "\n";
    in.close();
    write_atomic(dir / "metrics.csv", kept);
  }

  auto save_checkpoint = [&](bool force) {
    if (!cfg.output.checkpoint && !force) return;
    torch::serialize::OutputArchive ar;
    save_model(ar, model, "model.");
    torch::serialize::OutputArchive sa;
    sampler->save(sa);
    ar.write("sampler", sa);
    ar.write("prior.lambda", torch::tensor(prior.precisions(), torch::kFloat64));
    ar.write("gen_dev", compat::generator_state(gen_dev), true);
    ar.write("gen_cpu", compat::generator_state(gen_cpu), true);
    ar.write("counters", torch::tensor({step, pos, samples, rows, loss_count}, torch::kInt64), true);
    ar.write("wall", torch::tensor(wall_before + seconds_since(t_start), torch::kFloat64), true);
    ar.write("loss_sum", loss_sum, true);
    if (perm.defined()) ar.write("perm", perm, true);
    if (avg_test.defined()) ar.write("avg_test", avg_test, true);
    if (avg_val.defined()) ar.write("avg_val", avg_val, true);
    if (lse_test.defined()) ar.write("lse_test", lse_test, true);
    if (lse_val.defined()) ar.write("lse_val", lse_val, true);
    if (!trace_ll.empty()) ar.write("trace_ll", torch::stack(trace_ll), true);
    if (!trace_w.empty()) ar.write("trace_w", torch::stack(trace_w), true);
    replace_file_atomic(ckpt_path.string(), [&](const std::string& tmp) { ar.save_to(tmp); });
  };

  // metrics.csv columns: fixed ones, then the λ's, likelihood hyperparameters, sampler diagnostics.
  std::vector<std::string> columns;
  const std::string mname = classification ? "error" : "rmse";
  if (rows > 0) {
    std::ifstream in(dir / "metrics.csv");
    std::string header;
    std::getline(in, header);
    std::stringstream ss(header);
    for (std::string c; std::getline(ss, c, ',');) columns.push_back(c);
  }

  std::map<std::string, double> last;  // the latest evaluation
  const bool tty = !opt.quiet && cfg.output.progress && isatty(fileno(stderr));
  auto last_progress = Clock::now();
  const int64_t step_at_start = step;
  double eval_seconds = 0;

  auto evaluate = [&](bool sample_pred_fresh) {
    auto t0 = Clock::now();
    std::map<std::string, double> row;
    row["epoch"] = static_cast<double>(step) / spe;
    row["step"] = static_cast<double>(step);
    row["wall_seconds"] = wall_before + seconds_since(t_start);
    row["lr"] = sampler->lr();
    row["train_loss"] = loss_count ? loss_sum.item<double>() / loss_count : NAN;
    loss_sum.zero_();
    loss_count = 0;
    const double tau = tau_of(model);
    if (!sample_pred_fresh) last_test_pred = predict_all(model, data.test, chunk);
    for (auto& [k, v] : split_metrics(data, last_test_pred, data.test.targets, tau, torch::Tensor(), 0))
      row["sample_test_" + k] = v;
    if (samples > 0) {
      for (auto& [k, v] : split_metrics(data, avg_test / samples, data.test.targets, tau, lse_test, samples))
        row["test_" + k] = v;
      if (avg_val.defined())
        for (auto& [k, v] : split_metrics(data, avg_val / samples, data.val.targets, tau, lse_val, samples))
          row["val_" + k] = v;
    } else if (!is_sampler) {
      // Optimizers: the current iterate.
      row["test_" + mname] = row["sample_test_" + mname];
      row["test_nll"] = row["sample_test_nll"];
      if (data.val.size() > 0)
        for (auto& [k, v] : split_metrics(data, predict_all(model, data.val, chunk), data.val.targets, tau,
                                          torch::Tensor(), 0))
          row["val_" + k] = v;
    }
    row["samples"] = static_cast<double>(samples);
    for (auto& [k, v] : prior.log_values()) row[k] = v;
    for (auto& [k, v] : model.likelihood_hyperparameters()) row[k] = v;
    for (auto& [k, v] : sampler->diagnostics()) row["diag." + k] = v;
    const double session = seconds_since(t_start);
    row["steps_per_second"] = session > 0 ? (step - step_at_start) / session : NAN;

    if (columns.empty()) {
      columns = {"epoch", "step", "wall_seconds", "lr", "train_loss", "test_" + mname, "test_nll", "val_" + mname,
                 "val_nll", "sample_test_" + mname, "sample_test_nll", "samples", "steps_per_second"};
      for (auto& [k, v] : row)
        if (std::find(columns.begin(), columns.end(), k) == columns.end()) columns.push_back(k);
      std::string header;
      for (const auto& c : columns) header += (header.empty() ? "" : ",") + c;
      std::ofstream(dir / "metrics.csv") << header << "\n";
    }
    std::string line;
    for (size_t i = 0; i < columns.size(); ++i) {
      auto it = row.find(columns[i]);
      line += (i ? "," : "") + (it == row.end() ? std::string() : num(it->second));
    }
    std::ofstream(dir / "metrics.csv", std::ios::app) << line << "\n";
    ++rows;
    last = row;
    eval_seconds += seconds_since(t0);

    if (!opt.quiet) {
      if (tty) std::cerr << "\r\033[K";
      std::ostringstream s;
      s << std::fixed << "epoch " << std::setprecision(2) << row["epoch"] << "/" << static_cast<double>(total) / spe << " step " << step
        << " | loss " << std::setprecision(4) << row["train_loss"];
      auto pct = [&](const std::string& k) {
        auto it = row.find(k);
        std::ostringstream o;
        if (it == row.end() || !std::isfinite(it->second)) return std::string("-");
        if (classification && k.find("error") != std::string::npos) o << std::setprecision(2) << std::fixed << 100 * it->second << "%";
        else o << std::setprecision(4) << std::fixed << it->second;
        return o.str();
      };
      s << " | test " << mname << " " << pct("test_" + mname) << " nll " << pct("test_nll") << " (sample "
        << pct("sample_test_" + mname) << ") | samples " << samples;
      s << " | λ";
      for (auto& [k, v] : prior.log_values()) s << " " << std::setprecision(3) << std::defaultfloat << v;
      s << " | lr " << std::setprecision(3) << std::defaultfloat << sampler->lr() << " | " << std::setprecision(1)
        << std::fixed << row["steps_per_second"] << " steps/s | " << format_duration(row["wall_seconds"]);
      std::cout << s.str() << std::endl;
    }
  };

  // The closure: ∇Ũ into .grad; returns the data term (N/n)·nll(batch).
  Batch batch;
  torch::Tensor batch_nll;
  Closure closure = [&]() {
    sampler->zero_grad();
    batch_nll = model.nll(batch);
    auto u = batch_nll * scale;
    u.backward();
    prior.add_grad();
    return u.detach();
  };

  // train.graph (set up below, before the loop).
  std::unique_ptr<StepGraph> graph;
  torch::Tensor idx_static;
  std::function<void()> graph_body;

  // summary.json from the latest evaluation; `status` adds "diverged"/"interrupted" keys.
  auto write_summary = [&](bool finished, const std::string& status_json) {
    RunSummary summary;
    summary.run_dir = dir.string();
    summary.finished = finished;
    const double wall = wall_before + seconds_since(t_start);
    auto& v = summary.values;
    auto get = [&](const std::string& k) {
      auto it = last.find(k);
      return it == last.end() ? NAN : it->second;
    };
    v["test_" + mname] = get("test_" + mname);
    v["test_nll"] = get("test_nll");
    v["val_" + mname] = get("val_" + mname);
    v["val_nll"] = get("val_nll");
    if (!classification) {
      v["test_error"] = NAN;
      v["val_error"] = NAN;
    }
    v["sample_test_" + mname] = get("sample_test_" + mname);
    v["samples"] = static_cast<double>(samples);
    v["steps"] = static_cast<double>(step);
    v["epochs"] = static_cast<double>(step) / spe;
    v["wall_seconds"] = wall;
    const double session = seconds_since(t_start);
    v["steps_per_second"] = session > 0 ? (step - step_at_start) / session : NAN;
    v["train_steps_per_second"] =
        session - eval_seconds > 0 ? (step - step_at_start) / std::max(session - eval_seconds, 1e-9) : NAN;
    for (auto& [k, x] : prior.log_values()) v[k] = x;
    // Convergence diagnostics over the thinned samples (all chains): split-R̂ and ESS of the per-chain
    // test log-likelihood and of the first few weights (max R̂ / min ESS over those weights).
    v["chains"] = static_cast<double>(chains);
    if (graph) {  // this session's steps: warm-up (eager), captures, replays
      v["graph_warmup_steps"] = static_cast<double>(graph->warmups());
      v["graph_captures"] = static_cast<double>(graph->captures());
      v["graph_replays"] = static_cast<double>(graph->replays());
    }
    if (is_sampler && trace_ll.size() >= 4) {
      auto ll = torch::stack(trace_ll);  // [S, C]
      v["rhat_test_loglik"] = split_rhat(ll);
      v["ess_test_loglik"] = effective_sample_size(ll);
      auto w = torch::stack(trace_w);    // [S, C, k]
      double rmax = 0, emin = INFINITY;
      for (int64_t j = 0; j < w.size(2); ++j) {
        rmax = std::max(rmax, split_rhat(w.select(2, j)));
        emin = std::min(emin, effective_sample_size(w.select(2, j)));
      }
      v["rhat_weights_max"] = rmax;
      v["ess_weights_min"] = emin;
    }

    std::ostringstream js;
    js << "{\n";
    js << "  \"name\": \"" << json_escape(cfg.name) << "\",\n  \"sampler\": \"" << json_escape(cfg.sampler_name())
       << "\",\n  \"dataset\": \"" << json_escape(data.description) << "\",\n  \"runtime\": \""
       << json_escape(runtime_description()) << "\",\n  \"seed\": " << cfg.seed
       << ",\n  \"finished\": " << (summary.finished ? "true" : "false") << status_json;
    for (auto& [k, x] : v) js << ",\n  \"" << json_escape(k) << "\": " << json_num(x);
    js << "\n}\n";
    write_atomic(dir / "summary.json", js.str());
    return summary;
  };

  // Divergence: the minibatch loss is checked every step on the CPU (it is one host read); on an
  // accelerator (where that read would synchronise every step) the accumulated loss and the
  // parameters are checked at every evaluation, before anything is saved. checkpoint.pt is never
  // written from non-finite state, so the last good checkpoint survives.
  const bool check_loss_each_step = e.device.is_cpu();
  int64_t ckpt_step = opt.resume ? step : -1;
  auto diverge = [&](int64_t at_step, const std::string& what) {
    if (tty) std::cerr << "\r\033[K" << std::flush;
    std::ostringstream m;
    m << "run diverged at step " << at_step << " (" << cfg.sampler_name() << ", lr " << sampler->lr() << "): " << what
      << "; " << divergence_hint(cfg.sampler_name(), cfg.sampler);
    if (ckpt_step >= 0) m << " (last good checkpoint, step " << ckpt_step << ", kept in " << ckpt_path.string() << ")";
    write_summary(false, ",\n  \"diverged\": true,\n  \"diverged_step\": " + std::to_string(at_step) +
                             ",\n  \"diverged_reason\": \"" + json_escape(what) + "\"");
    throw RunDiverged(m.str());
  };
  auto checkpoint = [&](bool force) {
    if (!all_finite(params)) diverge(step, "non-finite parameters");
    if (loss_count > 0 && !std::isfinite(loss_sum.item<double>())) diverge(step, "non-finite loss");
    save_checkpoint(force);
    if (cfg.output.checkpoint || force) ckpt_step = step;
  };

  auto select_batch = [&](const torch::Tensor& idx) {
    batch.inputs = data.train.inputs.index_select(0, idx);
    batch.targets = data.train.targets.index_select(0, idx);
  };
  auto add_batch_loss = [&] { loss_sum += batch_nll.detach() / static_cast<double>(n * chains); };

  // train.graph: the step's device work is one body, captured once and replayed (StepGraph). Its
  // inputs are static buffers: the batch's indices (copied in before each step), the sampler's
  // per-step scalars (written by its kPrepare step), λ and τ (tensors updated in place by Gibbs).
  if (cfg.train.graph) {
    graph = std::make_unique<StepGraph>(e.device, gen_dev);
    idx_static = torch::zeros({n * chains}, torch::TensorOptions().dtype(torch::kInt64).device(e.device));
    graph_body = [&] {
      select_batch(idx_static);
      closure();
      sampler->launch_prepared();
      add_batch_loss();
    };
  }

  bool stopped = false;
  int interrupted = 0;
  while (step < total) {
    if (opt.stop_after_steps >= 0 && step >= opt.stop_after_steps) {
      stopped = true;
      break;
    }
    if (pos == 0) {
      if (chains == 1) perm = at::randperm(N, gen_dev, torch::TensorOptions().dtype(torch::kInt64).device(e.device));
      else  // one independent permutation per chain, [C, N]
        perm = at::rand({chains, N}, gen_dev, torch::TensorOptions().dtype(torch::kFloat64).device(e.device))
                   .argsort(/*dim=*/static_cast<int64_t>(1), /*descending=*/false);
    }
    auto idx = chains == 1 ? perm.slice(0, pos * n, pos * n + n) : perm.narrow(1, pos * n, n).reshape({-1});
    sampler->set_lr(schedule->at(step));
    if (graph) {
      idx_static.copy_(idx);
      sampler->step(closure);  // kPrepare: the host's part of the step only
      graph->run(graph_body, sampler->prepared_rules());
    } else {
      select_batch(idx);
      sampler->step(closure);
      add_batch_loss();
    }
    if (check_loss_each_step && !std::isfinite(batch_nll.item<double>())) diverge(step + 1, "non-finite loss");
    ++loss_count;
    ++step;
    if (++pos == spe) pos = 0;

    if (gibbs_every > 0 && step % gibbs_every == 0) {
      prior.gibbs_step(gen_cpu);
      model.gibbs_step_likelihood(data.train, gen_dev);
    }
    bool fresh = false;
    if (is_sampler && step > burn && (step - burn) % thin == 0) {
      if (!all_finite(params)) diverge(step, "non-finite parameters");
      auto pc = predict_all_chains(model, data.test, chunk);
      trace_ll.push_back(chain_log_likelihood(pc, data.test.targets, classification, tau_of(model)).cpu());
      trace_w.push_back(model.trace_values(kTraceWeights).to(torch::kCPU, torch::kFloat64));
      auto te = (chains == 1 ? pc[0] : pc.mean(0)).to(torch::kFloat64);
      avg_test = avg_test.defined() ? avg_test.add_(te) : te.clone();
      last_test_pred = te;
      fresh = true;
      if (data.standardized_targets) accumulate_lse(lse_test, mixture_log_density(pc, data.test.targets, tau_of(model)));
      if (data.val.size() > 0) {
        auto va = predict_all(model, data.val, chunk).to(torch::kFloat64);
        avg_val = avg_val.defined() ? avg_val.add_(va) : va.clone();
        if (data.standardized_targets)
          accumulate_lse(lse_val, mixture_log_density(chains == 1 ? va : predict_all_chains(model, data.val, chunk),
                                                      data.val.targets, tau_of(model)));
      }
      ++samples;
      if (cfg.output.save_samples) {
        fs::create_directories(dir / "samples");
        torch::serialize::OutputArchive ar;
        save_model(ar, model, "");
        char name[64];
        std::snprintf(name, sizeof name, "sample_%06lld.pt", static_cast<long long>(samples));
        ar.save_to((dir / "samples" / name).string());
      }
    }
    if (step % eval_every == 0 || step == total) {
      if (!all_finite(params)) diverge(step, "non-finite parameters");
      evaluate(fresh);
      checkpoint(false);
    }
    // SIGINT / SIGTERM: the step is complete; checkpoint and stop.
    if ((interrupted = signals::pending()) != 0) break;
    if (tty && std::chrono::duration<double>(Clock::now() - last_progress).count() > 0.5) {
      last_progress = Clock::now();
      const double el = seconds_since(t_start);
      const double rate = (step - step_at_start) / std::max(el, 1e-9);
      std::cerr << "\r\033[K[" << cfg.name << "] epoch " << step / spe << "/" << total / spe << "  step " << step
                << "/" << total << "  " << std::fixed << std::setprecision(1) << rate << " steps/s  ETA "
                << format_duration((total - step) / std::max(rate, 1e-9)) << std::flush;
    }
  }
  if (tty) std::cerr << "\r\033[K" << std::flush;
  if (interrupted) {
    checkpoint(/*force=*/true);
    write_summary(false, ",\n  \"interrupted\": \"" + signals::signal_name(interrupted) + "\"");
    throw RunInterrupted("interrupted by " + signals::signal_name(interrupted) + " after step " +
                             std::to_string(step) + "; checkpoint written to " + ckpt_path.string() +
                             " (continue with: sgmcmc train --resume " + dir.string() + ")",
                         interrupted);
  }
  if (stopped) checkpoint(false);
  if (!stopped && step == total && last.empty()) evaluate(false);  // resumed at the very end

  // Final parameters for `sgmcmc predict` (optimizers, or samplers that saved no samples).
  {
    torch::serialize::OutputArchive ar;
    save_model(ar, model, "");
    replace_file_atomic((dir / "final.pt").string(), [&](const std::string& tmp) { ar.save_to(tmp); });
  }
  return write_summary(!stopped, "");
}

std::map<std::string, double> predict_run(const std::string& run_dir, const std::vector<std::string>& overrides,
                                          const std::string& out_json, bool quiet) {
  fs::path dir(run_dir);
  if (!fs::exists(dir / "config.yaml")) throw std::invalid_argument(run_dir + ": not a run directory (no config.yaml)");
  Everything e;
  e.config = load_config((dir / "config.yaml").string(), overrides);
  build_data_and_model(e);
  Model& model = *e.model;
  const Dataset& data = e.data;
  std::vector<fs::path> files;
  if (fs::is_directory(dir / "samples"))
    for (auto& f : fs::directory_iterator(dir / "samples"))
      if (f.path().extension() == ".pt") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    if (!fs::exists(dir / "final.pt")) throw std::invalid_argument(run_dir + ": no samples/ and no final.pt to predict with");
    files.push_back(dir / "final.pt");
  }
  torch::Tensor sum_test, sum_val, lse_test, lse_val;
  const int64_t chunk = e.config.train.eval_batch_size;
  for (const auto& f : files) {
    torch::serialize::InputArchive ar;
    ar.load_from(f.string(), e.device);
    load_model(ar, model, "", f.string());
    auto te = predict_all(model, data.test, chunk).to(torch::kFloat64);
    sum_test = sum_test.defined() ? sum_test + te : te;
    if (data.standardized_targets) accumulate_lse(lse_test, gaussian_log_density(te, data.test.targets, tau_of(model)));
    if (data.val.size() > 0) {
      auto va = predict_all(model, data.val, chunk).to(torch::kFloat64);
      sum_val = sum_val.defined() ? sum_val + va : va;
      if (data.standardized_targets) accumulate_lse(lse_val, gaussian_log_density(va, data.val.targets, tau_of(model)));
    }
  }
  const double k = static_cast<double>(files.size());
  const double tau = tau_of(model);
  std::map<std::string, double> out;
  const auto nk = static_cast<int64_t>(files.size());
  for (auto& [m, x] : split_metrics(data, sum_test / k, data.test.targets, tau, lse_test, nk)) out["test_" + m] = x;
  if (sum_val.defined())
    for (auto& [m, x] : split_metrics(data, sum_val / k, data.val.targets, tau, lse_val, nk)) out["val_" + m] = x;
  out["samples"] = k;
  if (!out_json.empty()) {
    std::ostringstream js;
    js << "{\n  \"dataset\": \"" << json_escape(data.description) << "\"";
    for (auto& [key, x] : out) js << ",\n  \"" << key << "\": " << json_num(x);
    js << "\n}\n";
    write_atomic(out_json, js.str());
  }
  if (!quiet) {
    std::cout << data.description << "\n";
    for (auto& [key, x] : out) std::cout << "  " << key << ": " << x << "\n";
  }
  return out;
}

}  // namespace sgmcmc
