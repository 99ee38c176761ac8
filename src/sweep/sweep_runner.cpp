// Running a sweep: the plan (configs checked, run states), the runs in this process or as child
// processes, and the outcomes with summary.csv / summary.md rewritten as runs finish.
#include "sweep/sweep_runner.h"

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
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
#include <yaml-cpp/yaml.h>

#include "config/experiment_config.h"
#include "runtime/cpu.h"
#include "sweep/sweep_report.h"
#include "train/trainer.h"
#include "core/signals.h"

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

// The values of a run directory's summary.json. An unreadable or invalid summary counts as none
// (the run is resumed or rerun, as one without a summary), its reason in `problem`.
std::map<std::string, double> run_summary(const fs::path& dir, std::string* problem = nullptr) {
  try {
    return read_summary_json((dir / "summary.json").string());
  } catch (const std::invalid_argument& e) {
    if (problem) *problem = first_line(e.what());
    return {};
  }
}

bool finished(const std::map<std::string, double>& v) {
  auto it = v.find("finished");
  return it != v.end() && it->second == 1.0;
}

RunOutcome outcome_from_dir(const fs::path& dir) {
  RunOutcome o;
  std::string problem;
  auto v = run_summary(dir, &problem);
  if (finished(v)) {
    o.status = "done";
    v.erase("finished");
    v.erase("seed");
    o.values = v;
  } else {
    o.status = "pending";
    o.message = !problem.empty()                      ? problem
                : fs::exists(dir / "checkpoint.pt") ? "stopped; resumable from its checkpoint"
                                                    : "not run";
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// The plan: what runs where, checked before anything runs.

struct Plan {
  fs::path out;
  std::vector<SweepRun> runs;
  std::vector<std::string> bases;   // base config per part ("" for an inline base in a dry run)
  std::vector<std::string> states;  // per run: run_state, or "new" with overwrite
  std::vector<bool> uses_cuda;      // per run
  int jobs = 1;
  int threads = 1;                  // train.threads of each child process (jobs > 1)
  int cuda_devices = 0;             // CUDA devices the child processes share (jobs > 1)

  fs::path dir(size_t i) const { return out / runs[i].name; }
  // OUT/logs/<run name with '/' -> '~'>.log
  fs::path log_file(size_t i) const {
    std::string name = runs[i].name;
    std::replace(name.begin(), name.end(), '/', '~');
    return out / "logs" / (name + ".log");
  }
};

// Base config files (inline bases are written into OUT, except for a dry run).
std::vector<std::string> base_configs(const SweepSpec& spec, const SweepOptions& opt, const fs::path& out) {
  std::vector<std::string> bases;
  for (size_t i = 0; i < spec.parts.size(); ++i)
    bases.push_back(spec.parts[i].base_path.empty() ? (opt.dry_run ? std::string() : materialize_base(spec, i, out.string()))
                                                    : spec.parts[i].base_path);
  return bases;
}

// Loads run i's config (std::invalid_argument "run NAME: ..." when invalid); true for a CUDA device.
bool check_run_config(const SweepSpec& spec, const Plan& plan, size_t i) {
  const SweepRun& run = plan.runs[i];
  std::string base = plan.bases[run.part];
  if (base.empty())
    base = materialize_base(spec, run.part, (fs::temp_directory_path() / ("sgmcmc-sweep-" + std::to_string(getpid()))).string());
  ExperimentConfig config;
  try {
    config = load_config(base, run.overrides);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("run " + run.name + ": " + first_line(e.what()));
  }
  // select.group_by names keys of the runs' configs: a key the part varies, or one its runs have (its
  // resolved config.yaml, block.key)
  const YAML::Node yaml = YAML::Load(to_yaml(config));
  for (const auto& key : spec.parts[run.part].select.group_by) {
    const auto dot = key.find('.');
    const YAML::Node node = dot == std::string::npos ? yaml[key] : yaml[key.substr(0, dot)][key.substr(dot + 1)];
    if (!node)
      throw std::invalid_argument(spec.source + ": select.group_by: '" + key + "' is not a key of run " + run.name +
                                  "'s config");
  }
  return config.device.rfind("cuda", 0) == 0;
}

// Per-process keys: the runner sets them itself, so a stored run may differ there.
bool per_process_key(const std::string& key) {
  return key == "train.threads" || key == "device" || key.rfind("output.", 0) == 0;
}

bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  try {
    size_t ia = 0, ib = 0;
    const double x = std::stod(a, &ia), y = std::stod(b, &ib);
    return ia == a.size() && ib == b.size() && x == y;
  } catch (const std::exception&) {
    return false;
  }
}

// The first override of `run` whose scalar value differs from the run directory's config.yaml, as
// "key=stored there, key=value here"; "" when they agree (keys the stored config lacks, or holds as
// a list or mapping, are not compared: a run from before an option existed stays done).
std::string stale_override(const fs::path& dir, const SweepRun& run) {
  YAML::Node root;
  try {
    root = YAML::LoadFile((dir / "config.yaml").string());
  } catch (const std::exception&) {
    return "";
  }
  std::vector<std::pair<std::string, std::string>> last;  // key -> its last value (later overrides win)
  for (const auto& a : run.overrides) {
    const auto eq = a.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = a.substr(0, eq);
    auto it = std::find_if(last.begin(), last.end(), [&](const auto& kv) { return kv.first == key; });
    if (it == last.end()) {
      last.emplace_back(key, a.substr(eq + 1));
    } else {
      it->second = a.substr(eq + 1);
    }
  }
  for (const auto& [key, value] : last) {
    if (per_process_key(key)) continue;
    const auto dot = key.find('.');
    YAML::Node node = dot == std::string::npos ? root[key] : root[key.substr(0, dot)][key.substr(dot + 1)];
    if (!node || !node.IsScalar()) continue;
    const std::string stored = node.as<std::string>();
    if (!same_value(stored, value)) return key + "=" + stored + " there, " + key + "=" + value + " here";
  }
  return "";
}

Plan make_plan(const SweepSpec& spec, const SweepOptions& opt) {
  Plan plan;
  plan.out = opt.out_dir.empty() ? fs::path("runs") / "sweeps" / spec.name : fs::path(opt.out_dir);
  plan.runs = expand(spec);
  plan.bases = base_configs(spec, opt, plan.out);
  plan.jobs = std::max(1, opt.jobs);
  const int cores = opt.cores > 0 ? opt.cores : affinity_cpus();  // the CPUs this process may use
  plan.threads = std::max(1, cores / plan.jobs);
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    plan.uses_cuda.push_back(check_run_config(spec, plan, i));
    plan.states.push_back(opt.overwrite ? "new" : run_state(plan.dir(i).string()));
    if (plan.states.back() != "new") {
      const std::string diff = stale_override(plan.dir(i), plan.runs[i]);
      if (!diff.empty())
        throw std::invalid_argument("run " + plan.runs[i].name + ": " + plan.dir(i).string() +
                                    " holds a run with other settings (" + diff +
                                    "): rename the part, delete that directory, or pass --overwrite");
    }
  }
  if (plan.jobs > 1 && std::any_of(plan.uses_cuda.begin(), plan.uses_cuda.end(), [](bool b) { return b; }))
    plan.cuda_devices = static_cast<int>(torch::cuda::device_count());
  return plan;
}

