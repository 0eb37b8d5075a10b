// The supervisors the shepherd knows (by stable supervisor id), which of them hold a live
// Control stream now, what they last reported about their worker process, and the commands
// sent to them that await an acknowledgement.
//
//   ControlRegistry registry;
//   // Admin.ListWorkers / GetCluster:
//   for (const SupervisorInfo& s : registry.ListSupervisors()) { ... s.connected, s.worker ... }
//   // Admin.RestartWorker (never blocks; `done` runs exactly once, on some other thread):
//   registry.SendCommand("node-1", MakeRestartWorker("admin request", /*grace_ms=*/0),
//                        absl::Seconds(30),
//                        [](absl::StatusOr<v1::CommandAck> ack) { ...reply to the caller... });
//   // or, from a thread that may block:
//   absl::StatusOr<v1::CommandAck> ack = registry.SendCommandAndWait("node-1", command, timeout);
//
// Outcomes of a command:
//   OK with a CommandAck    the supervisor answered; ack.code() == 0 means it was carried out,
//                           any other code is the supervisor's reason why not
//   NOT_FOUND               no supervisor ever connected with that id
//   UNAVAILABLE             the supervisor is known but not connected, or its stream broke
//                           before it answered (commands are not replayed after a reconnect)
//   DEADLINE_EXCEEDED       no answer within the timeout (it may still be carried out)
//   INVALID_ARGUMENT        the command is not RestartWorker, DrainWorker or Shutdown
//
// The Control service (control_service.h) feeds the registry through Connect / Heartbeat /
// Acknowledge / Disconnect. Everything here is thread-safe; callbacks run without the
// registry's lock held, on the thread that resolved the command (a gRPC thread, the
// registry's timer thread or the caller of SendCommand), and must not block.
#ifndef PCP_SHEPHERD_CONTROL_REGISTRY_H_
#define PCP_SHEPHERD_CONTROL_REGISTRY_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pcp/v1/control.pb.h"

namespace pcp::shepherd {

// INVALID_ARGUMENT unless `id` is 1–128 characters of [A-Za-z0-9._:-] (control.proto).
[[nodiscard]] absl::Status ValidateSupervisorId(absl::string_view id);

// Commands, ready for SendCommand (grace_ms 0 = the supervisor's default).
v1::ControlCommand MakeRestartWorker(absl::string_view reason, uint32_t grace_ms);
v1::ControlCommand MakeDrainWorker(absl::string_view reason, uint32_t grace_ms);
v1::ControlCommand MakeShutdown(absl::string_view reason, uint32_t grace_ms);

// A supervisor as the registry sees it.
struct SupervisorInfo {
  std::string supervisor_id;
  std::string host;
  std::string version;
  bool connected = false;
  // The worker process as last reported (hello or heartbeat).
  v1::WorkerProcess worker;
  // Time since anything was last received from it.
  absl::Duration last_seen;
  int64_t connected_unix_ms = 0;     // when its current (or last) stream was accepted
  int64_t disconnected_unix_ms = 0;  // when that stream ended; 0 while connected
  std::string disconnect_reason;     // why it ended
  uint64_t connections = 0;          // streams accepted so far
  uint64_t heartbeats = 0;           // heartbeats received on the current stream
  uint64_t last_heartbeat_sequence = 0;
};

// The registry's view of a live stream: lets it push commands to the supervisor.
class ControlSession {
 public:
  virtual ~ControlSession() = default;
  // Queues `command` for sending. Must not block and must not call into the registry.
  virtual void Send(v1::ControlCommand command) = 0;
};

class ControlRegistry {
 public:
  using CommandCallback = std::function<void(absl::StatusOr<v1::CommandAck>)>;

  // A supervisor disconnected for longer than `forget_after` is forgotten (its entry removed
  // when another connects), so that the registry does not grow with every id ever seen.
  explicit ControlRegistry(absl::Duration forget_after = absl::Hours(24));
  // Fails every pending command with UNAVAILABLE.
  ~ControlRegistry();
  ControlRegistry(const ControlRegistry&) = delete;
  ControlRegistry& operator=(const ControlRegistry&) = delete;

  // ---- for Admin and the rest of the shepherd

  // Every supervisor seen since the shepherd started and not forgotten, sorted by id.
  std::vector<SupervisorInfo> ListSupervisors() const;
  std::optional<SupervisorInfo> GetSupervisor(absl::string_view supervisor_id) const;
  uint32_t connected() const;

  // Sends `command` (its command_id is assigned here) and calls `done` with the outcome
  // listed at the top of this file. Never blocks.
  void SendCommand(absl::string_view supervisor_id, v1::ControlCommand command, absl::Duration timeout,
                   CommandCallback done);
  // SendCommand, then waits for the outcome.
  absl::StatusOr<v1::CommandAck> SendCommandAndWait(absl::string_view supervisor_id, v1::ControlCommand command,
                                                    absl::Duration timeout);

  // ---- for the Control service

  // Admits a stream whose hello was checked for version, id and token. ALREADY_EXISTS if the
  // id holds a live stream. Returns a token that names this stream in the calls below
  // (calls with the token of an older stream are ignored). `session` must stay valid until
  // Disconnect with that token returns.
  absl::StatusOr<uint64_t> Connect(const v1::SupervisorHello& hello, ControlSession* session);
  // Something was received on the stream (anything, for liveness).
  void Touch(absl::string_view supervisor_id, uint64_t token);
  void Heartbeat(absl::string_view supervisor_id, uint64_t token, const v1::SupervisorHeartbeat& heartbeat);
  void Acknowledge(absl::string_view supervisor_id, uint64_t token, const v1::CommandAck& ack);
  // The stream ended; its pending commands fail with UNAVAILABLE. Idempotent.
  void Disconnect(absl::string_view supervisor_id, uint64_t token, const absl::Status& why);

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    SupervisorInfo info;
    uint64_t token = 0;
    ControlSession* session = nullptr;
    Clock::time_point last_seen;
  };
  struct Pending {
    std::string supervisor_id;
    uint64_t token;
    std::string what;  // "restart_worker", ...
    Clock::time_point deadline;
    CommandCallback done;
  };
  void TimerLoop();
  SupervisorInfo Snapshot(const Entry& entry, Clock::time_point now) const;
  void ForgetGoneLocked(Clock::time_point now);

  const Clock::duration forget_after_;
  mutable std::mutex mu_;
  std::condition_variable timer_cv_;
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<uint64_t, Pending> pending_;
  uint64_t next_token_ = 1;
  uint64_t next_command_id_ = 1;
  bool stopping_ = false;
  std::thread timer_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_CONTROL_REGISTRY_H_
