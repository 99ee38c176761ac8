// TrainingRun's checkpoint (checkpoint.pt) and summary (summary.json).
//
// checkpoint.pt keys (kept from the first format, so runs of earlier versions resume): model.<name>,
// "sampler" (the sampler's own archive), prior.lambda, gen_dev, gen_cpu, counters = [step,
// position in the epoch, samples, metrics rows, steps in the loss], wall (seconds before this
// session), loss_sum, perm, avg_/lse_<split> (PosteriorPredictive), trace_ll / trace_w, config,
// health (HealthCheck's state, JSON text).
#include <cmath>
#include <set>
#include <sstream>

#include "compat.h"
#include "runtime/cpu.h"
#include "core/atomic_file.h"
#include "kernels/gemm_lt.h"
#include "train/checkpoint_check.h"
#include "train/model_io.h"
#include "train/training_run.h"

namespace sgmcmc {

void TrainingRun::save_checkpoint() const {
  torch::serialize::OutputArchive ar;
  save_model(ar, model_, "model.");
  torch::serialize::OutputArchive sa;
  s_.sampler->save(sa);
  ar.write("sampler", sa);
  ar.write("prior.lambda", torch::tensor(s_.prior->precisions(), torch::kFloat64));
  ar.write("gen_dev", compat::generator_state(s_.gen_dev), true);
  ar.write("gen_cpu", compat::generator_state(s_.gen_cpu), true);
  ar.write("counters",
           torch::tensor({step_, batches_.position(), predictive_.count(), log_->rows(), loss_.count()}, torch::kInt64),
           true);
  ar.write("wall", torch::tensor(wall_before_ + session_seconds(), torch::kFloat64), true);
  loss_.save(ar);
  batches_.save(ar);
  predictive_.save(ar);
  trace_.save(ar);
  if (dist_.active()) ar.write("world_size", torch::tensor(static_cast<int64_t>(dist_.world_size())), true);
  ar.write(kConfigKey, c10::IValue(to_yaml(cfg_)));  // compared on --resume (checkpoint_check.h)
  ar.write("health", c10::IValue(health_.save_state()));
  ar.write("metrics_csv", c10::IValue(log_->text()));
  ar.write("sample_stride", torch::tensor(save_every_), true);  // an extended run thins samples/ from it  // a resume writes it back (metrics_log.h)
  add_checksum(ar);
  // Serialised in memory, then written with write(2): LibTorch's file writer finishes the zip in its
  // destructor, where a full disk is an exception that terminates the process.
  std::ostringstream bytes;
  ar.save_to(bytes);
  const std::string data = bytes.str();
  dir_.write_checkpoint([&](const std::string& tmp) { write_bytes(tmp, data); });
}

void TrainingRun::load_checkpoint(const std::string& file) {
  torch::serialize::InputArchive ar;
  try {
    ar.load_from(file, s_.dm.device);
  } catch (const c10::Error& ex) {
    std::string what = ex.what_without_backtrace();
    throw std::invalid_argument(file + ": not a readable checkpoint (" + what.substr(0, what.find('\n')) + ")");
  }
  verify_checksum(ar, file);
  check_resumed_config(ar, file);
  torch::Tensor world;  // written by distributed runs only
  const int64_t written_by = ar.try_read("world_size", world, true) ? world.item<int64_t>() : 1;
  if (written_by != dist_.world_size())
    throw std::invalid_argument(file + ": the checkpoint was written by " + std::to_string(written_by) +
                                " process(es) and this run has world size " + std::to_string(dist_.world_size()));
  load_model(ar, model_, "model.", file);
  torch::serialize::InputArchive sa;
  ar.read("sampler", sa);
  s_.sampler->load(sa);
  // A fresh tensor per key: InputArchive::read into a defined tensor resizes it in place.
  auto rd = [&](const std::string& key, bool is_buffer) {
    torch::Tensor x;
    ar.read(key, x, is_buffer);
    return x;
  };
  torch::Tensor t = rd("prior.lambda", false).cpu().contiguous();
  s_.prior->set_precisions(std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel()));
  compat::set_generator_state(s_.gen_dev, rd("gen_dev", true).cpu());
  compat::set_generator_state(s_.gen_cpu, rd("gen_cpu", true).cpu());
  t = rd("counters", true).cpu();
  torch::Tensor perm;
  ar.try_read("perm", perm, true);
  check_checkpoint_state(file, t, s_.prior->precisions(), perm, s_.plan.train_size, s_.plan.steps_per_epoch,
                         model_.minibatch_chains());
  step_ = t[0].item<int64_t>();
  rows_at_resume_ = t[3].item<int64_t>();
  evaluations_ = rows_at_resume_;  // the probes' schedule counts the run's evaluations, not the session's
  c10::IValue health;
  if (ar.try_read("health", health) && health.isString()) {  // absent in checkpoints of earlier versions
    try {
      health_.load_state(health.toStringRef());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(file + ": " + e.what());
    }
  }
  torch::Tensor stride;
  if (ar.try_read("sample_stride", stride, true)) stride_at_resume_ = stride.item<int64_t>();
  c10::IValue metrics;
  if (ar.try_read("metrics_csv", metrics) && metrics.isString()) metrics_at_resume_ = metrics.toStringRef();
  wall_before_ = rd("wall", true).item<double>();
  loss_.load(ar, t[4].item<int64_t>());
  batches_.load(ar, t[1].item<int64_t>(), file);
  predictive_.load(ar, s_.dm.device, t[2].item<int64_t>(), {"test", "val", "ood"});
  trace_.load(ar, s_.dm.device);
  if (step_ > s_.plan.total_steps)
    throw std::invalid_argument(file + ": checkpoint is at step " + std::to_string(step_) +
                                ", beyond the configured run (" + std::to_string(s_.plan.total_steps) + " steps)");
  guard_.checkpoint_written(step_);
}