// --dry-run: every run with its state and overrides; the outcomes as the directories hold them.
std::vector<RunOutcome> list_runs(const SweepSpec& spec, const Plan& plan, std::ostream& log) {
  log << spec.name << ": " << plan.runs.size() << " runs -> " << plan.out.string() << "\n";
  std::vector<RunOutcome> outcomes;
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    log << "  [" << plan.states[i] << "] " << plan.runs[i].name << " :";
    for (const auto& a : plan.runs[i].overrides) log << " " << a;
    log << "\n";
    outcomes.push_back(outcome_from_dir(plan.dir(i)));
  }
  return outcomes;
}

// Creates OUT and keeps a copy of the sweep file there (OUT/sweep.yaml).
void prepare_out_dir(const SweepSpec& spec, const fs::path& out) {
  fs::create_directories(out);
  if (fs::exists(spec.source) && fs::is_regular_file(spec.source)) {
    std::error_code ec;
    fs::copy_file(spec.source, out / "sweep.yaml", fs::copy_options::overwrite_existing, ec);
  }
}

// ---------------------------------------------------------------------------------------------
// Outcomes as runs finish; the summaries are rewritten after each.

class Recorder {
 public:
  Recorder(const SweepSpec& spec, const Plan& plan, const SweepOptions& opt, std::ostream& log)
      : spec_(spec), plan_(plan), opt_(opt), log_(log), outcomes_(plan.runs.size()) {
    for (size_t i = 0; i < plan.runs.size(); ++i)
      if (plan.states[i] == "done") outcomes_[i] = outcome_from_dir(plan.dir(i));
  }

