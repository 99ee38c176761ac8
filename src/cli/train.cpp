// sgmcmc train / sgmcmc predict.
#define CXXOPTS_VECTOR_DELIMITER '\x1f'  // --set values may contain commas (lists)
#include <cxxopts.hpp>

#include "cli/set_options.h"
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <tuple>

#include "cli/commands.h"
#include "cli/launch_ranks.h"
#include "config/experiment_config.h"
#include "data/kfold.h"
#include "train/convergence_trace.h"
#include "train/trainer.h"
#include "core/json_file.h"
#include "core/signals.h"

namespace sgmcmc {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Runs `body`, mapping exceptions to one-line messages and exit codes (see util/signals.h):
// 2 bad input, 1 run-time failure, 3 divergence, 128 + signal when interrupted.
template <typename F>
int guarded(const std::string& who, F&& body) {
  try {
    return body();
  } catch (const RunInterrupted& e) {
    std::cerr << who << ": " << first_line(e.what()) << "\n";
    return 128 + e.signal;
  } catch (const RunDiverged& e) {
    std::cerr << who << ": error: " << first_line(e.what()) << "\n";
    return kExitDiverged;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << who << ": error: " << e.what() << " (see " << who << " --help)\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << who << ": error: " << first_line(e.what()) << "\n";
    return 2;
  } catch (const c10::Error& e) {
    std::cerr << who << ": error: " << first_line(e.what_without_backtrace()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << who << ": error: " << first_line(e.what()) << "\n";
    return 1;
  }
}

void reject_extra(const cxxopts::ParseResult& r) {
  if (!r.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + r.unmatched()[0] + "'");
}


// k-fold cross-validation (format ratings without data.fold): one run per fold into DIR/fold<k>,
// then DIR/summary.json with the mean, sample std and per-fold values of each metric.
int run_all_folds(const std::string& config_path, const std::vector<std::string>& sets, const ExperimentConfig& base,
                  const RunOptions& ro) {
  const int64_t folds = base.data.options.get_int("folds", 5);
  if (folds < 2) throw std::invalid_argument("data.folds: must be at least 2, got " + std::to_string(folds));
  const std::filesystem::path dir = !ro.out_dir.empty()          ? ro.out_dir
                                    : !base.output.dir.empty() ? base.output.dir
                                                               : default_run_dir(base.name);
  const std::vector<std::string> keys = {"test_rmse", "test_nll", "val_rmse", "val_nll", "sample_test_rmse",
                                         "wall_seconds"};
  std::map<std::string, std::vector<double>> per_fold;
  bool finished = true;
  int rank = 0;  // a distributed run: rank 0 writes the aggregate
  for (int64_t k = 0; k < folds; ++k) {
    auto all = sets;
    all.push_back("data.fold=" + std::to_string(k));
    RunOptions fo = ro;
    fo.out_dir = (dir / ("fold" + std::to_string(k))).string();
    if (!ro.quiet && rank == 0) std::cout << "== fold " << k << "/" << folds << " -> " << fo.out_dir << std::endl;
    RunSummary s = run_training(load_config(config_path, all), fo);
    finished = finished && s.finished;
    rank = s.rank;
    for (const auto& key : keys) {
      auto it = s.values.find(key);
      per_fold[key].push_back(it == s.values.end() ? NAN : it->second);
    }
  }
  nlohmann::ordered_json js = {
      {"name", base.name}, {"sampler", base.sampler_name()}, {"folds", folds}, {"finished", finished}};
  for (const auto& key : keys) {
    const auto& v = per_fold[key];
    auto m = mean_std(v);
    js[key] = m.mean;  // non-finite numbers are written as null
    js[key + "_std"] = m.std;
    js[key + "_folds"] = v;
  }
  if (rank != 0) return 0;
  std::filesystem::create_directories(dir);
  write_json_file((dir / "summary.json").string(), js);
  auto rm = mean_std(per_fold["test_rmse"]);
  if (!ro.quiet)
    std::cout << "run directory: " << dir.string() << "\n  test_rmse: " << std::fixed << std::setprecision(4) << rm.mean
              << " ± " << rm.std << " over " << folds << " folds (sample std)\n";
  return 0;
}

cxxopts::Options train_options() {
  cxxopts::Options options("sgmcmc train", "Trains a model by SG-MCMC (or an optimizer baseline) from a YAML config.");
  options.custom_help("CONFIG.yaml [options]  |  --resume RUN_DIR [options]");
  options.add_options()
      ("config", "YAML config file", cxxopts::value<std::string>())
      ("out", "run directory (default: output.dir, else runs/<name>-<timestamp>)", cxxopts::value<std::string>())
      ("overwrite", "replace an existing run directory")
      ("resume", "continue the run in DIR from its checkpoint (config from DIR/config.yaml)",
       cxxopts::value<std::string>())
      ("set", "override a config key, e.g. --set train.epochs=5 --set data.dir=/data/mnist (repeatable); "
              "ratings data without data.fold runs every fold into OUT/fold<k> and writes their mean ± std",
       cxxopts::value<std::vector<std::string>>())
      ("stop-after", "stop after this many steps, with a checkpoint (for testing --resume)",
       cxxopts::value<int64_t>())
      ("q,quiet", "no per-evaluation lines or progress")
      ("nproc", "start N local ranks of this command (RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, a free MASTER_PORT; "
                "see docs/distributed.md) and wait for them", cxxopts::value<int>())
      ("help-keys", "list every config key with its default and meaning")
      ("h,help", "show this help");
  options.parse_positional({"config"});
  return options;
}

// --resume DIR: the run's own config.yaml (with --set overrides) and DIR as the run directory.
ExperimentConfig resume_config(const cxxopts::ParseResult& r, const std::vector<std::string>& sets, RunOptions& ro) {
  if (r.count("config")) throw std::invalid_argument("give either CONFIG or --resume DIR, not both");
  if (r.count("out")) throw std::invalid_argument("--out cannot be combined with --resume (the run directory is DIR)");
  ro.resume = true;
  ro.out_dir = r["resume"].as<std::string>();
  for (const auto& a : sets) ro.set_keys.push_back(a.substr(0, a.find('=')));
  std::string cfg = (std::filesystem::path(ro.out_dir) / "config.yaml").string();
  if (!std::filesystem::exists(cfg)) throw std::invalid_argument(ro.out_dir + ": not a run directory (no config.yaml)");
  return load_config(cfg, sets);
}

// The train command's arguments (argv[0] = "train") without --nproc N / --nproc=N.
std::vector<std::string> without_nproc(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--nproc") {
      ++i;
      continue;
    }
    if (a.rfind("--nproc=", 0) != 0) out.push_back(a);
  }
  return out;
}

