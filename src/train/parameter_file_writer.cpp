#include "train/parameter_file_writer.h"

#include <pthread.h>
#include <signal.h>

namespace sgmcmc {

ParameterFileWriter::~ParameterFileWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ParameterFileWriter::rethrow_locked() {
  if (error_) std::rethrow_exception(error_);
}

void ParameterFileWriter::write(std::string path, ParameterSnapshot snapshot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    rethrow_locked();
    queue_.push_back(Job{std::move(path), std::move(snapshot)});
    if (!thread_.joinable()) {
      // the run's signals (SIGINT, SIGTERM: core/signals.h) stay with the threads that handle them
      sigset_t all, old;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, &old);
      thread_ = std::thread([this] { run(); });
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
  }
  work_.notify_one();
}

void ParameterFileWriter::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return (queue_.empty() && !busy_) || error_ != nullptr; });
  rethrow_locked();
}

int64_t ParameterFileWriter::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

void ParameterFileWriter::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return !queue_.empty() || stop_; });
    if (queue_.empty()) return;  // stopped, nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr failed;
    try {
      write_parameter_file(job.path, job.snapshot);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (failed) {
      if (!error_) error_ = failed;
      queue_.clear();  // the run stops at the error; later samples are not written after a gap
    } else {
      ++written_;
    }
    if (queue_.empty() || error_) idle_.notify_all();
  }
}

}  // namespace sgmcmc
