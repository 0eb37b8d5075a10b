// The shepherd as one object: job queue and persistence, the DiLoCo coordinator, the worker
// registry, and a gRPC server with the Training, Admin (and Control) services, the health
// service and server reflection. pcp-shepherd's main() and in-process tests use it alike.
//
//   ShepherdConfig config;
//   config.listen = "127.0.0.1:0";
//   config.state_dir = "/tmp/shepherd";
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<Shepherd> shepherd, Shepherd::Start(config));
//   std::string target = shepherd->address();    // "127.0.0.1:41235" (the bound port)
//   ...
//   shepherd->Shutdown();   // checkpoints a running job, ends every stream, stops the server
//
// Shutdown is safe to call from any thread (e.g. one that waits for SIGTERM), once or more.
#ifndef PCP_SHEPHERD_SHEPHERD_H_
#define PCP_SHEPHERD_SHEPHERD_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "pcp/shepherd/shepherd_config.h"

namespace pcp::shepherd {

class Shepherd {
 public:
  // Opens the state directory (resuming a job that was running), binds, starts serving.
  static absl::StatusOr<std::unique_ptr<Shepherd>> Start(const ShepherdConfig& config);
  ~Shepherd();

  // HOST:PORT actually bound (the port resolved when the config asked for 0).
  const std::string& address() const;
  int port() const;

  // True once the listener watchdog found the listening port no longer accepting (and
  // requested termination): pcp-shepherd then exits 1, for its supervisor to restart it.
  bool listener_wedged() const;

  void Shutdown();

 private:
  struct Impl;
  explicit Shepherd(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SHEPHERD_H_
