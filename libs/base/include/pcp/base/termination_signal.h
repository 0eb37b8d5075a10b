// Waiting for the end of a service: SIGTERM or SIGINT, or a request from inside (e.g. the
// shepherd's Shutdown command to a supervisor, or a worker whose work ended by itself). The
// one mechanism every PCP process uses.
//
// Libraries may start threads before main() (OpenBLAS does, at load time), so blocking the
// signals in main() would not cover those threads, and a signal delivered to one of them
// would kill the process. Here a handler records the signal and writes to a pipe
// (async-signal-safe), whichever thread runs it.
//
//   int main() {
//     PCP_CHECK_OK(InstallTerminationHandler());
//     ...start the service; somewhere: RequestTermination("shutdown command");
//     std::string why = WaitForTermination();   // "SIGTERM", "SIGINT" or the request's reason
//     service->Shutdown();
//   }
//
// Process-wide; install once. A second signal while shutting down is recorded, not fatal.
// Children started with fork/exec get the default dispositions back at exec.
#ifndef PCP_BASE_TERMINATION_SIGNAL_H_
#define PCP_BASE_TERMINATION_SIGNAL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pcp {

// Installs the SIGTERM and SIGINT handler. Idempotent.
[[nodiscard]] absl::Status InstallTerminationHandler();

// Blocks until SIGTERM or SIGINT has arrived or RequestTermination has been called (at once
// if either already happened) and returns why: "SIGTERM", "SIGINT" or the request's reason.
// Every later call, from any thread, returns the same at once. Needs InstallTerminationHandler.
std::string WaitForTermination();

// Ends WaitForTermination with `reason` (non-empty). Thread-safe; the first reason wins,
// a signal that arrived earlier included.
void RequestTermination(absl::string_view reason);

}  // namespace pcp

#endif  // PCP_BASE_TERMINATION_SIGNAL_H_
