#include "train/trainer.h"

#include <cmath>
#include <iostream>
#include <optional>
#include <sstream>

#include "kernels/cuda_mlp/gemm_lt.h"
#include "metrics/reliability.h"
#include "runtime/cpu.h"
#include "train/lr_pilot.h"
#include "train/training_run.h"
#include "core/process_age.h"
#include "core/signals.h"

namespace sgmcmc {
namespace {

void apply_runtime_settings(const ExperimentConfig& config) {
  const TrainConfig& train = config.train;
  set_kernel_settings(config.kernels);
  tune_allocator();
  if (const int n = resolve_cpu_threads(train.threads); n > 0) set_cpu_threads(n);
  set_flush_denormal(train.flush_denormal);
  // TF32 tensor-core matmuls and convolutions on CUDA: ~10-bit mantissa products, off by default.
  at::globalContext().setAllowTF32CuBLAS(train.tf32);
  at::globalContext().setAllowTF32CuDNN(train.tf32);
}

// The test metrics of the trivial predictor: the uniform predictive's NLL (classification) or the training
// targets' mean's RMSE through the same Evaluator as the run's own (regression).
Metrics trivial_test_metrics(const Evaluator& eval, const Dataset& data, double tau) {
  if (data.test.size() == 0) return {};
  // the uniform predictive's NLL is log K for every label: no prediction to evaluate (on a GPU that would
  // be the run's first metrics kernels, inside the start-up)
  // (a corpus's held-out words: uniform over its W words, data/bow.h)
  const int64_t classes = data.dims.count("words") ? data.dims.at("words") : data.num_classes;
  if (eval.classification()) return {{"test_nll", std::log(static_cast<double>(std::max<int64_t>(classes, 2)))}};
  torch::NoGradGuard no_grad;
  const auto mean = data.train.targets.to(torch::kFloat64).mean();
  const torch::Tensor prediction =
      torch::full_like(data.test.targets, 0, data.test.targets.options().dtype(torch::kFloat32)) + mean.to(torch::kFloat32);
  return {{"test_rmse", eval.metrics(prediction, data.test, tau).at("rmse")}};
}

double seconds_since(TrainingRun::Clock::time_point t0) {
  return std::chrono::duration<double>(TrainingRun::Clock::now() - t0).count();
}

// f()'s value; its seconds into `into[key]` (a part of the start-up in summary.json).
template <class F>
auto timed(std::map<std::string, double>& into, const std::string& key, F&& f) {
  const auto t0 = TrainingRun::Clock::now();
  auto value = f();
  into[key] = seconds_since(t0);
  return value;
}

// The run itself, once the config is final: the directory, the setup on this rank's place, the loop.
RunSummary run_setup_and_train(const ExperimentConfig& config, const RunOptions& opt, TrainingRun::Clock::time_point start,
                               std::optional<double> launch, DistributedRun dist) {
  RunOptions o = opt;
  o.quiet = opt.quiet || dist.rank() > 0;  // rank 0 prints
  RunDirectory dir = RunDirectory::prepare(opt.out_dir, config.output.dir, config.name, opt.resume, opt.overwrite,
                                           dist.rank(), dist.world_size());
  RunPlace place;
  place.device = dist.device_for(config.device);  // LOCAL_RANK picks the GPU
  if (dist.chains_across_ranks()) place.chain_seed = rank_seed(config.seed, dist.rank());
  RunSetup setup = make_run_setup(config, place);
  if (launch) setup.seconds["time.launch"] = *launch;
  TrainingRun run(std::move(setup), std::move(dir), o, start, std::move(dist));
  return run.run();
}

}  // namespace

RunSummary run_training(const ExperimentConfig& config, const RunOptions& opt) {
  const auto start = TrainingRun::Clock::now();
  const std::optional<double> launch = process_age_seconds();  // before this clock: outside wall_seconds
  apply_runtime_settings(config);
  DistributedRun dist = join_distributed(config, opt.resume ? opt.out_dir : std::string());
  if (config.lr_auto && !opt.resume) {
    // The run directory's checks (it exists without --overwrite, it is not a run's, another process holds
    // it) before the pilot's minutes: prepare() writes nothing.
    RunDirectory::prepare(opt.out_dir, config.output.dir, config.name, opt.resume, opt.overwrite, dist.rank(),
                          dist.world_size());
    // The pilot before the run directory is touched; every rank runs the same trials (config.seed) and
    // so chooses the same step. The chosen value is what config.yaml records.
    const bool speak = !opt.quiet && config.output.progress && dist.rank() == 0;  // its lines are progress
    const LrChoice choice = choose_lr(config, {dist.device_for(config.device), std::nullopt}, [&](const std::string& line) {
      if (speak) std::cout << config.name << ": " << line << std::endl;
    });
    std::ostringstream lr;
    lr.precision(6);
    lr << choice.lr;
    if (!opt.quiet && dist.rank() == 0)
      std::cout << config.name << ": sampler.lr: auto -> " << lr.str() << " (" << choice.why << "; "
                << std::lround(choice.seconds) << " s)" << std::endl;
    ExperimentConfig chosen = config;
    chosen.sampler.set("lr", lr.str());
    chosen.lr_auto = false;
    if (choice.batch_size > 0) chosen.train.batch_size = choice.batch_size;
    // The pilot's settled τ̂ is where the chain starts: the step was chosen for the likelihood at that
    // precision, and its Gibbs step moves τ on from there (config.yaml records it, as it does the step).
    if (std::isfinite(choice.tau)) {
      std::ostringstream tau;
      tau.precision(6);
      tau << choice.tau;
      chosen.model.set("noise_precision", tau.str());
      if (!opt.quiet && dist.rank() == 0)
        std::cout << config.name << ": model.noise_precision -> " << tau.str() << " (the pilot's settled tau, the chain's start)" << std::endl;
    }
    RunOptions o = opt;
    o.lr_auto_json = choice.to_json().dump();
    return run_setup_and_train(chosen, o, start, launch, std::move(dist));
  }
  return run_setup_and_train(config, opt, start, launch, std::move(dist));
}

TrainingRun::TrainingRun(RunSetup setup, RunDirectory dir, const RunOptions& options, Clock::time_point start,
                         DistributedRun dist)
    : s_(std::move(setup)),
      temperature_(s_.sampler->temperature()),
      dist_(std::move(dist)),
      cfg_(s_.config),
      model_(*s_.dm.model),
      data_(s_.dm.data),
      dir_(std::move(dir)),
      opt_(options),
      start_(start),
      phases_(start, s_.dm.device),
      last_checkpoint_(start),
      eval_(data_, cfg_.train.eval_batch_size),
      predictive_(data_.task == Task::kRegression && !data_.clip),
      loss_(s_.dm.device),
      batches_(s_.plan.train_size, s_.plan.batch_size, model_.minibatch_chains(), s_.dm.device, s_.gen_dev),
      steps_(model_, *s_.sampler, *s_.prior, data_.train, s_.plan.grad_scale(), s_.plan.batch_size, loss_,
             s_.plan.graph, s_.dm.device, s_.gen_dev, s_.plan.graph_steps),
      console_(cfg_.name, opt_.quiet, cfg_.output.progress, eval_.classification(),
               static_cast<double>(s_.plan.total_steps) / s_.plan.steps_per_epoch),
      guard_(cfg_.sampler_name(), cfg_.sampler, s_.params, s_.dm.device.is_cpu(), dir_.checkpoint_path().string(),
             [this](int64_t at, const std::string& what) {
               console_.clear();
               write_summary(false, {{"diverged", true}, {"diverged_step", at}, {"diverged_reason", what}});
             }),
      health_(eval_.classification(),
              timed(s_.seconds, "time.setup.trainer.trivial_metrics",
                    [&] { return trivial_test_metrics(eval_, data_, tau_of(model_)); }),
              cfg_.sampler_name(), s_.sampler->temperature()),
      noise_probe_(cfg_.seed, s_.plan.grad_scale(), s_.plan.batch_size),
      // classification only: a regression's sums and metrics take τ, a host scalar that each Gibbs step
      // changes; OOD scores are ranked on the host; a distributed run's collectives are not captured
      sample_graph_(s_.dm.device, resolve_graph_epoch(cfg_.train, s_.plan.graph) && eval_.classification() && data_.ood.size() == 0 && !dist_.active()),
      eval_graph_(s_.dm.device, sample_graph_.capture()),
      gibbs_graph_(s_.dm.device, resolve_graph_epoch(cfg_.train, s_.plan.graph) && !dist_.active(), s_.gen_dev),
      sample_count_(torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(s_.dm.device))) {
#if defined(SGMCMC_WITH_CUDA)  // (a CPU build has no CUDA sources, gemm_lt's among them)
  gemm_lt_before_ = kernels::gemm_lt_measure_seconds();
#endif
  // the parts' construction (the step runner, the evaluator, the minibatch stream, the trivial
  // predictor's metrics, the per-epoch graphs' holders); the rest is the run directory's files
  s_.seconds["time.setup.trainer.members"] = seconds_since(s_.built_at);
  steps_.use_model_backward(cfg_.train.backward == "auto");
  console_.set_headline(eval_.headline());
  save_every_ = sample_file_stride();
  if (opt_.resume) {  // a distributed run: the latest checkpoint of the same step on every rank
    load_checkpoint(dist_.agreed_checkpoint(dir_.checkpoint_path().string(), dir_.previous_checkpoint_path().string()));
    dist_.check_same_step(step_, dir_.checkpoint_path().string());
    if ((finished_before_ = finished_before())) return;  // run() says so; nothing is written
  }
  // The resolved config (every consumer's defaults filled in), by rank 0 once every rank has checked
  // the directory and before any rank writes into it.
  std::string yaml = to_yaml(cfg_);
  const auto autos = auto_values();
  if (!autos.empty()) {  // what `auto` became for this data set (summary.json "auto" too)
    yaml += "# auto, for this data set:";
    for (const auto& [k, v] : autos) yaml += " " + k + "=" + std::to_string(static_cast<int64_t>(v));
    yaml += "\n";
    if (!opt_.quiet && dir_.writes_run_files() && !opt_.resume) {
      std::cout << cfg_.name << ": auto:";
      for (const auto& [k, v] : autos) std::cout << " " << k << "=" << static_cast<int64_t>(v);
      std::cout << std::endl;
    }
  }
  dist_.barrier();
  if (dir_.writes_run_files()) dir_.commit(yaml, data_.run_files);
  dist_.barrier();
  if (!dir_.writes_run_files()) dir_.commit(yaml, data_.run_files);
  if (opt_.resume && save_every_ > 0 && stride_at_resume_ != save_every_) {
    // A run extended (or cut) on resume expects another number of samples: the new stride, a multiple of
    // the one the files on disk were written at, keeps samples/ within output.max_samples and evenly spread
    // (a file a longer run would not have written goes).
    if (stride_at_resume_ > 0)
      save_every_ = stride_at_resume_ * ((save_every_ + stride_at_resume_ - 1) / stride_at_resume_);
    if (dist_.writes_parameters()) dir_.thin_samples(save_every_);
  }
  log_ = std::make_unique<MetricsLog>(dir_.writes_run_files() ? dir_.file("metrics.csv") : std::filesystem::path(),
                                      eval_.headline(), opt_.resume ? rows_at_resume_ : 0,
                                      metrics_at_resume_);
  if (dist_.data_parallel())
    steps_.set_gradient_reduction([this](torch::Tensor& nll) { dist_.reduce_gradient(s_.params, nll); });
  step_at_start_ = step_;
  s_.seconds["time.setup.trainer"] = seconds_since(s_.built_at);
  loop_start_ = Clock::now();
}

