#include "cli/launch_ranks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "runtime/cpu.h"
#include "core/signals.h"

namespace sgmcmc {
namespace {

[[noreturn]] void exec_rank(int rank, int nproc, int port, const std::vector<std::string>& args) {
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  unsetenv("TORCHELASTIC_USE_AGENT_STORE");  // rank 0 hosts the store
  // As torchrun: the ranks share the machine's cores unless the user said otherwise.
  if (!std::getenv("OMP_NUM_THREADS"))
    setenv("OMP_NUM_THREADS", std::to_string(std::max(1, affinity_cpus() / nproc)).c_str(), 1);
  std::vector<std::string> copy = args;
  std::string self = "sgmcmc";
  std::vector<char*> argv = {self.data()};
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::cerr << "sgmcmc train: rank " << rank << ": cannot execute /proc/self/exe\n";
  _exit(127);
}

int exit_status(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

}  // namespace

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("--nproc: cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) throw std::runtime_error("--nproc: cannot find a free port on 127.0.0.1");
  return ntohs(addr.sin_port);
}

int launch_local_ranks(int nproc, const std::vector<std::string>& args) {
  if (nproc < 1 || nproc > 1024) throw std::invalid_argument("--nproc: expected 1 to 1024 processes");
  const int port = free_local_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("--nproc: fork failed");
    if (pid == 0) exec_rank(r, nproc, port, args);
    pids.push_back(pid);
  }
  int first_failure = 0, running = nproc, forwarded = 0;
  while (running > 0) {
    if (const int sig = signals::pending(); sig != 0 && sig != forwarded) {
      for (pid_t p : pids)
        if (p > 0) kill(p, sig);
      forwarded = sig;
    }
    int st = 0;
    const pid_t done = waitpid(-1, &st, WNOHANG);
    if (done <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (pid_t& p : pids)
      if (p == done) p = -1;
    --running;
    if (exit_status(st) != 0 && first_failure == 0) {
      first_failure = exit_status(st);
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGTERM);  // the others would wait for the lost rank until the timeout
    }
  }
  return first_failure;
}

}  // namespace sgmcmc
