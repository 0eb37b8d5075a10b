// Private: one worker's Training.Connect stream as the shepherd sees it, without gRPC types
// (the reactor in training_service.cc implements SessionTransport and feeds the session).
//
// θ chunks go out without copying the parameters (the transport gets the chunk's bytes as
// a ChunkPayload), and Δ chunks come in as views of gRPC's receive buffers, copied once
// into the assembled tensors, or (streaming aggregation) checked, decoded into a one-chunk
// scratch and added to the round's RoundSum from the reading thread.
//
// Inbound, the session checks the protocol (Join first and once, chunks only for the round it
// was told to expect, Δ of exactly the announced specs, chunk sizes within limits) and turns
// valid messages into SessionObserver calls; any violation ends the stream with a status
// naming the problem. Outbound, it keeps a queue of messages and chunk streams (θ, program,
// shard) and writes one message at a time, producing chunks lazily so a queued θ costs no
// copy; heartbeats jump the queue.
//
//   auto session = std::make_shared<WorkerSession>("s-12", peer, limits, observer);
//   session->AttachTransport(reactor);            // the reactor's StartWrite / Finish
//   session->OnRead(message);                     // from OnReadDone
//   session->SendParameters(round, theta);        // from the coordinator, any thread
//   session->Close(absl::UnavailableError("no heartbeat for 3.2 s"));
//
// Thread-safe. Observer calls are made without the session's lock held.
#ifndef PCP_SHEPHERD_SRC_WORKER_SESSION_H_
#define PCP_SHEPHERD_SRC_WORKER_SESSION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "pcp/auth/authenticator.h"
#include "pcp/diloco/screening.h"
#include "pcp/rpc/chunked_list.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/v1/training.pb.h"
#include "round_sum.h"
#include "worker_event.h"

namespace pcp::shepherd {

class WorkerSession;

// The stream underneath a session (a gRPC server reactor).
class SessionTransport {
 public:
  virtual ~SessionTransport() = default;
  // One write at a time; `message` (and `payload`) stay alive until OnWriteDone. With a
  // payload, `message` is a parameter_chunk whose data field is empty and the chunk's bytes
  // are payload's, to be sent without copying (pcp/rpc/chunk_wire.h).
  virtual void StartWrite(const v1::ShepherdMessage* message, const ChunkPayload* payload) = 0;
  // Ends the RPC with `status` (no write in flight).
  virtual void Finish(const absl::Status& status) = 0;
  // Cancels the RPC so that a write stuck behind a dead peer completes (with ok = false).
  virtual void Cancel() = 0;
};

// Who learns what a session receives.
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  // A valid Join arrived. An error rejects it (e.g. AlreadyExists): the session answers with
  // a JoinAck carrying the rejection and ends the stream with the error.
  virtual absl::Status AdmitJoin(const std::shared_ptr<WorkerSession>& session) = 0;
  // The admitted worker's JoinAck is queued: work may be sent to it now.
  virtual void OnJoined(const std::shared_ptr<WorkerSession>& session) = 0;
  virtual void OnHeartbeat(const std::shared_ptr<WorkerSession>& session, const v1::WorkerHeartbeat& heartbeat) = 0;
  // The session is over (closed by either side); called exactly once, after a successful
  // AdmitJoin only.
  virtual void OnEnded(const std::shared_ptr<WorkerSession>& session, const absl::Status& why) = 0;
};

struct SessionOptions {
  uint32_t heartbeat_interval_ms = 1000;
  uint32_t heartbeat_timeout_ms = 3000;
  int64_t chunk_bytes = 1 << 20;      // sent
  int64_t max_chunk_bytes = 1 << 20;  // accepted
  std::string shepherd_version;
};

class WorkerSession : public std::enable_shared_from_this<WorkerSession> {
 public:
  // `caller`: the stream's authenticated principal; a Join for another node's supervisor id
  // is refused (PERMISSION_DENIED) before it can take that slot.
  // `observer` admits the Join and keeps the registry's bookkeeping; everything else the
  // worker sends goes to `events` (the coordinator's queue; null: dropped).
  WorkerSession(std::string session_id, std::string peer, SessionOptions options, SessionObserver* observer,
                WorkerEventSink* events, auth::Principal caller = {});

  void AttachTransport(SessionTransport* transport);

  // ---- from the transport (one call at a time per direction)
  // `payload`: a result_chunk's data, when the transport parsed it out of the message
  // without copying (its data field is then empty); views valid during the call.
  void OnRead(const v1::WorkerMessage& message, DataPieces payload = {});
  // The peer half-closed, or the stream broke.
  void OnReadsDone();
  void OnWriteDone(bool ok);
  void OnCancelled();
  // The transport is gone; no further calls into it.
  void OnTransportDone();
  // Whether the reactor should keep reading.
  bool reading() const;