// The loop, as the papers write it: for each step a minibatch, ∇Ũ and the sampler's update; every
// Gibbs interval the hyperparameters; after burn-in every `thin` steps a sample into the posterior
// predictive; every evaluation interval a metrics row and a checkpoint.
RunSummary TrainingRun::run() {
  if (finished_before_) return already_finished();
  const RunPlan& plan = s_.plan;
  int signal = 0;
  Stop stop;
  while ((stop = stop_reason(signal)) == Stop::kNone) try {
    phases_.enter(PhaseClock::kSteps);
    step();
    if (pending_eval_ && step_ - pending_eval_->step >= s_.plan.eval_lag) complete_evaluation();
    // A staged schedule's exploration runs noise-free: no samples, and no Gibbs steps either (λ drawn
    // given an optimiser's θ would shrink the prior step after step: docs/uncertainty.md).
    const bool sampling_stage = s_.schedule->sampling(step_ - 1);
    if (plan.gibbs_due(step_) && sampling_stage) {
      complete_evaluation();  // a deferred row reads the λ of its own step
      phases_.enter(PhaseClock::kGibbs);
      gibbs_step();
    }
    const bool sampled = plan.sample_due(step_) && sampling_stage;
    if (sampled) {
      complete_evaluation();  // and the predictive of its own step
      phases_.enter(PhaseClock::kSamples);
      collect_sample();
    }
    if (plan.eval_due(step_)) {
      complete_evaluation();
      phases_.enter(PhaseClock::kEval);
      evaluate(sampled);
      if (!pending_eval_) {
        phases_.enter(PhaseClock::kCheckpoint);
        checkpoint(/*force=*/false);
      }
    }
    signal = dist_.agree_on_signal(signals::pending(), step_);  // SIGINT / SIGTERM: the step is complete; checkpoint and stop
    console_.progress(step_, plan.total_steps, plan.steps_per_epoch, steps_per_second());
    if (!told_first_epoch_ && step_ - step_at_start_ >= plan.steps_per_epoch && step_ < plan.total_steps) {
      told_first_epoch_ = true;  // (a graph block may step past the epoch's end)
      console_.first_epoch(loop_seconds(), (plan.total_steps - step_) / steps_per_second());
    }
  } catch (const c10::Error& e) {
    console_.clear();
    guard_.diverge_on_error(step_, s_.sampler->lr(), e);
  } catch (const std::runtime_error& e) {  // the Gibbs step, a sample or an evaluation overflowed (DivergenceGuard)
    console_.clear();
    guard_.diverge_on_error(step_, s_.sampler->lr(), e);
  }
  complete_evaluation();
  phases_.enter(PhaseClock::kFinish);
  return finish(stop, signal);
}

