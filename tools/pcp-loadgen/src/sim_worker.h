// Private: one simulated worker of pcp-loadgen: a supervisor id, and the Training.Connect
// stream that speaks for it (gRPC's callback API, one reactor per stream; a dropped stream is
// replaced by a new one with incarnation + 1). Nothing here blocks a gRPC thread: waits
// (compute, stalls, paced sends, heartbeats, reconnects) are TimerQueue entries, and the Δ
// is made on DeltaSource's thread.
//
//   FleetContext ctx{...};
//   SimWorker w(1, &ctx, channel, behaviour);
//   w.Start();
//   ...
//   w.Stop();   // cancels the stream; finished() once its reactor is done
#ifndef PCP_LOADGEN_SRC_SIM_WORKER_H_
#define PCP_LOADGEN_SRC_SIM_WORKER_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "delta_source.h"
#include "pcp/loadgen/loadgen.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/v1/training.pb.h"
#include "round_timeline.h"
#include "timer_queue.h"

namespace pcp::loadgen {

// What all simulated workers share. Outlives them.
struct FleetContext {
  const LoadgenOptions* options = nullptr;
  TimerQueue* timers = nullptr;
  RoundTimeline* timeline = nullptr;
  DeltaSource* deltas = nullptr;
  std::atomic<bool> stopping{false};

  // The first fatal error of the run (a protocol error, a refused Join): the run ends with it.
  void Fail(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu);
    if (fatal.ok()) fatal = std::move(status);
  }
  absl::Status failure() const {
    std::lock_guard<std::mutex> lock(mu);
    return fatal;
  }
  // From the first Assignment: the job and its parameter count.
  void NoteAssignment(const std::string& job, int64_t params) {
    std::lock_guard<std::mutex> lock(mu);
    if (job_id.empty()) job_id = job;
    parameters = params;
  }

  mutable std::mutex mu;
  absl::Status fatal;
  std::string job_id;
  int64_t parameters = 0;
};

// The faults this worker plays (LoadgenOptions).
struct Behaviour {
  double slow_mbit = 0;            // > 0: send Δ at this rate
  std::set<uint64_t> stall_rounds; // stall after these rounds' StartRound
};

class SimWorker {
 public:
  SimWorker(int index, FleetContext* ctx, std::shared_ptr<grpc::Channel> channel, Behaviour behaviour);
  ~SimWorker();
  SimWorker(const SimWorker&) = delete;
  SimWorker& operator=(const SimWorker&) = delete;

  const std::string& id() const { return id_; }
  void Start();
  void Stop();
  bool finished() const;

 private:
  class Stream;
  using Clock = std::chrono::steady_clock;
  enum class Kind { kControl, kHeartbeat, kDelta, kResult };
  struct Item {
    grpc::ByteBuffer buffer;
    Kind kind;
    uint64_t round;
    int64_t bytes;
  };
  // Where in a round a planned drop happens.
  enum class DropAt { kNone, kTheta, kCompute, kSending };

  // Reactor callbacks.
  void OnReadDone(Stream* s, bool ok);
  void OnWriteDone(Stream* s, bool ok);
  void OnDone(Stream* s, const grpc::Status& status);

  // Under mu_: a new stream with its Join queued; StartStream starts it, outside mu_.
  Stream* OpenStream();
  void StartStream(Stream* s);
  // Starts the next queued write when none is in flight (honouring pacing and stalls).
  void Pump();
  // Cancels the current stream (a planned drop), from any thread.
  void Drop(uint64_t generation, const char* where);
  // Under mu_: marks the current stream's end as planned, lifts a stall and holds the stream;
  // returns whether a parked read must be restarted. CancelHeld, outside mu_, then cancels it.
  bool PlanDrop();
  // Outside mu_: cancels a stream held by PlanDrop (restarting its parked read, which fails at
  // once and so ends the stream) and releases the hold.
  static void CancelHeld(Stream* s, bool resume_read);
  // Resumes reading after a stall.
  void Resume(uint64_t generation);
  void Heartbeat(uint64_t generation);
  void ComputeDone(uint64_t generation, uint64_t round);

  // Under mu_. Return whether the stream should be dropped now.
  bool Handle(const v1::ShepherdMessage& m, int64_t payload_bytes);
  void OnAssignment(const v1::Assignment& a);
  void MaybeReady();
  void Enqueue(const v1::WorkerMessage& m, Kind kind, uint64_t round = 0);
  void ClearRound(uint64_t round);
  void ResetStreamState();

  const int index_;
  const std::string id_;
  FleetContext* const ctx_;
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  const Behaviour behaviour_;

  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  bool stopped_ = false;
  bool done_ = false;  // stopped and no stream open
  uint64_t incarnation_ = 0;
  uint64_t generation_ = 0;
  bool planned_drop_ = false;  // the current stream's end was our doing

  // The current stream (nullptr between streams) and its state.
  Stream* stream_ = nullptr;
  bool finishing_ = false;  // reads failed: no new operations
  bool paused_ = false;     // stalled: no reads, writes or heartbeats
  bool read_parked_ = false;  // a read is due once the stall ends
  std::deque<Item> queue_;
  bool writing_ = false;
  bool pace_timer_ = false;
  ChunkMessageParser parser_;
  uint32_t heartbeat_ms_ = 1000;
  uint64_t heartbeat_seq_ = 0;

  // The assignment.
  std::optional<v1::Assignment> assignment_;
  uint64_t assignment_epoch_ = 0;
  bool program_done_ = true, shard_done_ = true, ready_sent_ = false;
  std::shared_ptr<const SyntheticDelta> delta_;
  int64_t theta_bytes_full_ = 0;  // |θ| × 4

  // The round.
  uint64_t theta_round_ = 0;
  uint64_t theta_complete_round_ = 0;  // the round whose θ has arrived in full
  int64_t theta_bytes_ = 0;
  uint64_t round_ = 0;
  uint64_t cancelled_round_ = 0;
  uint32_t steps_ = 0;
  uint64_t cursor_ = 0;
  std::optional<Clock::time_point> last_delta_sent_;
  double network_wait_ms_ = 0;
  DropAt drop_at_ = DropAt::kNone;
  double drop_fraction_ = 0;
  int64_t delta_chunks_sent_ = 0;
  Clock::time_point send_start_;
  int64_t send_bytes_ = 0;
};

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_SRC_SIM_WORKER_H_