  // ---- outbound, any thread
  void Send(v1::ShepherdMessage message);
  // θ for `round` in full (f32), or, with update_from_round > 0, the update from the θ the
  // worker had for that round (ParameterChunk.update_from_round), as chunked once for every
  // stream (ChunkedList: the same encoded bytes and CRCs on each).
  void SendParameters(uint64_t round, std::shared_ptr<const ChunkedList> theta, uint64_t update_from_round = 0);
  // The same with every field of the chunks' ParameterChunk but `chunk` taken from `head`
  // (Streaming DiLoCo: fragment, theta_crc32c).
  void SendParameters(const v1::ParameterChunk& head, std::shared_ptr<const ChunkedList> theta);
  // program = true: program_chunk messages; else shard_chunk messages.
  void SendBlob(bool program, std::string name, std::shared_ptr<const std::string> data);
  void SendHeartbeat();
  // Result chunks for `round` with exactly `specs`, encoded with `codec` (the job's
  // diloco.compression.up), are expected next (replaces any earlier expectation). With `sum`
  // (streaming aggregation) the result must open with a ResultHeader announcing sum's steps
  // and tokens; its declared norm is judged at once and each chunk added to the sum as it
  // arrives (a chunk that breaks the declaration ends the stream); else the Δ is assembled.
  void ExpectResult(uint64_t round, std::vector<TensorSpec> specs, codec::Codec codec = codec::Codec::kF32,
                    std::shared_ptr<RoundSum> sum = nullptr);
  // The round is over for this worker: anything it still sends for it is dropped.
  void AbandonRound(uint64_t round);
  // Ends the stream with `status` (OK for a normal end) once queued writes are out.
  // `peer_dead`: cancel a write stuck behind a peer that stopped reading (the status is then
  // lost to the peer, which is gone anyway). Idempotent.
  void Close(const absl::Status& status, bool peer_dead = false);
  // Liveness, called every heartbeat interval: a joined session that received nothing for
  // `timeout_s` is closed as dead; a closing one whose last write is stuck that long is
  // cancelled. Returns true once the transport is gone (the session can be forgotten).
  bool Tick(double timeout_s);

  // ---- identity and liveness
  const std::string& session_id() const { return session_id_; }
  const std::string& peer() const { return peer_; }
  // Valid once joined.
  const v1::Join& join() const { return join_; }
  // Whether the worker's Join declared `feature`.
  bool HasFeature(v1::WorkerFeature feature) const {
    for (int f : join_.features()) {
      if (f == feature) return true;
    }
    return false;
  }
  const std::string& supervisor_id() const { return join_.supervisor_id(); }
  bool ended() const;
  double seconds_since_receive() const;
  // Program hashes the worker has (from its Join, or sent on this stream).
  bool HasProgram(const std::string& hash) const;
  void NotePendingProgram(const std::string& hash);

 private:
  struct TensorStream {
    v1::ParameterChunk head;  // every field but chunk
    std::shared_ptr<const ChunkedList> list;
    size_t next = 0;
  };
  struct BlobStream {
    bool program;
    std::shared_ptr<const std::string> data;
    BlobChunker chunker;
  };
  using Item = std::variant<v1::ShepherdMessage, TensorStream, BlobStream>;

  absl::Status Handle(const v1::WorkerMessage& message, DataPieces payload);
  absl::Status HandleJoin(const v1::Join& join);
  absl::Status HandleResultHeader(const v1::ResultHeader& header);
  absl::Status HandleResultChunk(const v1::ResultChunk& chunk, DataPieces payload);
  // Under mu_: forgets the expected result (round, assembler, header, sum).
  void ClearResultLocked();
  absl::Status HandleRoundResult(const v1::RoundResult& result);
  // Under mu_: fills current_ with the next message; false when nothing is queued.
  bool NextMessageLocked();
  // Starts the next write or the deferred Finish, outside the lock.
  void Pump();
  void Enqueue(Item item);
  void NotifyEnded(const absl::Status& why);

  const std::string session_id_;
  const std::string peer_;
  const SessionOptions options_;
  const auth::Principal caller_;
  // Posts `body` with this session to events_.
  void PostEvent(WorkerEventBody body);
  SessionObserver* const observer_;
  WorkerEventSink* const events_;

  mutable std::mutex mu_;
  SessionTransport* transport_ = nullptr;
  std::deque<Item> outbox_;
  bool heartbeat_due_ = false;
  uint64_t heartbeat_seq_ = 0;
  v1::ShepherdMessage current_;
  std::optional<ChunkPayload> current_payload_;  // current_'s chunk data, sent zero-copy
  bool write_in_flight_ = false;
  bool write_broken_ = false;
  std::optional<absl::Status> finish_status_;  // Close was called
  bool finish_started_ = false;
  bool ended_notified_ = false;
  std::atomic<bool> joined_{false};
  bool transport_gone_ = false;
  std::chrono::steady_clock::time_point close_time_;
  v1::Join join_;
  std::set<std::string> programs_;
  std::chrono::steady_clock::time_point last_receive_;
  std::chrono::steady_clock::time_point last_chunk_taken_;  // a data chunk's write completed

  // Result assembly (touched by the reading thread, and by ExpectResult under mu_).
  uint64_t expected_round_ = 0;
  uint64_t abandoned_round_ = 0;
  std::optional<TensorListAssembler> assembler_;
  std::optional<v1::ResultHeader> header_;
  // Streaming aggregation: the round's sum, the verdict on the header's norm, and where the
  // chunks go (null when the verdict rejected the Δ: its chunks are checked and dropped).
  std::shared_ptr<RoundSum> sum_;
  std::optional<diloco::ScreenVerdict> verdict_;
  std::unique_ptr<diloco::DeltaSum::Contribution> contribution_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_WORKER_SESSION_H_