TrainingRun::Stop TrainingRun::stop_reason(int signal) const {
  if (signal != 0) return Stop::kSignal;
  if (step_ >= s_.plan.total_steps) return Stop::kFinished;
  if (opt_.stop_after_steps >= 0 && step_ >= opt_.stop_after_steps) return Stop::kStepLimit;
  return Stop::kNone;
}

// A block of train.graph_steps steps where nothing is due after any but its last (the checks that
// follow each step of run()'s loop: a Gibbs step, a sample, an evaluation, the end or a step limit). A
// deferred row (train.eval_lag) due inside it is read after the block instead: the same row, since
// nothing it reads changes before the next Gibbs step, sample or evaluation. DivergenceGuard's
// every-step loss check (the CPU's) runs after each step of the block.
bool TrainingRun::block_fits() const {
  const int64_t k = steps_.block_steps();
  if (k <= 1 || dist_.active()) return false;
  const int64_t last = step_ + k;
  if (opt_.stop_after_steps >= 0 && last > opt_.stop_after_steps) return false;
  return s_.plan.next_due(step_) >= last;  // total_steps at the latest
}

void TrainingRun::step_block() {
  const int64_t k = steps_.block_steps(), first = step_;
  const auto idx = batches_.next_block(k);
  const bool stages = s_.schedule->has_stages();
  try {
    steps_.step_block(
        idx,
        [&](int64_t j) {
          s_.sampler->set_lr(s_.schedule->at(first + j));
          if (stages) s_.sampler->set_temperature(s_.schedule->sampling(first + j) ? temperature_ : 0.0);
        },
        [&](int64_t j) { guard_.check_step_loss(first + j + 1, steps_.batch_nll(), s_.schedule->at(first + j)); });
  } catch (const c10::Error& e) {
    console_.clear();
    guard_.diverge_on_error(first + k, s_.sampler->lr(), e);
  } catch (const std::runtime_error& e) {
    console_.clear();
    guard_.diverge_on_error(first + k, s_.sampler->lr(), e);
  }
  step_ += k;
}

