// Private: one thread that runs callbacks at given times (pcp-loadgen's compute waits,
// heartbeats, paced sends, stalls and reconnects). Callbacks run on that thread, one at a
// time, and must be short: they may lock a worker's mutex and start a gRPC operation, never
// wait.
//
//   TimerQueue timers;
//   timers.After(std::chrono::milliseconds(500), [] { ... });
//   timers.Stop();   // drops what has not run; joins the thread (also in the destructor)
#ifndef PCP_LOADGEN_SRC_TIMER_QUEUE_H_
#define PCP_LOADGEN_SRC_TIMER_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace pcp::loadgen {

class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;

  TimerQueue() : thread_([this] { Loop(); }) {}
  ~TimerQueue() { Stop(); }
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  void At(Clock::time_point when, std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      queue_.push(Entry{when, next_seq_++, std::move(fn)});
    }
    cv_.notify_one();
  }
  void After(Clock::duration delay, std::function<void()> fn) { At(Clock::now() + delay, std::move(fn)); }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Entry {
    Clock::time_point when;
    uint64_t seq;  // equal times run in order of scheduling
    std::function<void()> fn;
    bool operator>(const Entry& o) const { return when != o.when ? when > o.when : seq > o.seq; }
  };

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopped_) {
      if (queue_.empty()) {
        cv_.wait(lock);
        continue;
      }
      if (queue_.top().when > Clock::now()) {
        cv_.wait_until(lock, queue_.top().when);
        continue;
      }
      std::function<void()> fn = std::move(const_cast<Entry&>(queue_.top()).fn);
      queue_.pop();
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue_;
  uint64_t next_seq_ = 0;
  bool stopped_ = false;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_SRC_TIMER_QUEUE_H_
