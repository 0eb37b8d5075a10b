// Keeping the shepherd's listener alive, or the process restartable (issue 31).
//
// gRPC 1.51's TCP server stops accepting for good after one accept4() failure other than
// EAGAIN/ECONNABORTED: with the open-file limit reached once (a flood of idle connections),
// it logs "Failed accept4: Too many open files" and drops the port, while the process, its
// metrics and SIGTERM keep working (grpc/grpc#16058, #20418; later gRPC retries instead).
// Nothing in 1.51 limits connections in total or per peer before authentication either.
// So: raise the descriptor limit as far as allowed, and watch the accept path from outside:
//
//   RaiseOpenFileLimit();                         // soft RLIMIT_NOFILE to the hard limit, logged
//   ListenerWatchdog watchdog({.target = "127.0.0.1:7070", .tls = false,
//                              .interval = absl::Seconds(10), .failures = 3},
//                             [](std::string why) { /* log, exit non-zero */ });
//
// Each probe opens a new TCP connection to the real listening port on loopback, so it
// passes through accept(): without TLS a grpc.health.v1 Check (answered SERVING), with TLS
// a ClientHello answered by the server's ServerHello (the probe has no client certificate,
// so it closes there, which gRPC does not log). A listener that
// no longer accepts leaves the connection in the kernel's queue, and the probe times out.
// After a successful probe, WATCHDOG=1 goes to systemd ($NOTIFY_SOCKET; the unit's
// WatchdogSec= restarts a shepherd that stops sending it); after `failures` failed probes in
// a row `on_wedged` runs once, with the reason. Design notes: docs/operations.md#listener-watchdog.
#ifndef PCP_SHEPHERD_LISTENER_WATCHDOG_H_
#define PCP_SHEPHERD_LISTENER_WATCHDOG_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pcp/base/sd_notify.h"

namespace pcp::shepherd {

// Raises the soft RLIMIT_NOFILE to the hard limit and logs both (the only descriptor bound
// a process may raise by itself). Returns the soft limit in force afterwards.
int64_t RaiseOpenFileLimit();

// The host a loopback probe connects to for `listen` (HOST:PORT of the bound address):
// 127.0.0.1 / [::1] for a wildcard host, else the host itself; "HOST:PORT".
std::string ProbeTarget(absl::string_view listen_host, int port);

// One probe of the listener at `target` (see above); OK when it answered within `timeout`.
absl::Status ProbeListener(const std::string& target, bool tls, absl::Duration timeout);

struct ListenerWatchdogOptions {
  std::string target;       // HOST:PORT, from ProbeTarget
  bool tls = false;         // the listener speaks TLS: probe the accept path only
  absl::Duration interval;  // between probes (the first one at once)
  absl::Duration timeout;   // one probe's bound (<= interval)
  int failures = 3;         // failed probes in a row before on_wedged
};

class ListenerWatchdog {
 public:
  // Starts the probing thread. `on_wedged` runs on it, once.
  ListenerWatchdog(ListenerWatchdogOptions options, std::function<void(std::string)> on_wedged);
  ~ListenerWatchdog();  // stops the thread (a probe in flight ends within its timeout)
  ListenerWatchdog(const ListenerWatchdog&) = delete;
  ListenerWatchdog& operator=(const ListenerWatchdog&) = delete;

  bool wedged() const;

 private:
  void Run();

  const ListenerWatchdogOptions options_;
  const std::function<void(std::string)> on_wedged_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool wedged_ = false;
  std::thread thread_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_LISTENER_WATCHDOG_H_