void TrainingRun::step() {
  if (block_fits()) {
    step_block();
    return;
  }
  auto idx = dist_.shard(batches_.next());
  s_.sampler->set_lr(s_.schedule->at(step_));
  if (s_.schedule->has_stages()) s_.sampler->set_temperature(s_.schedule->sampling(step_) ? temperature_ : 0.0);
  try {
    steps_.step(idx);
  } catch (const c10::Error& e) {
    console_.clear();
    guard_.diverge_on_error(step_ + 1, s_.sampler->lr(), e);
  } catch (const std::runtime_error& e) {  // e.g. a step so large that a float overflows inside LibTorch
    console_.clear();
    guard_.diverge_on_error(step_ + 1, s_.sampler->lr(), e);
  }
  guard_.check_step_loss(step_ + 1, steps_.batch_nll(), s_.sampler->lr());
  ++step_;
}

void TrainingRun::gibbs_step() {
  GaussianPrior& prior = *s_.prior;
  if (prior.draw_on_device()) {  // into the λ buffers with no sync; the host reads the draw when it needs λ
    std::vector<int64_t> key;
    if (gibbs_graph_.capture())
      for (const auto& p : s_.params) key.push_back(address_key(p));
    prior.draw_pending(gibbs_graph_.run(key, [&] { return prior.gibbs_draw_on_device(s_.gen_dev); }));
  } else {
    prior.gibbs_step(s_.gen_cpu);
  }
  model_.gibbs_step_likelihood(data_.train, s_.gen_dev);
}

void TrainingRun::collect_sample() {
  // θ is checked before it enters the predictive; where an evaluation follows at this step, its own
  // read checks it (evaluation_row: no sync of its own here), and the run stops there before
  // anything is written.
  if (!s_.plan.eval_due(step_)) guard_.check_state(step_, s_.sampler->lr());
  const double tau = tau_of(model_);
  const SampleOut& out = sample_graph_.run(phase_key(predictive_), [&] { return sample_device(tau); });
  trace_.record(out.test_loglik, out.weights, out.predictions);
  current_test_ = out.current_test;
  predictive_.end_sample();
  if (save_every_ > 0 && predictive_.count() % save_every_ == 0 && dist_.writes_parameters()) {
    guard_.check_state(step_, s_.sampler->lr());
    dir_.save_sample(model_, predictive_.count(), state_scalars());
  }
}