std::map<std::string, double> TrainingRun::summary_values() const {
  auto get = [&](const std::string& k) {
    auto it = last_.find(k);
    return it == last_.end() ? NAN : it->second;
  };
  const std::string m = eval_.headline();
  std::map<std::string, double> v;
  for (const auto& k : std::vector<std::string>{"test_" + m, "test_nll", "val_" + m, "val_nll", "sample_test_" + m})
    v[k] = get(k);
  for (const auto& [k, x] : last_)  // every metric of the latest evaluation (calibration, intervals, ...)
    if (k.rfind("test_", 0) == 0 || k.rfind("val_", 0) == 0 || k.rfind("sample_test_", 0) == 0 || k.rfind("ood_", 0) == 0)
      v[k] = x;
  if (!eval_.classification()) v["test_error"] = v["val_error"] = NAN;
  v["samples"] = static_cast<double>(predictive_.count());
  v["steps"] = static_cast<double>(step_);
  v["epochs"] = s_.plan.epoch(step_);
  v["wall_seconds"] = wall_before_ + session_seconds();
  const double session = loop_seconds();  // the rates leave out the pilot and the setup
  v["steps_per_second"] = steps_per_second();
  const auto phases = phases_.seconds();  // this session's wall clock by phase
  const double eval = phases.at("time.eval");
  v["train_steps_per_second"] = session - eval > 0 ? (step_ - step_at_start_) / std::max(session - eval, 1e-9) : NAN;
  for (const auto& [k, x] : s_.prior->log_values()) v[k] = x;
  v["chains"] = static_cast<double>(model_.chains());
  v["threads"] = static_cast<double>(torch::get_num_threads());  // intra-op threads (runtime has the details)
  for (const auto& [k, x] : steps_.graph_counts()) v[k] = x;  // this session's warm-ups, captures, replays
  if (sample_graph_.capture() || gibbs_graph_.capture()) {  // the samples', evaluations' and Gibbs steps' graphs
    v["graph_epoch_captures"] =
        static_cast<double>(sample_graph_.captures() + eval_graph_.captures() + gibbs_graph_.captures());
    v["graph_epoch_replays"] = static_cast<double>(sample_graph_.replays() + eval_graph_.replays() + gibbs_graph_.replays());
  }
  for (const auto& [k, x] : phases) v[k] = x;
  for (const auto& [k, x] : s_.seconds) v[k] = x;  // time.launch and the setup's parts
  // inside time.steps (the fused pass's products; predictions run ATen's): cuBLASLt's one-off measuring of
  // each new shape (kernels.cuda_mlp_gemm: cublaslt without a cached choice), which a short run's per-step
  // rate should be read without
#if defined(SGMCMC_WITH_CUDA)
  if (kernels::gemm_lt_built()) v["gemm_lt_measure_seconds"] = kernels::gemm_lt_measure_seconds() - gemm_lt_before_;
#endif
  // the chain's effective temperature at its hottest gradient-noise probe (train/health.h)
  if (std::isfinite(health_.max_effective_temperature())) {
    v["effective_temperature"] = health_.max_effective_temperature();
    v["temperature"] = s_.sampler->temperature();
  }
  if (s_.sampler->is_sampler())  // split-R̂ and ESS over the thinned samples (of every rank's chains)
    for (const auto& [k, x] : dist_.chains_across_ranks() ? convergence_all_ranks_ : trace_.diagnostics()) v[k] = x;
  if (dist_.active()) {
    v["world_size"] = dist_.world_size();
    v["chains_all_ranks"] = static_cast<double>(std::max<int64_t>(model_.chains(), 1) * (dist_.data_parallel() ? 1 : dist_.world_size()));
  }
  return v;
}