  size_t done_before() const {
    return static_cast<size_t>(std::count(plan_.states.begin(), plan_.states.end(), "done"));
  }

  // Run i ended: `failure` is "" when it exited normally (its summary.json decides).
  void finish(size_t i, const std::string& failure) {
    RunOutcome& o = outcomes_[i];
    if (failure.empty()) {
      o = outcome_from_dir(plan_.dir(i));
      if (o.status != "done" && opt_.stop_after_steps < 0) {
        o.status = "failed";
        o.message = "no finished summary.json";
      }
    } else {
      o.status = "failed";
      o.message = failure;
    }
    log_ << "  " << o.status << ": " << plan_.runs[i].name << (o.message.empty() ? "" : " (" + o.message + ")")
         << std::endl;
    write_summaries();
  }

  // Every outcome; runs without one yet as their directories hold them.
  std::vector<RunOutcome> outcomes() const {
    std::vector<RunOutcome> now = outcomes_;
    for (size_t i = 0; i < now.size(); ++i)
      if (now[i].status.empty()) now[i] = outcome_from_dir(plan_.dir(i));
    return now;
  }

  void write_summaries() const {
    const auto now = outcomes();
    std::ofstream(plan_.out / "summary.csv") << summary_csv(spec_, plan_.runs, now);
    std::ofstream(plan_.out / "summary.md") << summary_md(spec_, plan_.runs, now);
  }

 private:
  const SweepSpec& spec_;
  const Plan& plan_;
  const SweepOptions& opt_;
  std::ostream& log_;
  std::vector<RunOutcome> outcomes_;  // status "" until the run is done before or finishes now
};

// ---------------------------------------------------------------------------------------------
// jobs == 1: the runs one after another in this process.

// Runs run i; returns "" or the failure (first line of the exception).
std::string run_in_process(const Plan& plan, const SweepOptions& opt, size_t i) {
  try {
    RunOptions ro;
    ro.out_dir = plan.dir(i).string();
    ro.resume = plan.states[i] == "resume";
    ro.overwrite = !ro.resume;
    ro.quiet = opt.quiet;
    ro.stop_after_steps = opt.stop_after_steps;
    fs::create_directories(plan.dir(i).parent_path());
    run_training(load_config(plan.bases[plan.runs[i].part], plan.runs[i].overrides), ro);
  } catch (const RunInterrupted&) {
    throw;  // SIGINT/SIGTERM stop the whole sweep; the run's checkpoint resumes on the next `sgmcmc sweep`
  } catch (const std::exception& e) {
    return first_line(e.what());
  }
  return "";
}

void run_sequentially(const Plan& plan, const SweepOptions& opt, Recorder& rec, std::ostream& log) {
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    if (plan.states[i] == "done") continue;
    log << "== " << plan.runs[i].name << (plan.states[i] == "resume" ? " (resuming)" : "") << std::endl;
    rec.finish(i, run_in_process(plan, opt, i));
  }
}

// ---------------------------------------------------------------------------------------------
// jobs > 1: child processes `exe train ...`, at most `jobs` at once.

