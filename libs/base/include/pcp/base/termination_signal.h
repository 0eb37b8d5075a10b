// Waiting for SIGTERM / SIGINT in a process whose libraries start threads before main()
// (OpenBLAS does, at load time): blocking the signals in main() does not cover those
// threads, and a signal delivered to one of them would kill the process. Here a handler
// records the signal and writes to a pipe (async-signal-safe), whichever thread runs it.
//
//   int main() {
//     PCP_CHECK_OK(InstallTerminationHandler());
//     ...start the service...
//     int sig = WaitForTerminationSignal();   // SIGTERM or SIGINT
//     service->Shutdown();
//   }
//
// Process-wide; install once. A second signal while shutting down is recorded, not fatal.
#ifndef PCP_BASE_TERMINATION_SIGNAL_H_
#define PCP_BASE_TERMINATION_SIGNAL_H_

#include "absl/status/status.h"

namespace pcp {

// Installs the SIGTERM and SIGINT handler.
[[nodiscard]] absl::Status InstallTerminationHandler();

// Blocks until SIGTERM or SIGINT has arrived (at once if one already has); returns it.
int WaitForTerminationSignal();

// Makes WaitForTerminationSignal return 0 (e.g. the service ended by itself).
void WakeTerminationWaiter();

}  // namespace pcp

#endif  // PCP_BASE_TERMINATION_SIGNAL_H_