RunSummary TrainingRun::write_summary(bool finished, const nlohmann::ordered_json& status) const {
  RunSummary summary;
  summary.run_dir = dir_.path().string();
  summary.finished = finished;
  summary.rank = dist_.rank();
  summary.values = summary_values();
  nlohmann::ordered_json j = {{"name", cfg_.name},
                              {"sampler", cfg_.sampler_name()},
                              {"dataset", data_.description},
                              {"runtime", runtime_description()},
                              {"kernels", cfg_.kernels.to_map()},
                              {"seed", cfg_.seed},
                              {"finished", finished}};
  if (dist_.active()) j["distributed_mode"] = cfg_.distributed.mode;
  for (const auto& [k, x] : status.items()) j[k] = x;
  // Counts as JSON integers, the rest as numbers (non-finite ones are written as null).
  static const std::set<std::string> counts = {"samples", "steps", "chains", "threads", "world_size", "chains_all_ranks",
                                               "graph_warmup_steps", "graph_captures", "graph_replays",
                                               "graph_block_warmups", "graph_block_captures", "graph_block_replays",
                                               "graph_epoch_captures", "graph_epoch_replays", "graph_updates_in_model"};
  for (const auto& [k, x] : summary.values) {
    if (counts.count(k) && std::isfinite(x)) j[k] = static_cast<int64_t>(x);
    else j[k] = x;
  }
  // The objects after the run's own values (readers that search the text for "test_nll" find those).
  summary.worse_than_trivial = finished && health_.worse_than_trivial(last_);
  // A sampler's chain that never moved reads as converged (R-hat 1 on constant series) unless it is
  // named: an unhealthy end, as a predictive worse than the trivial one is.
  const auto stalled_value = summary.values.find("stalled");
  summary.stalled = finished && s_.sampler->is_sampler() && stalled_value != summary.values.end() &&
                    stalled_value->second == 1;
  summary.require_healthy = cfg_.train.require_healthy;
  // a stall is the more specific diagnosis: a chain that never moved is worse than trivial for that reason
  if (summary.stalled) summary.health_message = HealthCheck::stalled_message();
  else if (summary.worse_than_trivial) summary.health_message = health_.trivial_message(last_);
  j["health"] = health_.to_json(summary.worse_than_trivial, summary.stalled, step_);
  if (s_.sampler->is_sampler())  // the verdict over every traced quantity (train/convergence_trace.h)
    if (const auto verdict = ConvergenceTrace::verdict_of_summary(summary.values))
      j["convergence"] = {{"ok", verdict->empty()}, {"verdict", verdict->empty() ? "ok" : *verdict}};
  if (!opt_.lr_auto_json.empty()) j["lr_auto"] = nlohmann::ordered_json::parse(opt_.lr_auto_json);
  if (const auto autos = auto_values(); !autos.empty()) {
    nlohmann::ordered_json a = nlohmann::ordered_json::object();
    for (const auto& [k, v] : autos) a[k] = static_cast<int64_t>(v);
    j["auto"] = a;
  }
  dir_.write_summary(j);
  return summary;
}

}  // namespace sgmcmc
