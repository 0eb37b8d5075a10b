// Private: one simulated worker of pcp-loadgen: a supervisor id, and the Training.Connect
// stream that speaks for it (gRPC's callback API, one reactor per stream; a dropped stream is
// replaced by a new one with incarnation + 1). Nothing here blocks a gRPC thread: waits
// (compute, stalls, paced sends, heartbeats, reconnects) are TimerQueue entries, and the Δ
// is made on DeltaSource's thread.
//
// Streaming DiLoCo jobs (Assignment.streaming, pcp/diloco/streaming.h; sim_worker_streaming.cc)
// are simulated as pcp-worker runs them: θ in full once, then one fragment per round; the
// StartRounds that come one round ahead are queued and computed in turn, each round waiting
// overlap_steps / steps of the way through its compute for the fragment of the round before
// (network wait), and each round's fragment Δ (one synthetic Δ per fragment) is sent while the
// next round computes.
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
#include "pcp/diloco/streaming.h"
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
  double slow_mbit = 0;             // > 0: send Δ at this rate
  std::set<uint64_t> stall_rounds;  // stall after these rounds' StartRound
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

  // ---- Streaming DiLoCo (sim_worker_streaming.cc). Under mu_ unless said otherwise.
  bool streaming() const { return plan_.has_value(); }
  // The synthetic Δ round `round` sends (its fragment's; the one Δ of a plain job); null
  // until made.
  const SyntheticDelta* DeltaFor(uint64_t round) const;
  bool DeltasReady() const;
  // The plan and one Δ request per fragment (OnAssignment); false: the run failed.
  bool PlanFragments(const v1::Assignment& a, const std::vector<TensorSpec>& specs, codec::Codec up,
                     const std::string& key, uint64_t epoch);
  // A StartRound of a streaming job: checked and queued. Returns whether to drop the stream.
  bool OnStreamingStart(const v1::StartRound& start);
  // θ (in full or a fragment) for `round` is complete: the replica holds θ for that round.
  // Returns whether to drop the stream.
  bool OnStreamingTheta(const v1::ParameterChunk& p);
  // Starts computing the next queued round when none computes and θ is held.
  void BeginNextRound();
  // Timer thread: the round reached overlap_steps; waits for the fragment before it, if late.
  void MergePoint(uint64_t generation, uint64_t round);
  // The rest of the round's compute after the merge.
  void FinishCompute(uint64_t generation, uint64_t round, Clock::duration rest);
  void ResetStreaming();

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
  bool finishing_ = false;    // reads failed: no new operations
  bool paused_ = false;       // stalled: no reads, writes or heartbeats
  bool read_parked_ = false;  // a read is due once the stall ends
  std::deque<Item> queue_;
  bool writing_ = false;
  bool pace_timer_ = false;
  ChunkMessageParser parser_;
  uint32_t heartbeat_ms_ = 1000;
  int64_t chunk_bytes_ = kDefaultChunkBytes;  // Δ chunks: what the JoinAck accepts
  uint64_t heartbeat_seq_ = 0;

  // The assignment.
  std::optional<v1::Assignment> assignment_;
  uint64_t assignment_epoch_ = 0;
  bool program_done_ = true, shard_done_ = true, ready_sent_ = false;
  // One synthetic Δ for a plain job; one per fragment for a streaming one.
  std::vector<std::shared_ptr<const SyntheticDelta>> deltas_;
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

  // Streaming DiLoCo.
  std::optional<diloco::FragmentPlan> plan_;
  int64_t overlap_steps_ = 0;
  uint32_t theta_fragment_ = 0;       // ParameterChunk.fragment of the θ message arriving
  int64_t theta_bytes_expected_ = 0;  // its size as f32 (the drop point is a share of it)
  uint64_t held_round_ = 0;           // the round whose θ the replica holds (0: none)
  struct QueuedStart {
    uint64_t round = 0;
    uint32_t steps = 0;
    uint64_t cursor = 0;
  };
  std::deque<QueuedStart> starts_;  // StartRounds not begun (they come one round ahead)
  bool computing_ = false;
  bool merge_wait_ = false;  // computing round round_ stopped at overlap_steps
  Clock::time_point merge_wait_since_;
  Clock::duration merge_rest_{};                  // its compute left after the merge
  std::optional<Clock::time_point> compute_end_;  // the last round's compute end
};

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_SRC_SIM_WORKER_H_
