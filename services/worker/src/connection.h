// Private: one Training.Connect stream from the worker's side (sync API): a reader thread
// queues what the shepherd sends, a heartbeat thread sends WorkerHeartbeats and cancels the
// stream when the shepherd has been silent for the heartbeat timeout, and writes from any
// thread are serialised.
//
// Messages travel as raw ByteBuffers (the same protobuf bytes on the wire), as on the
// shepherd (pcp/rpc/chunk_wire.h): θ chunk data stays in gRPC's receive buffers until the
// assembler copies it into the tensor, and Δ chunk data is sent from the tensor itself.
//
//   Connection conn(channel);
//   PCP_RETURN_IF_ERROR(conn.Open(join, std::chrono::seconds(10)));   // Join -> JoinAck
//   Connection::Incoming in;
//   while (conn.Next(&in, std::chrono::milliseconds(200)) != Connection::Pop::kEnded) {
//     ... in.message, and in.payload for a ParameterChunk's data ...
//   }
//   conn.Write(message);
//   conn.Write(result_chunk_head, payload);   // Δ data referenced, not copied
//   absl::Status end = conn.Close();   // half-close, wait briefly for the shepherd's status
#ifndef PCP_WORKER_SRC_CONNECTION_H_
#define PCP_WORKER_SRC_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/status/status.h"
#include "message_handler.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/v1/training.grpc.pb.h"

namespace pcp::worker {

class Connection final : public ShepherdLink {
 public:
  enum class Pop { kMessage, kTimeout, kEnded };

  // A message from the shepherd; a ParameterChunk's data is in `payload`, not in the message.
  struct Incoming {
    v1::ShepherdMessage message;
    ReceivedPayload payload;
  };

  explicit Connection(std::shared_ptr<grpc::Channel> channel);
  ~Connection() override;

  // Called on the reader thread with every message but heartbeats as soon as it arrives
  // (before it is queued), e.g. so that a Cancel stops a running round between two steps.
  void SetPeekHook(std::function<void(const v1::ShepherdMessage&)> hook) { peek_hook_ = std::move(hook); }

  // Starts the stream, sends `join` and waits up to `timeout` for the JoinAck. Errors: the
  // rejection's status (e.g. ALREADY_EXISTS), UNAVAILABLE (no shepherd, or no answer).
  absl::Status Open(const v1::Join& join, std::chrono::milliseconds timeout);
  const v1::JoinAck& ack() const { return ack_; }

  // The next message (heartbeats are consumed here), kTimeout, or kEnded once the stream is
  // over and drained (status() says why).
  Pop Next(Incoming* out, std::chrono::milliseconds timeout);
  // Wakes a waiting Next (it returns kTimeout).
  void Interrupt();
  // Cancels the RPC (e.g. to stop waiting for a shepherd that does not answer); Open fails
  // with CANCELLED.
  void Abort();
  // False once the stream is broken.
  bool Write(const v1::WorkerMessage& message) override;
  // `head` with `payload` as its result chunk's data (pcp/rpc/chunk_wire.h); the tensor is
  // referenced until gRPC has sent it.
  bool Write(const v1::WorkerMessage& head, const ChunkPayload& payload) override;
  bool ended() const override { return ended_.load(); }
  absl::Status status() const override;
  bool Pump(const std::function<void(const v1::ShepherdMessage&, DataPieces)>& handle,
            std::chrono::milliseconds timeout) override;

  // What heartbeats report.
  void SetPhase(v1::WorkerPhase phase, uint64_t round, uint32_t steps_done) override;

  // Half-closes, waits up to `grace` for the shepherd to end the RPC, then cancels it; joins
  // the threads. Returns the RPC's final status.
  absl::Status Close(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

 private:
  void ReadLoop();
  void HeartbeatLoop();
  bool WriteBuffer(const v1::WorkerMessage& message, const grpc::ByteBuffer& buffer);

  std::shared_ptr<grpc::Channel> channel_;
  const grpc::internal::RpcMethod connect_method_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream_;
  std::function<void(const v1::ShepherdMessage&)> peek_hook_;
  v1::JoinAck ack_;

  std::mutex write_mu_;
  bool writes_done_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Incoming> inbox_;
  bool interrupted_ = false;
  bool closing_ = false;
  std::atomic<bool> ended_{false};
  absl::Status status_;
  std::chrono::steady_clock::time_point last_receive_;

  std::atomic<int> phase_{v1::WORKER_PHASE_IDLE};
  std::atomic<uint64_t> round_{0};
  std::atomic<uint32_t> steps_done_{0};

  std::thread reader_;
  std::thread heartbeat_;
};

}  // namespace pcp::worker

#endif  // PCP_WORKER_SRC_CONNECTION_H_
