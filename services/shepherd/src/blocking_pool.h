// Private: a few threads for the slow parts of Admin calls (validating a submitted job reads
// its data; sampling runs the model), so that gRPC callback threads never block.
//
//   BlockingPool pool(/*threads=*/2);
//   pool.Run([reactor, ...] { ...slow work...; reactor->Finish(status); });
//   pool.Stop();   // runs what is queued, then joins
#ifndef PCP_SHEPHERD_SRC_BLOCKING_POOL_H_
#define PCP_SHEPHERD_SRC_BLOCKING_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pcp::shepherd {

class BlockingPool {
 public:
  explicit BlockingPool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~BlockingPool() { Stop(); }

  void Run(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to do
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_BLOCKING_POOL_H_
