// Private: one supervisor's Control.Supervise stream as the shepherd sees it, without gRPC
// types (the reactor in control_service.cc implements ControlTransport and feeds the stream;
// the control_messages fuzz target feeds it bytes).
//
// It checks the SupervisorHello (protocol version, id, and that a node credential speaks for
// its own supervisor id: pcp/auth/authenticator.h CheckNodeIdentity), admits the stream into
// the ControlRegistry (which refuses a second live stream for one id with ALREADY_EXISTS),
// queues the SupervisorWelcome (or the rejection), relays heartbeats and CommandAcks into the
// registry, and writes the registry's commands one at a time.
//
//   SupervisorStream stream(&registry, &options, closed_fn, caller, peer, transport);
//   if (stream.OnRead(message)) ...read the next one...;   // from OnReadDone(true)
//   stream.OnReadsDone();                                   // OnReadDone(false)
//   stream.OnWriteDone(ok);  stream.OnCancel();  stream.Tick(now);
//   stream.OnDone();         // the RPC is over: leaves the registry
//
// Thread-safe. The transport's calls are made without the stream's lock held; WriteCommand
// may also be called under the registry's lock (Send), so the transport must never complete
// a write inline (gRPC runs a reactor's OnWriteDone on its own threads).
#ifndef PCP_SHEPHERD_SRC_CONTROL_STREAM_H_
#define PCP_SHEPHERD_SRC_CONTROL_STREAM_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "pcp/auth/authenticator.h"
#include "pcp/shepherd/control_registry.h"
#include "pcp/v1/control.pb.h"

namespace pcp::shepherd {

struct ControlServiceOptions {
  uint32_t heartbeat_interval_ms = 1000;  // announced in the welcome; > 0
  uint32_t heartbeat_timeout_ms = 3000;   // announced in the welcome; > interval
  std::string version;                    // the shepherd's version, sent in the welcome
};

// The RPC underneath a stream (a gRPC server reactor).
class ControlTransport {
 public:
  virtual ~ControlTransport() = default;
  // One write at a time; `command` stays alive until the stream's OnWriteDone.
  virtual void WriteCommand(const v1::ControlCommand* command) = 0;
  // Ends the RPC with `status` (no write in flight). Called once.
  virtual void FinishStream(const absl::Status& status) = 0;
  // Cancels the RPC (the peer is presumed dead), so that a stuck write completes.
  virtual void CancelStream() = 0;
};

class SupervisorStream final : public ControlSession {
 public:
  using Clock = std::chrono::steady_clock;

  // `registry`, `options` and `transport` must outlive the stream. `closed` says whether the
  // service still takes streams (not OK after EndAllStreams). `caller`: who opened the
  // stream; its hello must be for its own id.
  SupervisorStream(ControlRegistry* registry, const ControlServiceOptions* options,
                   std::function<absl::Status()> closed, auth::Principal caller, std::string peer,
                   ControlTransport* transport);

  // ControlSession: called by the registry (under its lock).
  void Send(v1::ControlCommand command) override { Enqueue(std::move(command)); }

  // A message arrived. False: read no more (the stream is ending).
  bool OnRead(const v1::SupervisorMessage& message);
  // The supervisor half-closed (or the read failed).
  void OnReadsDone() { End(absl::OkStatus(), false, false); }
  void OnWriteDone(bool ok);
  void OnCancel() { End(absl::CancelledError("stream cancelled"), false, false); }
  // The RPC is over; no call may follow.
  void OnDone();

  // Heartbeat, or end a stream silent for the heartbeat timeout (or without a hello by then).
  void Tick(Clock::time_point now);

  // Ends the stream with `why` (the first call wins) and leaves the registry.
  // keep_queue: send what is queued first (a rejection's welcome). cancel: the peer is
  // presumed dead; cancel rather than wait for writes.
  void End(const absl::Status& why, bool keep_queue, bool cancel);

 private:
  // Checks the hello and admits the stream into the registry.
  absl::Status Admit(const v1::SupervisorMessage& message);
  void Enqueue(v1::ControlCommand command);
  // Starts the next write, or FinishStream once ending and nothing is left to write.
  void Pump();

  ControlRegistry* const registry_;
  const ControlServiceOptions* const options_;
  const std::function<absl::Status()> closed_;
  const auth::Principal caller_;
  const std::string peer_;
  ControlTransport* const transport_;
  std::atomic<Clock::rep> last_received_;

  std::mutex mu_;
  std::deque<v1::ControlCommand> queue_;
  v1::ControlCommand out_;  // being written; touched only while !writing_
  bool writing_ = false;
  bool welcomed_ = false;
  bool ending_ = false;
  bool finished_ = false;
  absl::Status end_status_;
  std::string id_;
  uint64_t token_ = 0;  // 0 until admitted
  uint64_t heartbeat_sequence_ = 0;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_CONTROL_STREAM_H_
