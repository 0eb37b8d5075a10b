// Private: hands every simulated worker of a job the same SyntheticDelta, made once per
// (job, program, codec) on this class's own thread, so that no gRPC callback thread waits
// while a 124M-parameter Δ is generated and chunked.
//
//   DeltaSource source({.seed = 1, .scale = 1e-4f});
//   source.Request(key, specs, codec, [](absl::StatusOr<std::shared_ptr<const SyntheticDelta>> d) { ... });
// The callback runs on the source's thread (or at once, on the caller's, when the Δ exists).
#ifndef PCP_LOADGEN_SRC_DELTA_SOURCE_H_
#define PCP_LOADGEN_SRC_DELTA_SOURCE_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pcp/loadgen/synthetic_delta.h"

namespace pcp::loadgen {

class DeltaSource {
 public:
  using Result = absl::StatusOr<std::shared_ptr<const SyntheticDelta>>;
  using Callback = std::function<void(const Result&)>;

  explicit DeltaSource(SyntheticDeltaOptions options) : options_(options), thread_([this] { Loop(); }) {}
  ~DeltaSource() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // `key` names the Δ (job, program, codec); with `chunk_bytes` it identifies what is made.
  void Request(const std::string& name, std::vector<TensorSpec> specs, codec::Codec codec, int64_t chunk_bytes,
               Callback done) {
    const std::string key = absl::StrCat(name, "/chunk-", chunk_bytes);
    std::unique_lock<std::mutex> lock(mu_);
    if (auto it = made_.find(key); it != made_.end()) {
      Result r = it->second;
      lock.unlock();
      done(r);
      return;
    }
    pending_.push_back({key, std::move(specs), codec, chunk_bytes, std::move(done)});
    cv_.notify_all();
  }

  // The Δ made last (nullptr before the first): for the report's figures.
  std::shared_ptr<const SyntheticDelta> latest() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_;
  }

 private:
  struct Job {
    std::string key;
    std::vector<TensorSpec> specs;
    codec::Codec codec;
    int64_t chunk_bytes;
    Callback done;
  };

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stopped_ || !pending_.empty(); });
      if (stopped_) return;
      Job job = std::move(pending_.front());
      pending_.pop_front();
      auto it = made_.find(job.key);
      if (it == made_.end()) {
        lock.unlock();
        SyntheticDeltaOptions options = options_;
        options.chunk_bytes = job.chunk_bytes;
        Result r = SyntheticDelta::Create(job.specs, job.codec, options);
        lock.lock();
        it = made_.emplace(job.key, std::move(r)).first;
        if (it->second.ok()) latest_ = *it->second;
      }
      Result r = it->second;
      lock.unlock();
      job.done(r);
      lock.lock();
    }
  }

  const SyntheticDeltaOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> pending_;
  std::map<std::string, Result> made_;
  std::shared_ptr<const SyntheticDelta> latest_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_SRC_DELTA_SOURCE_H_