// A sample's device work: its predictions on test (and validation, OOD) into the running sums, the
// trace's values. The first sample defines the sums; later ones add into them in place.
TrainingRun::SampleOut TrainingRun::sample_device(double tau) {
  // float64 once here, where the trace, the sums and the entropies would each widen the predictions
  const auto predict = [&](const Batch& split) { return eval_.predict_chains(model_, split).to(torch::kFloat64); };
  SampleOut out;
  auto test = predict(data_.test);
  out.test_loglik = chain_log_likelihood(test, data_.test.targets, eval_.classification(), tau);
  out.weights = model_.trace_values(ConvergenceTrace::kWeights);
  out.predictions = ConvergenceTrace::traced_predictions(test, data_.test.targets);
  out.current_test = predictive_.add("test", test, data_.test.targets, tau);
  if (data_.val.size() > 0) predictive_.add("val", predict(data_.val), data_.val.targets, tau);
  if (data_.ood.size() > 0) predictive_.add("ood", predict(data_.ood), data_.ood.targets, tau);
  return out;
}

std::vector<int64_t> TrainingRun::phase_key(const PosteriorPredictive& predictive) const {
  std::vector<int64_t> key;
  if (!sample_graph_.capture()) return key;
  for (const auto& p : s_.params) key.push_back(address_key(p));
  for (const Batch* split : {&data_.test, &data_.val}) {
    key.push_back(address_key(split->inputs));
    key.push_back(address_key(split->targets));
  }
  for (const auto& t : predictive.buffers()) key.push_back(address_key(t));
  return key;
}

void TrainingRun::evaluate(bool sample_fresh) {
  // θ's finiteness is read with the metrics (evaluation_row), except before the ranks compare their
  // parameters, where a NaN would read as ranks out of step rather than as a divergence
  if (dist_.data_parallel()) guard_.check_state(step_, s_.sampler->lr());
  dist_.check_in_sync(s_.params, step_);
  if (eval_lag_on()) {
    begin_evaluation(sample_fresh);
    return;
  }
  if (dist_.chains_across_ranks()) {  // the predictive and R̂ / ESS over the chains of every rank
    last_ = evaluation_row(sample_fresh, predictive_.all_ranks(dist_.comm()));
    if (s_.sampler->is_sampler()) convergence_all_ranks_ = trace_.all_ranks(dist_.comm()).diagnostics();
  } else {
    last_ = evaluation_row(sample_fresh, predictive_);
  }
  report_evaluation(step_, gradient_noise_probe());
}

// The probe's minibatch gradients at the current θ, on its evaluations (GradientNoiseProbe::due).
std::optional<std::vector<double>> TrainingRun::gradient_noise_probe() {
  if (!(s_.sampler->checks_gradient_noise() && GradientNoiseProbe::due(++evaluations_))) return std::nullopt;
  return noise_probe_.ratios(model_, *s_.sampler, data_.train, step_);
}

void TrainingRun::report_evaluation(int64_t step, const std::optional<std::vector<double>>& probe) {
  log_->append(last_);
  console_.evaluation(last_, s_.prior->log_values(), (s_.plan.total_steps - step) / steps_per_second());
  auto warnings = health_.check(step, last_, precisions());
  if (probe)
    for (auto& w : health_.check_gradient_noise(step, *probe)) warnings.push_back(std::move(w));
  for (const auto& w : warnings)
    if (dir_.writes_run_files()) console_.warning("step " + std::to_string(w.step) + ": " + w.message);
}

// train.eval_lag applies to one process's classification runs without OOD data: a regression's
// metrics take τ and OOD scores are ranked on the host (their reads would wait for the queued steps),
// and a distributed evaluation is a collective.
bool TrainingRun::eval_lag_on() const {
  return s_.plan.eval_lag > 0 && !dist_.active() && data_.ood.size() == 0 && eval_.classification();
}

// The deferred row (train.eval_lag): its device work queued and the copies of its values and of an
// unread λ started; read `eval_lag` steps later by complete_evaluation.
void TrainingRun::begin_evaluation(bool sample_fresh) {
  PendingEvaluation p;
  EvalOut unused;
  queue_evaluation(sample_fresh, predictive_, p, unused);
  p.values.start(p.out->packed);
  p.lambda.start(s_.prior->pending_draw());
  host_columns(p.row);
  p.probe = gradient_noise_probe();
  pending_eval_ = std::move(p);
}