// The per-process overrides of run i in slot `slot`: its share of the cores (unless the sweep sets
// train.threads itself) and, for CUDA configs, a device round-robin.
std::vector<std::string> process_overrides(const Plan& plan, size_t i, int slot) {
  const auto& sets = plan.runs[i].overrides;
  const bool own_threads = std::any_of(sets.begin(), sets.end(), [](const std::string& a) {
    return a.rfind("train.threads=", 0) == 0;
  });
  std::vector<std::string> out;
  if (!own_threads) out.push_back("train.threads=" + std::to_string(plan.threads));
  if (plan.uses_cuda[i] && plan.cuda_devices > 0) out.push_back("device=cuda:" + std::to_string(slot % plan.cuda_devices));
  return out;
}

// argv of the child for run i: a new run from its base config and overrides, or a resumed run
// (its config.yaml is already resolved; only the per-process settings change).
std::vector<std::string> child_args(const Plan& plan, const SweepOptions& opt, size_t i, int slot) {
  const std::string dir = plan.dir(i).string();
  std::vector<std::string> args = {opt.exe, "train"};
  std::vector<std::string> sets;
  if (plan.states[i] == "resume") {
    args.insert(args.end(), {"--resume", dir});
  } else {
    args.insert(args.end(), {plan.bases[plan.runs[i].part], "--out", dir, "--overwrite"});
    sets = plan.runs[i].overrides;
  }
  for (const auto& a : process_overrides(plan, i, slot)) sets.push_back(a);
  for (const auto& a : sets) args.insert(args.end(), {"--set", a});
  args.push_back("-q");
  if (opt.stop_after_steps >= 0) args.insert(args.end(), {"--stop-after", std::to_string(opt.stop_after_steps)});
  return args;
}

// Starts `args` with stdout and stderr to `logfile`; returns the pid, or 0 with `error` set.
// The child runs in its own process group (a Ctrl-C at the terminal reaches the sweep alone, which
// forwards it once: a second SIGINT would kill a run before its checkpoint) and dies with the sweep
// (PR_SET_PDEATHSIG: SIGTERM, so it writes its checkpoint). Between fork and exec only
// async-signal-safe calls.
pid_t spawn_logged(const std::vector<std::string>& args, const std::string& logfile, int& error) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  int status_pipe[2];  // the exec's errno, or EOF on a successful exec (O_CLOEXEC)
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    error = errno;
    return 0;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    error = errno;
    ::close(status_pipe[0]);
    ::close(status_pipe[1]);
    return 0;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(143);  // the sweep died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    const int fd = ::open(logfile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (fd > 2) ::close(fd);
    }
    ::execve(args[0].c_str(), argv.data(), environ);
    const int err = errno;
    (void)!::write(status_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(status_pipe[1]);
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(status_pipe[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  ::close(status_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    error = child_errno;
    return 0;
  }
  error = 0;
  return pid;
}

// "" for exit status 0; else "exit code N" / "killed by signal N", then the log's last line.
std::string child_failure(int status, const fs::path& logfile) {
  // kExitUnhealthy: the run finished worse than the trivial predictor; its summary.json says so, and a
  // sweep over step sizes expects such points
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == kExitUnhealthy)) return "";
  std::string last = last_nonempty_line(logfile);
  return (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                            : "killed by signal " + std::to_string(WTERMSIG(status))) +
         (last.empty() ? "" : ": " + last);
}

class ChildPool {
 public:
  ChildPool(const Plan& plan, const SweepOptions& opt, Recorder& rec, std::ostream& log)
      : plan_(plan), opt_(opt), rec_(rec), log_(log), slot_busy_(plan.jobs, false) {}

