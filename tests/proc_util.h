// Helpers for tests that drive the sgmcmc binary as a child process (fork/exec), signal it and
// wait for it, with short polling loops bounded by a deadline (no sleeping as synchronisation).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sgmcmc::test_util {

inline std::string read_text(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts SGMCMC_BINARY with `args` (no shell), stdout/stderr to `log_prefix`.out/.err. With
// `max_file_bytes` > 0, writes beyond that size per file fail as on a full disk (RLIMIT_FSIZE, with
// SIGXFSZ ignored so that write() returns EFBIG instead of the signal killing the process).
inline pid_t spawn_sgmcmc(const std::vector<std::string>& args, const std::string& log_prefix,
                          long max_file_bytes = 0) {
  pid_t pid = fork();
  if (pid == 0) {
    int out = open((log_prefix + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open((log_prefix + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    if (max_file_bytes > 0) {
      signal(SIGXFSZ, SIG_IGN);
      struct rlimit lim = {static_cast<rlim_t>(max_file_bytes), static_cast<rlim_t>(max_file_bytes)};
      setrlimit(RLIMIT_FSIZE, &lim);
    }
    std::vector<char*> argv;
    std::string bin = SGMCMC_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for the child; returns its exit status, or 128 + signal when killed by one.
inline int wait_child(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Number of lines in a file (0 when it does not exist).
inline int count_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// Polls (every 2 ms, up to `deadline_s`) until `path` has at least `lines` lines; false when the
// child exits first or the deadline passes.
inline bool wait_for_lines(pid_t pid, const std::string& path, int lines, double deadline_s = 120) {
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < deadline_s) {
    if (count_lines(path) >= lines) return true;
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return count_lines(path) >= lines;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Polls `done` every 10 ms until it holds or `deadline_s` passes; whether it held (the events waited
// for happen in other processes; the deadline only bounds a failing test).
inline bool within(double deadline_s, const std::function<bool()>& done) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!done()) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > deadline_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace sgmcmc::test_util