void TrainingRun::complete_evaluation(bool then_checkpoint) {
  if (!pending_eval_) return;
  PendingEvaluation p = std::move(*pending_eval_);
  pending_eval_.reset();
  if (then_checkpoint) phases_.enter(PhaseClock::kEval);
  p.out->batch.unpack(p.values.values());
  if (p.lambda.started()) s_.prior->set_host_draw(p.lambda.values());
  last_ = finish_evaluation(p, predictive_);
  report_evaluation(p.step, p.probe);
  if (!then_checkpoint) return;
  phases_.enter(PhaseClock::kCheckpoint);
  checkpoint(/*force=*/false);
}

// Every how many averaged samples one goes to samples/ (0: none). output.save_samples: auto thins the
// run's samples evenly to at most output.max_samples files and output.max_sample_mb megabytes.
int64_t TrainingRun::sample_file_stride() const {
  const OutputConfig& o = cfg_.output;
  if (o.save_samples == "false" || !s_.plan.collects_samples) return 0;
  if (o.save_samples == "true") return 1;
  const RunPlan& p = s_.plan;
  const int64_t expected = std::max<int64_t>((p.total_steps - p.burn_in_steps) / std::max<int64_t>(p.thin, 1), 1);
  double bytes = 0;
  for (const auto& t : s_.params) bytes += static_cast<double>(t.numel() * t.element_size());
  const double by_count = std::ceil(static_cast<double>(expected) / static_cast<double>(o.max_samples));
  const double by_bytes = std::ceil(static_cast<double>(expected) * bytes / (o.max_sample_mb * 1048576.0));
  if (bytes > o.max_sample_mb * 1048576.0) return 0;  // not even one sample fits
  return std::max<int64_t>(1, static_cast<int64_t>(std::max(by_count, by_bytes)));
}

std::map<std::string, double> TrainingRun::auto_values() const {
  std::map<std::string, double> out = s_.plan.resolved;
  const std::string& format = cfg_.data.format;
  if (cfg_.data.val_size < 0 && (format == "idx" || format == "tensors" || format == "libsvm"))
    out["data.val_size"] = static_cast<double>(data_.val.size());
  if (cfg_.data.val_size < 0 && format == "bow")  // documents, not the tokens they hold out
    out["data.val_size"] = static_cast<double>(data_.dims.at("val_documents"));
  return out;
}

std::map<std::string, double> TrainingRun::precisions() const {
  std::map<std::string, double> out;
  if (s_.sampler->is_sampler() && cfg_.prior.hyperprior == "gamma") out = s_.prior->log_values();
  for (const auto& [k, v] : model_.likelihood_hyperparameters()) out[k] = v;
  return out;
}

namespace {

// The current iterate's predictive over its chains as members (mean, expected entropy / variance).
PredictiveSummary members_of(const Evaluator& eval, Model& model, const Batch& split) {
  PosteriorPredictive members;
  members.add("x", eval.predict_chains(model, split), split.targets, tau_of(model));
  members.end_sample();
  return members.summary("x");
}

}  // namespace

// One metrics row: the averaged predictive (samplers, after burn-in) or the current iterate
// (optimizers) on test and validation, the current sample on test, the hyperparameters and the
// sampler's diagnostics. Every metric of the row and the training loss: one device pass, one host read
// (MetricsBatch).
Metrics TrainingRun::evaluation_row(bool sample_fresh, const PosteriorPredictive& predictive) {
  PendingEvaluation p;
  EvalOut other;  // the predictive of every rank (chains mode) is not the one a graph would read
  queue_evaluation(sample_fresh, predictive, p, other);
  p.out->batch.unpack(HostReads::to_host(p.out->packed));
  host_columns(p.row);  // the clocks after the read: the row's time includes it
  return finish_evaluation(p, predictive);
}