// The convergence verdict over every traced quantity (the test log-likelihood, the traced weights and
// test predictions; train/convergence_trace.h): "ok" only when all of them pass, else what failed.
void print_convergence(const std::map<std::string, double>& v) {
  const auto verdict = ConvergenceTrace::verdict_of_summary(v);
  if (!verdict) return;
  std::ostringstream line;
  line << std::setprecision(3) << "  convergence: " << (verdict->empty() ? "ok" : *verdict) << "\n";
  for (const auto& [rhat, ess, what] : ConvergenceTrace::traced())
    if (auto r = v.find(rhat); r != v.end() && std::isfinite(r->second))
      line << "    " << what << ": R-hat " << r->second << ", ESS " << std::setprecision(4)
           << (v.count(ess) ? v.at(ess) : NAN) << std::setprecision(3) << "\n";
  std::cout << line.str();
}

void print_result(const RunSummary& s) {
  std::cout << "run directory: " << s.run_dir << (s.finished ? "" : " (stopped early; continue with --resume)") << "\n";
  for (const char* k : {"test_perplexity", "test_error", "test_nll", "test_ece", "test_rmse", "test_cover90",
                        "ood_auroc_entropy", "val_perplexity", "val_error", "samples", "steps", "wall_seconds", "steps_per_second", "threads"}) {
    auto it = s.values.find(k);
    if (it != s.values.end() && std::isfinite(it->second)) std::cout << "  " << k << ": " << it->second << "\n";
  }
  const auto svg = std::filesystem::path(s.run_dir) / "reliability.svg";
  if (std::filesystem::exists(svg)) std::cout << "  reliability diagram: " << svg.string() << "\n";
  if (auto t = s.values.find("effective_temperature"); t != s.values.end() && std::isfinite(t->second)) {
    const double asked = s.values.count("temperature") ? s.values.at("temperature") : 1.0;
    std::cout << "  effective temperature: " << std::setprecision(3) << t->second << " (asked for " << asked << ")"
              << (t->second > 1.2 * asked ? ": too hot, the spread is partly the minibatches' (docs/calibration.md)" : "")
              << "\n";
  }
  print_convergence(s.values);
  std::cout << std::flush;  // before result_status's line on stderr, in a log of both streams
}

