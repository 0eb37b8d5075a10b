// Waiting for the end of a service: SIGTERM or SIGINT, or a request from inside (e.g. the
// shepherd's Shutdown command).
//
//   int main(int argc, char** argv) {
//     PCP_CHECK_OK(BlockStopSignals());   // first, before any thread exists
//     StopSignal stop;
//     ... start threads; somewhere: stop.Request("shutdown command");
//     std::string why = stop.Wait();      // "SIGTERM", "SIGINT" or the request's reason
//   }
//
// The signals are blocked in every thread (threads inherit the mask of the thread that
// creates them) and read synchronously through a signalfd, so no signal handler runs and
// no library thread can swallow them.
#ifndef PCP_SUPERVISOR_STOP_SIGNAL_H_
#define PCP_SUPERVISOR_STOP_SIGNAL_H_

#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pcp::supervisor {

// Blocks SIGTERM and SIGINT in the calling thread. Call from main() before any thread starts.
[[nodiscard]] absl::Status BlockStopSignals();

class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  // Blocks until SIGTERM or SIGINT arrives or Request() is called; returns why. Once
  // stopped, returns the same reason at once.
  std::string Wait();
  // Ends Wait() with `reason`. Thread-safe; the first reason wins.
  void Request(absl::string_view reason);

 private:
  int signal_fd_ = -1;
  int event_fd_ = -1;
  std::mutex mu_;
  std::string reason_;
};

}  // namespace pcp::supervisor

#endif  // PCP_SUPERVISOR_STOP_SIGNAL_H_