// A row's first half, at its step: the values the host has now, and the device work queued (graph-
// replayed for the run's own predictive, else into `other`); p.out points at its outputs.
void TrainingRun::queue_evaluation(bool sample_fresh, const PosteriorPredictive& predictive, PendingEvaluation& p,
                                   EvalOut& other) {
  p.step = step_;
  p.lr = s_.sampler->lr();
  p.row["epoch"] = s_.plan.epoch(step_);
  p.row["step"] = static_cast<double>(step_);
  // Examples (documents, for a corpus) read so far: a streaming run's x axis (scripts/plot.py traces --x).
  p.row["examples_seen"] = static_cast<double>(step_) * static_cast<double>(s_.plan.batch_size);
  p.row["wall_seconds"] = wall_before_ + seconds_since(start_);
  p.row["lr"] = p.lr;
  p.loss_steps = loss_.take_steps();
  const double tau = tau_of(model_);
  const int64_t samples = predictive.count();
  const bool check_state = guard_.state_due(step_);
  if (samples > 0) sample_count_.fill_(static_cast<double>(samples));
  auto device_part = [&] { return evaluation_device(sample_fresh, predictive, tau, check_state); };
  std::vector<int64_t> key = phase_key(predictive);
  if (eval_graph_.capture())  // the body's branches, and the current sample's prediction where it is an input
    key.insert(key.end(), {samples > 0, sample_fresh, check_state, address_key(loss_.sum_buffer()),
                           address_key(sample_fresh ? current_test_ : torch::Tensor())});
  p.out = &predictive == &predictive_ ? &eval_graph_.run(key, device_part) : &(other = device_part());
  current_test_ = p.out->current_test;
  p.row["samples"] = static_cast<double>(samples);
  for (const auto& [k, v] : model_.likelihood_hyperparameters()) p.row[k] = v;
  for (const auto& [k, v] : s_.sampler->diagnostics()) p.row["diag." + k] = v;
}

// The session's rate and this session's seconds so far in steps (time.steps), Gibbs steps, samples,
// evaluations and checkpoints: two rows give the stepping rate between them, without the per-epoch work or
// the first epoch's graph capture (bench/peers/sgmcmc_row.py), and what each epoch's other phases cost.
void TrainingRun::host_columns(Metrics& row) const {
  row["steps_per_second"] = steps_per_second();
  const auto secs = phases_.seconds();
  for (const char* k : {"time.steps", "time.gibbs", "time.samples", "time.eval", "time.checkpoint"}) row[k] = secs.at(k);
}

// A row's second half, once its values are on the host (p.out->batch unpacked): the state check, the
// metrics, the OOD scores and λ.
Metrics TrainingRun::finish_evaluation(PendingEvaluation& p, const PosteriorPredictive& predictive) {
  EvalOut& e = *p.out;
  if (e.state) guard_.resolve_state(p.step, p.lr, e.batch.scalar(e.state_at));
  Metrics& row = p.row;
  row["train_loss"] = p.loss_steps > 0 ? e.batch.scalar(e.loss_at) / static_cast<double>(p.loss_steps) : NAN;
  for (const auto& [prefix, i] : e.queued) add_prefixed(row, prefix, eval_.result(e.batch, i));
  for (const auto& [k, v] : ood_row(static_cast<int64_t>(row.at("samples")), e.now, predictive)) row[k] = v;
  for (const auto& [k, v] : s_.prior->log_values()) row[k] = v;
  return std::move(row);
}

// An evaluation's device work: every predictive's metrics and the row's device scalars queued in one
// batch and packed (no host read). The averaged predictives divide by sample_count_, on the device.
TrainingRun::EvalOut TrainingRun::evaluation_device(bool sample_fresh, const PosteriorPredictive& predictive, double tau,
                                                    bool check_state) {
  EvalOut e;
  e.batch = eval_.batch(tau);
  e.loss_at = e.batch.add_scalar(loss_.drain_sum());
  const int64_t samples = predictive.count();
  // Without samples, the current iterate's chains are its members (a deep ensemble for an optimizer
  // with chains: K); their spread is needed for an ensemble's metrics and for OOD detection.
  if (samples == 0 && (model_.chains() > 1 || data_.ood.size() > 0)) {
    e.now = members_of(eval_, model_, data_.test);
    e.current_test = e.now.mean;
  } else {
    e.current_test = sample_fresh ? current_test_ : eval_.predict(model_, data_.test);
  }
  if (!e.now.mean.defined()) e.now.mean = e.current_test;
  const size_t current = eval_.queue(e.batch, PredictiveSummary{e.current_test, {}, {}}, data_.test, tau);
  e.queued = {{"sample_test_", current}};
  if (samples > 0) {
    for (const std::string split : {"test", "val"})
      if (predictive.has(split))
        e.queued.emplace_back(split + "_", eval_.queue(e.batch,
                                                       eval_.classification() ? predictive.summary(split, sample_count_)
                                                                              : predictive.summary(split),
                                                       split == "test" ? data_.test : data_.val, tau,
                                                       predictive.log_density_sum(split), samples));
  }
  if (samples == 0 && !s_.sampler->is_sampler()) {
    e.queued.emplace_back("test_", model_.chains() > 1 ? eval_.queue(e.batch, e.now, data_.test, tau) : current);
    if (data_.val.size() > 0)
      e.queued.emplace_back("val_", eval_.queue(e.batch,
                                                model_.chains() > 1 ? members_of(eval_, model_, data_.val)
                                                                    : PredictiveSummary{eval_.predict(model_, data_.val), {}, {}},
                                                data_.val, tau));
  }
  // the divergence guard's check of θ in the same read (before the row is logged or anything saved)
  e.state = check_state;
  if (check_state) e.state_at = e.batch.add_scalar(guard_.state_sum(step_));
  e.packed = e.batch.pack();
  return e;
}

