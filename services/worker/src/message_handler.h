// Private: what the worker does with each ShepherdMessage of one Training.Connect stream,
// without gRPC types: the current Assignment, the program and shard that follow it, θ of a
// round, and the round itself. Worker::Run feeds it from its Connection (which is the
// ShepherdLink); the worker_messages fuzz target feeds it bytes.
//
//   RoundCancels cancels;   // Peek()ed by the stream's reader thread
//   MessageHandler handler({.cache = &cache, .data_roots = &roots, .fault = &fault,
//                           .stop = &stop, .cancels = &cancels}, &conn);
//   absl::Status s = handler.Handle(in.message, in.payload.pieces());
//   if (!s.ok()) { ...the shepherd broke the protocol: send an Error, drop the stream... }
//
// A handler lives for one stream (a new stream starts with a new Assignment). Not
// thread-safe: one thread calls Handle. A StartRound runs the round's τ inner steps inside
// Handle (on the cache's backend), then sends Δ and the RoundResult through the link.
//
// Compression (the Assignment's): Δ goes up encoded with `up`, after error feedback when the
// job keeps it; after the first full θ, θ for a round may come as an update encoded with
// `down`, added to the θ the last round started from (pcp/diloco/replica.h), and checked
// against StartRound.theta_crc32c. A replica that cannot match asks for θ in full
// (ResyncRequest) instead of training on it.
#ifndef PCP_WORKER_SRC_MESSAGE_HANDLER_H_
#define PCP_WORKER_SRC_MESSAGE_HANDLER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "compute_idle.h"
#include "pcp/codec/codec.h"
#include "pcp/codec/error_feedback.h"
#include "pcp/diloco/streaming.h"
#include "pcp/rpc/tensor_chunks.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/dataset.h"
#include "pcp/v1/training.pb.h"
#include "pcp/worker/delta_fault.h"
#include "pcp/worker/program_cache.h"

namespace pcp::worker {

// The stream to the shepherd, as the handler uses it (Connection implements it).
class ShepherdLink {
 public:
  virtual ~ShepherdLink() = default;
  // False once the stream is broken.
  virtual bool Write(const v1::WorkerMessage& message) = 0;
  // `head` with `payload` as its result chunk's data; the tensor is referenced until sent.
  virtual bool Write(const v1::WorkerMessage& head, const ChunkPayload& payload) = 0;
  // What heartbeats report.
  virtual void SetPhase(v1::WorkerPhase phase, uint64_t round, uint32_t steps_done) = 0;
  virtual bool ended() const = 0;
  // Why the stream ended (OK while it has not).
  virtual absl::Status status() const = 0;
  // Streaming DiLoCo, while a round runs: waits up to `timeout` for the next message and
  // passes it to `handle`; false when none came (or the stream ended).
  virtual bool Pump(const std::function<void(const v1::ShepherdMessage&, DataPieces)>& handle,
                    std::chrono::milliseconds timeout) = 0;
};

// Cancels as the stream's reader thread sees them, before the handler gets to the message:
// the round (0 = the whole assignment) of the `epoch`-th Assignment of the stream. A running
// round checks them between steps. Thread-safe.
class RoundCancels {
 public:
  // Called with every message as it arrives.
  void Peek(const v1::ShepherdMessage& m);
  // Whether round `round` of the `epoch`-th Assignment is cancelled, or that Assignment dropped.
  bool Cancelled(uint64_t epoch, uint64_t round);
  // For a new stream.
  void Reset();

 private:
  std::mutex mu_;
  uint64_t epoch_ = 0;  // Assignments seen by the reader
  uint64_t cancelled_epoch_ = 0, cancelled_round_ = 0;
  uint64_t dropped_epoch_ = 0;  // Cancel(0)
};

class MessageHandler {
 public:
  // Not owned; each must outlive the handler.
  struct Deps {
    ProgramCache* cache = nullptr;            // programs, compiled on the cache's backend
    const DataRoots* data_roots = nullptr;    // where shared-file shards may lie
    DeltaFault* fault = nullptr;              // testing only: corrupts the Δs sent
    double slow_factor = 1;                   // testing only: each inner step takes this × its time
    bool fault_init = false;                  // testing only: θ₀ drawn from the wrong seed
    const std::atomic<bool>* stop = nullptr;  // the worker is stopping: a round ends early
    RoundCancels* cancels = nullptr;          // fed by the link's reader
    // Streaming rounds send Δ on a background thread while the next round trains; true sends
    // it on the handler's thread (tests that drive the handler from one thread).
    bool send_inline = false;
    // Δ chunk size: what the shepherd's JoinAck accepts (ChunkBytesForPeer).
    int64_t chunk_bytes = kDefaultChunkBytes;
  };

  MessageHandler(Deps deps, ShepherdLink* link) : d_(deps), link_(link) {}
  ~MessageHandler();  // waits for a Δ still being sent

  // Handles one message; a ParameterChunk's data is in `payload` when not in the message.
  // An error means the shepherd broke the protocol (FAILED_PRECONDITION: out of order;
  // INVALID_ARGUMENT: a bad message) or the worker cannot go on; problems the shepherd can
  // act on (a program that does not compile, a failed round) are sent as an Error instead,
  // and the stream goes on.
  absl::Status Handle(const v1::ShepherdMessage& msg, DataPieces payload = {});

