// Private: the Control service (protos/pcp/v1/control.proto), callback API, one reactor per
// supervisor stream, which feeds a SupervisorStream (control_stream.h). It checks each SupervisorHello (protocol version, id, and that a node
// credential speaks for its own supervisor id: pcp/auth/authenticator.h CheckNodeIdentity),
// admits the stream into the ControlRegistry (which refuses a second live stream for one id
// with ALREADY_EXISTS), answers with SupervisorWelcome, relays heartbeats and CommandAcks
// into the registry, and sends the registry's commands down the stream.
//
//   ControlRegistry registry;
//   ControlService control(&registry, {.heartbeat_interval_ms = 1000,
//                                      .heartbeat_timeout_ms = 3000,
//                                      .version = "0.1.0"});
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&control);
//   std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
//   ...
//   control.EndAllStreams(absl::UnavailableError("shepherd shutting down"));
//   server->Shutdown();     // then destroy `control`, then `registry`
//
// A thread of the service sends a Heartbeat on every stream every heartbeat_interval_ms and
// ends (UNAVAILABLE) a stream that has been silent for heartbeat_timeout_ms, or that has not
// said hello within that time: a stalled supervisor looks alive on its socket for minutes.
// Lifetime: the registry must outlive the service, the service must outlive the server.
#ifndef PCP_SHEPHERD_SRC_CONTROL_SERVICE_H_
#define PCP_SHEPHERD_SRC_CONTROL_SERVICE_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "control_stream.h"
#include "pcp/shepherd/control_registry.h"
#include "pcp/v1/control.grpc.pb.h"

namespace pcp::shepherd {

class ControlService final : public v1::Control::CallbackService {
 public:
  ControlService(ControlRegistry* registry, ControlServiceOptions options);
  ~ControlService() override;

  grpc::ServerBidiReactor<v1::SupervisorMessage, v1::ControlCommand>* Supervise(
      grpc::CallbackServerContext* context) override;

  // Ends every open stream with `why` (before Server::Shutdown, which otherwise waits for
  // the streams) and refuses new ones with it.
  void EndAllStreams(const absl::Status& why);

 private:
  class Reactor;
  void Add(Reactor* reactor);
  void Remove(Reactor* reactor);
  void TickLoop();
  absl::Status Closed() const;

  ControlRegistry* const registry_;
  const ControlServiceOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<Reactor*> reactors_;
  // Lock order: mu_ (the set of reactors) before the registry's lock; closed_mu_ is a leaf
  // (a reaction that gRPC runs inline may take it while mu_ is held).
  mutable std::mutex closed_mu_;
  absl::Status closed_;  // not OK after EndAllStreams
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_CONTROL_SERVICE_H_