// OOD detection (data.ood) by the averaged predictive once there are samples, else by the current
// iterate (`current_test`: its members' predictive on test).
Metrics TrainingRun::ood_row(int64_t samples, const PredictiveSummary& current_test,
                             const PosteriorPredictive& predictive) {
  if (data_.ood.size() == 0) return {};
  Metrics m;
  if (samples > 0 && predictive.has("ood")) {
    m = ood_metrics(predictive.summary("test"), predictive.summary("ood"));
  } else {
    m = ood_metrics(current_test, members_of(eval_, model_, data_.ood));
    samples = 1;
  }
  if (samples * model_.chains() <= 1) m["ood_auroc_mi"] = m["ood_aupr_mi"] = NAN;  // one member: MI ≡ 0
  return m;
}

void TrainingRun::checkpoint(bool force) {
  // θ and the loss are checked before a file is written (a read where this step's evaluation has not
  // read them: a deferred evaluation's checkpoint comes steps after it, so only when one is written)
  if (!force && !(cfg_.output.checkpoint && checkpoint_due())) return;
  guard_.check_state(step_, s_.sampler->lr(), loss_.finite());
  save_checkpoint();
  last_checkpoint_ = Clock::now();
  guard_.checkpoint_written(step_);
}

bool TrainingRun::checkpoint_due() {
  return dist_.agree_any(
      s_.plan.checkpoint_due(step_, cfg_.output.checkpoint_every_seconds, seconds_since(last_checkpoint_)));
}

RunSummary TrainingRun::finish(Stop stop, int signal) {
  console_.clear();
  if (stop == Stop::kSignal) {
    checkpoint(/*force=*/true);
    const std::string sig = signals::signal_name(signal);
    write_summary(false, {{"interrupted", sig}});
    throw RunInterrupted("interrupted by " + sig + " after step " + std::to_string(step_) + "; checkpoint written to " +
                             dir_.checkpoint_path().string() + " (continue with: sgmcmc train --resume " +
                             dir_.path().string() + ")",
                         signal);
  }
  if (stop == Stop::kStepLimit) checkpoint(/*force=*/cfg_.output.checkpoint);  // to be resumed: due whatever the clock
  if (stop == Stop::kFinished && last_.empty()) {  // resumed at the very end
    evaluate(false);
    complete_evaluation(/*then_checkpoint=*/false);  // as the undeferred one: no checkpoint after it
  }
  if (dist_.writes_parameters()) dir_.save_final(model_, state_scalars());  // for `sgmcmc predict` (optimizers, or samplers that saved no samples)
  if (eval_.classification() && (dir_.writes_run_files() || dist_.chains_across_ranks())) {
    const torch::Tensor reported = reported_test_prediction();  // chains mode: a collective, on every rank
    if (dir_.writes_run_files())
      write_reliability_svg(dir_.file("reliability.svg").string(), reported, data_.test.targets,
                            cfg_.name + ": " + cfg_.sampler_name() + ", test set");
  }
  return write_summary(stop == Stop::kFinished, nlohmann::ordered_json::object());
}

// The test prediction the run reports: the averaged predictive (samplers, after burn-in), else the
// current iterate (its members' mean for an ensemble).
torch::Tensor TrainingRun::reported_test_prediction() {
  if (predictive_.count() > 0 && predictive_.has("test"))  // every rank's chains in chains mode
    return (dist_.chains_across_ranks() ? predictive_.all_ranks(dist_.comm()) : predictive_).mean("test");
  if (model_.chains() > 1) return members_of(eval_, model_, data_.test).mean;
  return eval_.predict(model_, data_.test);
}

std::map<std::string, double> TrainingRun::state_scalars() const {
  std::map<std::string, double> out = s_.prior->log_values();
  for (const auto& [k, v] : s_.prior->chain_values()) out[k] = v;  // each chain's own λ beside their mean
  for (const auto& [k, v] : model_.likelihood_hyperparameters()) out[k] = v;
  out["step"] = static_cast<double>(step_);
  return out;
}

double TrainingRun::session_seconds() const { return seconds_since(start_); }
double TrainingRun::loop_seconds() const { return seconds_since(loop_start_); }
double TrainingRun::steps_per_second() const {
  const double t = loop_seconds();
  return t > 0 ? static_cast<double>(step_ - step_at_start_) / t : NAN;
}

}  // namespace sgmcmc