 private:
  // The current assignment and what has arrived for it.
  struct Assignment {
    v1::Assignment msg;
    std::vector<TensorSpec> specs;
    std::optional<BlobAssembler> program;  // while the program text is arriving
    std::optional<BlobAssembler> shard;    // while an inline shard is arriving
    std::string shard_bytes;
    bool ready = false;
    ProgramCache::Entry* entry = nullptr;
    TokenSequence tokens;
    bool reset_optimizer = false;
    // The job's codecs (Assignment.compression) and the Δ's error feedback, per parameter.
    codec::Codec up = codec::Codec::kF32, down = codec::Codec::kF32;
    double up_density = 0;  // a sparse up codec's (Assignment.compression.density; 0: the default)
    bool up_feedback = false;
    double ef_decay = 1;  // β of the Δ's error feedback (Assignment.compression.ef_decay)
    std::vector<codec::ErrorFeedback> feedback;
    // How the job's θ₀ is drawn (Assignment.init), for a StartRound with theta_from_init.
    std::optional<InitRecipe> init;
    // θ for a round: in full, or as an update to `held` when theta_update_from is set.
    uint64_t theta_round = 0;
    uint64_t theta_update_from = 0;
    std::optional<TensorListAssembler> theta_assembler;
    std::vector<Tensor> theta;
    // The θ this worker last started a round from (θ for round held_round): what the next
    // θ update is added to.
    std::vector<Tensor> held;
    uint64_t held_round = 0;
    // A ResyncRequest went out for this round: its update chunks and first StartRound are
    // ignored until θ comes again in full.
    uint64_t resync_round = 0;

    // Streaming DiLoCo (Assignment.streaming): `held` is the replica of the shepherd's θ for
    // round held_round, updated one fragment at a time; the loop keeps the worker's own θ.
    diloco::StreamingOptions streaming;
    std::optional<diloco::FragmentPlan> plan;
    std::vector<std::vector<codec::ErrorFeedback>> fragment_feedback;  // per fragment, per segment
    bool load_local = false;        // θ came in full: it replaces the loop's θ before the next step
    int64_t pending_fragment = -1;  // a fragment of `held` not yet merged into the loop's θ
    // The fragment arriving: for round fragment_round (θ for that round), fragment
    // fragment_index; fragment_skip: a stale one, dropped.
    uint64_t fragment_round = 0;
    int64_t fragment_index = -1;
    bool fragment_skip = false;
    std::optional<TensorListAssembler> fragment_assembler;
  };

  absl::Status OnAssignment(const v1::Assignment& a);
  absl::Status MaybeReady();
  absl::Status OnParameters(const v1::ParameterChunk& p, DataPieces payload);
  absl::Status OnStartRound(const v1::StartRound& start);
  // θ for `round` drawn from the Assignment's init recipe (StartRound.theta_from_init); a
  // ResyncRequest when there is none or it cannot be drawn.
  void DrawInitialTheta(uint64_t round);
  // Asks for θ of `round` in full (this replica cannot match the shepherd's).
  void RequestResync(uint64_t round, uint32_t expected_crc, uint32_t actual_crc, const std::string& reason);
  // Sends the round's Δ (encoded with the job's up codec, after error feedback if the job
  // keeps it) and its RoundResult; stops early, OK, if the round is cancelled meanwhile.
  absl::Status SendDelta(uint64_t round, std::vector<Tensor> delta, const v1::RoundResult& result,
                         double norm_factor = 1);
  // Error feedback (when the job keeps it) on `delta`, in place; `feedback` one per tensor.
  absl::Status Compensate(std::vector<Tensor>& delta, std::vector<codec::ErrorFeedback>& feedback);
  // Streams `named` (already compensated) as round `round`'s ResultHeader (declaring the
  // decoded norm × `norm_factor`: 1 but for the testing fault lie:F), result chunks, then
  // `result`. Thread-safe apart from the link: reads nothing of the handler's state but `epoch`.
  // `density`: a sparse codec's.
  absl::Status StreamDelta(uint64_t epoch, uint64_t round, codec::Codec codec, double density,
                           std::vector<NamedTensor> named, const v1::RoundResult& result, double norm_factor = 1);

  // ---- Streaming DiLoCo (streaming_rounds.cc)
  // Queues the StartRound and runs the queued rounds, one after another.
  absl::Status OnStreamingStart(const v1::StartRound& start);
  absl::Status RunStreamingRound(const v1::StartRound& start);
  // A ParameterChunk of one fragment (ParameterChunk.fragment > 0).
  absl::Status OnFragment(const v1::ParameterChunk& p, DataPieces payload);
  // θ for `round` came in full: the replica, and the loop's θ before the next step.
  void TakeFullTheta(uint64_t round);
  // Before inner step `done` of round r: loads θ in full, or merges the last fragment at
  // overlap_steps (waiting for it there; the wait is added to *wait_s). False: stop the round.
  bool BeforeStep(uint64_t r, uint32_t done, double* wait_s);
  // Handles one message from the link while a round runs (StartRounds are queued, messages
  // that end the round are kept for after it). False when none came within `timeout`.
  bool PumpOne(std::chrono::milliseconds timeout);
  // Waits for the Δ being sent in the background, if any.
  void JoinSender();

  Deps d_;
  ShepherdLink* link_;
  uint64_t epoch_ = 0;  // Assignments taken on this stream
  std::optional<Assignment> assignment_;
  // Streaming: StartRounds waiting their turn; messages that arrived during a round and end
  // it (an Assignment, ...), handled after it; the first protocol error seen meanwhile; the
  // thread sending the last round's Δ while the next round trains.
  std::deque<v1::StartRound> queued_starts_;
  std::deque<v1::ShepherdMessage> deferred_;
  absl::Status pump_error_;
  bool in_round_ = false;
  std::thread sender_;
  ComputeIdle compute_idle_;  // between this assignment's rounds: pcp_worker_network_wait_seconds
};

}  // namespace pcp::worker

#endif  // PCP_WORKER_SRC_MESSAGE_HANDLER_H_
