// The supervisor's end of Control.Supervise (protos/pcp/v1/control.proto): keeps one stream
// to the shepherd open, reports the worker process, and carries out the shepherd's commands.
//
//   ControlClientOptions options{.shepherd = "127.0.0.1:7070", .supervisor_id = "node-1",
//                                .host = HostName()};
//   std::unique_ptr<ControlClient> client = ControlClient::Start(
//       options, manager.get(), [&](std::string reason) { RequestTermination(reason); });
//   ...
//   client->Stop();   // ends the stream; the worker is not touched
//
// What it does:
// - Connects (a fresh channel per attempt, so gRPC's own reconnect backoff never delays
//   ours), sends SupervisorHello with the stable id and the worker's state, and waits for
//   SupervisorWelcome within connect_timeout. A rejection (e.g. ALREADY_EXISTS for an id in
//   use) or a broken stream is retried with exponential backoff and jitter, reset after a
//   welcome. The worker keeps being looked after meanwhile: nothing here blocks the
//   ProcessManager.
// - Sends SupervisorHeartbeat every heartbeat_interval_ms announced by the shepherd, and at
//   once when the worker changes state. Gives up on a shepherd silent for
//   heartbeat_timeout_ms (cancels the stream and reconnects).
// - RestartWorker -> ProcessManager::Restart, DrainWorker -> Drain, Shutdown -> Drain, and
//   then `on_shutdown`; each is answered with a CommandAck once done (an ack whose stream
//   broke meanwhile is dropped: the shepherd fails the command itself).
//
// Threading: one thread per stream does the writing and the bookkeeping; a second one blocks
// in Read. All public methods are thread-safe.
#ifndef PCP_SUPERVISOR_CONTROL_CLIENT_H_
#define PCP_SUPERVISOR_CONTROL_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/backoff.h"
#include "pcp/supervisor/process_manager.h"

namespace pcp::supervisor {

struct ControlClientOptions {
  std::string shepherd;                 // host:port
  std::string supervisor_id;            // validated, stable
  std::string host;                     // this node's name
  auth::ClientCredentials credentials;  // TLS files (resolved) and bearer token
  BackoffOptions reconnect{.initial = absl::Milliseconds(500),
                           .multiplier = 2,
                           .max = absl::Seconds(10),
                           .jitter = 0.2};
  // Time allowed to connect and receive the welcome.
  absl::Duration connect_timeout = absl::Seconds(5);
};

// Counters for logs and tests.
struct ControlClientStats {
  bool connected = false;  // a welcomed stream is open now
  uint64_t welcomes = 0;   // streams the shepherd accepted
  uint64_t attempts = 0;   // connection attempts
  uint64_t heartbeats_sent = 0;
  uint64_t commands = 0;   // commands received
  std::string last_error;  // why the last stream ended or was refused
};

class ControlClient {
 public:
  // Starts connecting in the background. `manager` must outlive the client. `on_shutdown`
  // runs once, on the client's thread, after a Shutdown command has stopped the worker.
  static std::unique_ptr<ControlClient> Start(ControlClientOptions options, ProcessManager* manager,
                                              std::function<void(std::string)> on_shutdown);
  ~ControlClient();

  // Ends the stream (cancelling it) and the client's threads. Idempotent.
  void Stop();
  ControlClientStats Stats() const;

 private:
  class Impl;
  explicit ControlClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pcp::supervisor

#endif  // PCP_SUPERVISOR_CONTROL_CLIENT_H_
