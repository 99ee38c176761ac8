#include "train/parameter_file_writer.h"

#include <pthread.h>
#include <signal.h>

#include <iostream>

namespace sgmcmc {

namespace {

// Every signal blocked on this thread while it lives, the mask restored after (also when it throws), so
// that a thread started in between inherits the full mask.
class BlockAllSignals {
 public:
  BlockAllSignals() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  ~BlockAllSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockAllSignals(const BlockAllSignals&) = delete;
  BlockAllSignals& operator=(const BlockAllSignals&) = delete;

 private:
  sigset_t old_;
};

}  // namespace

ParameterFileWriter::~ParameterFileWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (error_ && !reported_) {  // a run ending on another error: say which sample was lost
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      std::cerr << "sgmcmc: a sample was not written: " << e.what() << std::endl;
    } catch (...) {
    }
  }
}

void ParameterFileWriter::rethrow_locked() {
  if (!error_) return;
  reported_ = true;
  std::rethrow_exception(error_);
}

void ParameterFileWriter::write(std::string path, ParameterSnapshot snapshot) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    rethrow_locked();
    if (!thread_.joinable()) {
      // the run's signals (SIGINT, SIGTERM: core/signals.h) stay with the threads that handle them
      BlockAllSignals blocked;
      thread_ = std::thread([this] { run(); });
    }
    // a slow disk holds the run back rather than piling up snapshots
    space_.wait(lock, [this] { return queue_.size() < kMaxQueued || error_ != nullptr; });
    rethrow_locked();
    queue_.push_back(Job{std::move(path), std::move(snapshot)});
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
    std::exception_ptr failed;
    {
      Job job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      space_.notify_one();
      try {
        write_parameter_file(job.path, job.snapshot);
      } catch (...) {
        failed = std::current_exception();
      }
    }  // the snapshot's pinned memory and events freed outside the lock
    lock.lock();
    busy_ = false;
    if (failed) {
      if (!error_) error_ = failed;
      queue_.clear();  // the run stops at the error; later samples are not written after a gap
      space_.notify_all();
    } else {
      ++written_;
    }
    if (queue_.empty() || error_) idle_.notify_all();
  }
}

}  // namespace sgmcmc
