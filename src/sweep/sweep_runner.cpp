#include "sweep/sweep_runner.h"

#include <spawn.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <cstring>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <torch/torch.h>

#include "config/experiment_config.h"
#include "train/trainer.h"
#include "util/signals.h"

extern char** environ;

namespace fs = std::filesystem;

namespace sgmcmc {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string last_nonempty_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line)) {
    auto p = line.rfind('\r');  // progress lines
    if (p != std::string::npos) line = line.substr(p + 1);
    if (line.find_first_not_of(" \t") != std::string::npos) last = line;
  }
  return last;
}

RunOutcome outcome_from_dir(const fs::path& dir) {
  RunOutcome o;
  auto v = read_summary_json((dir / "summary.json").string());
  if (v.count("finished") && v["finished"] == 1.0) {
    o.status = "done";
    v.erase("finished");
    v.erase("seed");
    o.values = v;
  } else {
    o.status = "pending";
    o.message = fs::exists(dir / "checkpoint.pt") ? "stopped; resumable from its checkpoint" : "not run";
  }
  return o;
}

}  // namespace

std::string run_state(const std::string& run_dir) {
  fs::path d(run_dir);
  auto v = read_summary_json((d / "summary.json").string());
  if (v.count("finished") && v["finished"] == 1.0) return "done";
  if (fs::exists(d / "checkpoint.pt")) return "resume";
  return "new";
}