  // SIGINT / SIGTERM to the sweep: no new runs, the signal forwarded once to every running child
  // (each writes its checkpoint and exits 130 / 143), all of them waited for, then RunInterrupted.
  void run_all() {
    fs::create_directories(plan_.out / "logs");
    size_t next = 0;
    while (true) {
      const int sig = signals::pending();
      if (sig != 0 && !forwarded_) {
        for (const Child& c : running_) ::kill(c.pid, sig);
        forwarded_ = true;
      }
      while (next < plan_.runs.size() && plan_.states[next] == "done") ++next;
      if (sig == 0 && next < plan_.runs.size() && static_cast<int>(running_.size()) < plan_.jobs) {
        start(next++);
        continue;
      }
      if (running_.empty() || !wait_one()) break;
    }
    if (const int sig = signals::pending())
      throw RunInterrupted("interrupted by " + signals::signal_name(sig) +
                               "; the runs' checkpoints are written (continue with the same sgmcmc sweep command)",
                           sig);
  }

 private:
  struct Child {
    pid_t pid;
    size_t run;
    int slot;
  };

  void start(size_t i) {
    const int slot = static_cast<int>(std::find(slot_busy_.begin(), slot_busy_.end(), false) - slot_busy_.begin());
    fs::create_directories(plan_.dir(i).parent_path());
    int error = 0;
    const pid_t pid = spawn_logged(child_args(plan_, opt_, i, slot), plan_.log_file(i).string(), error);
    if (pid == 0) {
      rec_.finish(i, "cannot start " + opt_.exe + ": " + std::strerror(error));
      return;
    }
    log_ << "== " << plan_.runs[i].name << (plan_.states[i] == "resume" ? " (resuming)" : "") << " [pid " << pid
         << ", " << plan_.threads << " threads]" << std::endl;
    running_.push_back({pid, i, slot});
    slot_busy_[slot] = true;
  }

  // Waits for a child to end and records it; false when there is nothing to wait for.
  bool wait_one() {
    int status = 0;
    pid_t pid = 0;
    // Polled, so that a signal (the handler restarts a blocking waitpid: SA_RESTART) is forwarded at once.
    while ((pid = waitpid(-1, &status, WNOHANG)) == 0) {
      if (signals::pending() != 0 && !forwarded_) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (pid < 0) return errno == EINTR;
    auto it = std::find_if(running_.begin(), running_.end(), [&](const Child& c) { return c.pid == pid; });
    if (it == running_.end()) return true;
    const Child c = *it;
    running_.erase(it);
    slot_busy_[c.slot] = false;
    rec_.finish(c.run, child_failure(status, plan_.log_file(c.run)));
    return true;
  }

  const Plan& plan_;
  const SweepOptions& opt_;
  Recorder& rec_;
  std::ostream& log_;
  std::vector<Child> running_;
  std::vector<bool> slot_busy_;
  bool forwarded_ = false;
};

}  // namespace

std::string run_state(const std::string& run_dir) {
  const fs::path d(run_dir);
  if (finished(run_summary(d))) return "done";
  if (fs::exists(d / "checkpoint.pt")) return "resume";
  return "new";
}

std::vector<RunOutcome> run_sweep(const SweepSpec& spec, const SweepOptions& opt, std::ostream& log) {
  const Plan plan = make_plan(spec, opt);
  if (opt.dry_run) return list_runs(spec, plan, log);
  if (opt.report_only) {
    if (!fs::is_directory(plan.out))
      throw std::invalid_argument(plan.out.string() + ": no sweep directory to report on (nothing has run)");
    Recorder rec(spec, plan, opt, log);
    rec.write_summaries();
    log << spec.name << ": " << rec.done_before() << " of " << plan.runs.size() << " runs done; summaries rewritten in "
        << plan.out.string() << std::endl;
    return rec.outcomes();
  }
  prepare_out_dir(spec, plan.out);
  Recorder rec(spec, plan, opt, log);
  const size_t before = rec.done_before();
  log << spec.name << ": " << plan.runs.size() << " runs, " << before << " done before, " << plan.runs.size() - before
      << " to run (" << plan.jobs << " at once) -> " << plan.out.string() << std::endl;
  if (plan.jobs == 1) {
    run_sequentially(plan, opt, rec, log);
  } else {
    ChildPool(plan, opt, rec, log).run_all();
  }
  rec.write_summaries();
  return rec.outcomes();
}

}  // namespace sgmcmc