// The run's exit status after its summary: kExitUnhealthy when the final predictive is worse than
// the trivial one (the message on stderr), else 0.
int result_status(const RunSummary& s) {
  if (!(s.worse_than_trivial || s.stalled)) return kExitOk;
  if (!s.require_healthy) {  // train.require_healthy: false warns only
    if (s.rank == 0) std::cerr << "sgmcmc train: warning: " << s.health_message << " (summary.json: health)\n";
    return kExitOk;
  }
  if (s.rank != 0) return kExitUnhealthy;
  std::cerr << "sgmcmc train: error: the run finished, but "
            << (s.health_message.empty() ? "its predictive is worse than the trivial predictor's" : s.health_message)
            << " (summary.json: health)\n";
  return kExitUnhealthy;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  return guarded("sgmcmc train", [&] {
    auto options = train_options();
    auto r = options.parse(argc, argv);
    if (r.count("help")) {
      std::cout << options.help() << "\nConfig keys: sgmcmc train --help-keys lists them; every key can be given with "
                                     "--set block.key=value.\nExit codes: 0 ok, 1 run-time failure, 2 bad input, 3 diverged, "
                                     "4 finished unhealthy (worse than the trivial predictor, or a stalled chain), 130/143 interrupted.\n";
      return 0;
    }
    if (r.count("help-keys")) {
      print_config_keys(std::cout);
      return 0;
    }
    reject_extra(r);
    if (r.count("nproc")) return launch_local_ranks(r["nproc"].as<int>(), without_nproc(argc, argv));
    std::vector<std::string> sets;
    if (r.count("set")) sets = assignments(r["set"].as<std::vector<std::string>>());
    RunOptions ro;
    ro.overwrite = r.count("overwrite") > 0;
    ro.quiet = r.count("quiet") > 0;
    if (r.count("stop-after")) ro.stop_after_steps = r["stop-after"].as<int64_t>();
    if (r.count("resume")) {
      RunSummary s = run_training(resume_config(r, sets, ro), ro);
      if (s.rank == 0) print_result(s);  // with --quiet too: quiet hides progress, not the result
      return result_status(s);
    }
    if (!r.count("config")) throw std::invalid_argument("missing CONFIG.yaml (see sgmcmc train --help)");
    ExperimentConfig config = load_config(r["config"].as<std::string>(), sets);
    if (r.count("out")) {
      ro.out_dir = r["out"].as<std::string>();
      if (ro.out_dir.empty()) throw std::invalid_argument("--out: an empty path (give the run directory, or leave --out out)");
    }
    // Ratings without data.fold: every fold of the k-fold split, then the aggregate.
    if (config.data.format == "ratings" && !config.data.options.has("fold")) {
      if (ro.stop_after_steps >= 0) throw std::invalid_argument("--stop-after needs a single fold (--set data.fold=K)");
      return run_all_folds(r["config"].as<std::string>(), sets, config, ro);
    }
    RunSummary s = run_training(config, ro);
    if (s.rank == 0) print_result(s);  // with --quiet too: quiet hides progress, not the result
    return result_status(s);
  });
}

int cmd_predict(int argc, char** argv) {
  return guarded("sgmcmc predict", [&] {
    cxxopts::Options options("sgmcmc predict",
                             "Re-averages a run's saved samples (samples/, output.save_samples), or an optimizer's final parameters, "
                             "on the data its config names (after --set overrides, e.g. --set data.dir=NEW).");
    options.custom_help("RUN_DIR [options]");
    options.add_options()
        ("run", "run directory", cxxopts::value<std::string>())
        ("set", "override a config key (repeatable)", cxxopts::value<std::vector<std::string>>())
        ("out", "JSON file for the metrics (default RUN_DIR/predict.json)", cxxopts::value<std::string>())
        ("data", "predict on a torch.save dict with x (and y), or x_test (and y_test), instead of the config's test split",
         cxxopts::value<std::string>())
        ("predictive", "write the predictive as a dict torch.load opens (default RUN_DIR/predictive.pt with --data)",
         cxxopts::value<std::string>())
        ("per-sample", "also write each sample's predictions into the predictive file")
        ("last-sample", "a sampler's run without saved samples: predict with its last sample (final.pt)")
        ("q,quiet", "print nothing")
        ("h,help", "show this help");
    options.parse_positional({"run"});
    auto r = options.parse(argc, argv);
    if (r.count("help")) {
      std::cout << options.help() << std::endl;
      return 0;
    }
    reject_extra(r);
    if (!r.count("run")) throw std::invalid_argument("missing RUN_DIR (see sgmcmc predict --help)");
    std::string run = r["run"].as<std::string>();
    PredictOptions o;
    if (r.count("set")) o.overrides = assignments(r["set"].as<std::vector<std::string>>());
    o.last_sample = r.count("last-sample") > 0;
    o.out_json = r.count("out") ? r["out"].as<std::string>() : (std::filesystem::path(run) / "predict.json").string();
    if (r.count("data")) o.data_file = r["data"].as<std::string>();
    if (r.count("predictive")) o.predictive_out = r["predictive"].as<std::string>();
    else if (r.count("data")) o.predictive_out = (std::filesystem::path(run) / "predictive.pt").string();
    o.per_sample = r.count("per-sample") > 0;
    if (o.per_sample && o.predictive_out.empty())
      throw std::invalid_argument("--per-sample: needs --predictive FILE or --data FILE");
    o.quiet = r.count("quiet") > 0;
    predict_run(run, o);
    return 0;
  });
}

}  // namespace sgmcmc
