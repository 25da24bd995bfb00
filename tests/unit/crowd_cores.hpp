// Other work crowding a timed case off its cores, made on purpose: what the busy rule must see
// (test_clocks.cpp). The faults plugin's stalled_reference crowds one core instead, per iteration,
// with the reference's thread pinned to it and yielding (plugins/faults/faults.cpp says why).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace mpscheck::testing {

// Twice as many spinning threads as the machine has cores, started once and parked between calls.
// Each crowd() wakes them all to spin beside the caller for `how_long`, and returns when every one
// has stopped. The threads live as long as the object, so a reading of the process's threads taken
// before and after a timed block finds them at both ends, with the time they spent waiting in the
// run queue. (Threads started and joined inside the block are gone by its end, and their waiting
// with them: on a scheduler that lets the caller keep its core, the block then looked quiet.)
class CoreCrowd {
 public:
  CoreCrowd() {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < 2 * cores; ++i) threads_.emplace_back([this] { serve(); });
  }
  CoreCrowd(const CoreCrowd&) = delete;
  CoreCrowd& operator=(const CoreCrowd&) = delete;
  ~CoreCrowd() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // The caller spins among the crowd until the deadline, then waits for the crowd to stop.
  void crowd(std::chrono::microseconds how_long) {
    const auto until = std::chrono::steady_clock::now() + how_long;
    {
      std::lock_guard<std::mutex> lock(m_);
      until_ = until;
      running_ = threads_.size();
      ++generation_;
    }
    wake_.notify_all();
    spin(until);
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [this] { return running_ == 0; });
  }

 private:
  static void spin(std::chrono::steady_clock::time_point until) {
    volatile unsigned long spins = 0;
    while (std::chrono::steady_clock::now() < until) spins = spins + 1;
  }

  void serve() {
    unsigned long seen = 0;
    for (;;) {
      std::chrono::steady_clock::time_point until;
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        until = until_;
      }
      spin(until);
      std::lock_guard<std::mutex> lock(m_);
      if (--running_ == 0) done_.notify_one();
    }
  }

  std::mutex m_;
  std::condition_variable wake_, done_;
  std::chrono::steady_clock::time_point until_{};
  std::size_t running_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace mpscheck::testing