std::vector<RunOutcome> run_sweep(const SweepSpec& spec, const SweepOptions& opt, std::ostream& log) {
  const fs::path out = opt.out_dir.empty() ? fs::path("runs") / "sweeps" / spec.name : fs::path(opt.out_dir);
  auto runs = expand(spec);
  // Base config files (inline bases are written into OUT).
  std::vector<std::string> bases;
  for (size_t i = 0; i < spec.parts.size(); ++i)
    bases.push_back(spec.parts[i].base_path.empty() ? (opt.dry_run ? std::string() : materialize_base(spec, i, out.string()))
                                                    : spec.parts[i].base_path);
  // Check every config before running anything.
  const int jobs = std::max(1, opt.jobs);
  const int cores = opt.cores > 0 ? opt.cores : std::max(1u, std::thread::hardware_concurrency());
  const int threads = std::max(1, cores / jobs);
  int cuda_devices = 0;
  std::vector<std::string> states(runs.size());
  std::vector<bool> uses_cuda(runs.size(), false);
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string base = bases[runs[i].part];
    if (base.empty()) base = materialize_base(spec, runs[i].part, (fs::temp_directory_path() / ("sgmcmc-sweep-" + std::to_string(getpid()))).string());
    try {
      ExperimentConfig c = load_config(base, runs[i].overrides);
      uses_cuda[i] = c.device.rfind("cuda", 0) == 0;
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("run " + runs[i].name + ": " + first_line(e.what()));
    }
    states[i] = opt.overwrite ? "new" : run_state((out / runs[i].name).string());
  }
  if (jobs > 1 && std::any_of(uses_cuda.begin(), uses_cuda.end(), [](bool b) { return b; }))
    cuda_devices = static_cast<int>(torch::cuda::device_count());

  if (opt.dry_run) {
    log << spec.name << ": " << runs.size() << " runs -> " << out.string() << "\n";
    for (size_t i = 0; i < runs.size(); ++i) {
      log << "  [" << states[i] << "] " << runs[i].name << " :";
      for (const auto& a : runs[i].overrides) log << " " << a;
      log << "\n";
    }
    std::vector<RunOutcome> outcomes;
    for (const auto& r : runs) outcomes.push_back(outcome_from_dir(out / r.name));
    return outcomes;
  }

  fs::create_directories(out);
  if (fs::exists(spec.source) && fs::is_regular_file(spec.source)) {
    std::error_code ec;
    fs::copy_file(spec.source, out / "sweep.yaml", fs::copy_options::overwrite_existing, ec);
  }
  std::vector<RunOutcome> outcomes(runs.size());
  auto write_summaries = [&]() {
    std::vector<RunOutcome> now = outcomes;
    for (size_t i = 0; i < runs.size(); ++i)
      if (now[i].status.empty()) now[i] = outcome_from_dir(out / runs[i].name);
    std::ofstream(out / "summary.csv") << summary_csv(spec, runs, now);
    std::ofstream(out / "summary.md") << summary_md(spec, runs, now);
  };
  size_t todo = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (states[i] == "done") outcomes[i] = outcome_from_dir(out / runs[i].name);
    else ++todo;
  }
  log << spec.name << ": " << runs.size() << " runs, " << runs.size() - todo << " done before, " << todo
      << " to run (" << jobs << " at once) -> " << out.string() << std::endl;

  auto finish = [&](size_t i, const std::string& failure) {
    const fs::path dir = out / runs[i].name;
    if (failure.empty()) {
      outcomes[i] = outcome_from_dir(dir);
      if (outcomes[i].status != "done" && opt.stop_after_steps < 0) {
        outcomes[i].status = "failed";
        outcomes[i].message = "no finished summary.json";
      }
    } else {
      outcomes[i].status = "failed";
      outcomes[i].message = failure;
    }
    log << "  " << outcomes[i].status << ": " << runs[i].name
        << (outcomes[i].message.empty() ? "" : " (" + outcomes[i].message + ")") << std::endl;
    write_summaries();
  };

  if (jobs == 1) {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (states[i] == "done") continue;
      const fs::path dir = out / runs[i].name;
      log << "== " << runs[i].name << (states[i] == "resume" ? " (resuming)" : "") << std::endl;
      std::string failure;
      try {
        RunOptions ro;
        ro.out_dir = dir.string();
        ro.resume = states[i] == "resume";
        ro.overwrite = !ro.resume;
        ro.quiet = opt.quiet;
        ro.stop_after_steps = opt.stop_after_steps;
        fs::create_directories(dir.parent_path());
        run_training(load_config(bases[runs[i].part], runs[i].overrides), ro);
      } catch (const RunInterrupted&) {
        throw;  // SIGINT/SIGTERM stop the whole sweep; the run's checkpoint resumes on the next `sgmcmc sweep`
      } catch (const std::exception& e) {
        failure = first_line(e.what());
      }
      finish(i, failure);
    }
  } else {
    fs::create_directories(out / "logs");
    struct Child {
      pid_t pid;
      size_t run;
      int slot;
    };
    std::vector<Child> running;
    std::vector<bool> slot_busy(jobs, false);
    auto spawn = [&](size_t i, int slot) {
      const fs::path dir = out / runs[i].name;
      fs::create_directories(dir.parent_path());
      std::vector<std::string> args = {opt.exe, "train"};
      std::vector<std::string> sets = runs[i].overrides;
      // The sweep's own train.threads (set/grid) wins over the even split of the cores.
      const bool own_threads = std::any_of(sets.begin(), sets.end(), [](const std::string& a) {
        return a.rfind("train.threads=", 0) == 0;
      });
      if (!own_threads) sets.push_back("train.threads=" + std::to_string(threads));
      if (uses_cuda[i] && cuda_devices > 0) sets.push_back("device=cuda:" + std::to_string(slot % cuda_devices));
      if (states[i] == "resume") {
        args.insert(args.end(), {"--resume", dir.string()});
        // The run's config.yaml is already resolved; only the per-process settings change.
        sets.clear();
        if (!own_threads) sets.push_back("train.threads=" + std::to_string(threads));
        if (uses_cuda[i] && cuda_devices > 0) sets.push_back("device=cuda:" + std::to_string(slot % cuda_devices));
      } else {
        args.insert(args.end(), {bases[runs[i].part], "--out", dir.string(), "--overwrite"});
      }
      for (const auto& a : sets) args.insert(args.end(), {"--set", a});
      args.push_back("-q");
      if (opt.stop_after_steps >= 0) args.insert(args.end(), {"--stop-after", std::to_string(opt.stop_after_steps)});
      std::string logname = runs[i].name;
      std::replace(logname.begin(), logname.end(), '/', '~');
      const std::string logfile = (out / "logs" / (logname + ".log")).string();
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 1, logfile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_adddup2(&fa, 1, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      pid_t pid = 0;
      int rc = posix_spawn(&pid, opt.exe.c_str(), &fa, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&fa);
      if (rc != 0) {
        finish(i, "cannot start " + opt.exe + ": " + std::strerror(rc));
        return;
      }
      log << "== " << runs[i].name << (states[i] == "resume" ? " (resuming)" : "") << " [pid " << pid << ", "
          << threads << " threads]" << std::endl;
      running.push_back({pid, i, slot});
      slot_busy[slot] = true;
    };
    size_t next = 0;
    while (true) {
      while (next < runs.size() && states[next] == "done") ++next;
      if (next < runs.size() && static_cast<int>(running.size()) < jobs) {
        int slot = static_cast<int>(std::find(slot_busy.begin(), slot_busy.end(), false) - slot_busy.begin());
        spawn(next++, slot);
        continue;
      }
      if (running.empty()) break;
      int status = 0;
      pid_t pid = waitpid(-1, &status, 0);
      if (pid < 0) break;
      auto it = std::find_if(running.begin(), running.end(), [&](const Child& c) { return c.pid == pid; });
      if (it == running.end()) continue;
      Child c = *it;
      running.erase(it);
      slot_busy[c.slot] = false;
      std::string failure;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::string logname = runs[c.run].name;
        std::replace(logname.begin(), logname.end(), '/', '~');
        std::string last = last_nonempty_line(out / "logs" / (logname + ".log"));
        failure = (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                     : "killed by signal " + std::to_string(WTERMSIG(status))) +
                  (last.empty() ? "" : ": " + last);
      }
      finish(c.run, failure);
    }
  }
  write_summaries();
  for (size_t i = 0; i < runs.size(); ++i)
    if (outcomes[i].status.empty()) outcomes[i] = outcome_from_dir(out / runs[i].name);
  return outcomes;
}

}  // namespace sgmcmc
