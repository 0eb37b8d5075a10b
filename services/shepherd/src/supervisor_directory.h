// Private: what the Admin service needs from the supervisors' Control streams, as an
// interface, so that admin_service.cc does not depend on how the Control service is built.
// The Control service (control_*.cc) provides the implementation; without one, RestartWorker
// and DrainWorker answer UNIMPLEMENTED and ListWorkers shows no supervisor state.
//
//   directory->Command(SupervisorCommand::kRestart, request, deadline,
//                      [reactor](absl::StatusOr<v1::WorkerCommandResponse> r) { ... });
#ifndef PCP_SHEPHERD_SRC_SUPERVISOR_DIRECTORY_H_
#define PCP_SHEPHERD_SRC_SUPERVISOR_DIRECTORY_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::shepherd {

enum class SupervisorCommand { kRestart, kDrain };

class SupervisorDirectory {
 public:
  virtual ~SupervisorDirectory() = default;
  // Sends the command to the supervisor with request.supervisor_id(); `done` runs once with
  // its acknowledgement or an error (NOT_FOUND unknown id, UNAVAILABLE not connected,
  // DEADLINE_EXCEEDED no acknowledgement by `deadline`). Must not block.
  virtual void Command(SupervisorCommand command, const v1::WorkerCommandRequest& request,
                       std::chrono::system_clock::time_point deadline,
                       std::function<void(absl::StatusOr<v1::WorkerCommandResponse>)> done) = 0;
  // Every supervisor known (connected or not), with the worker process it last reported.
  struct Supervisor {
    std::string supervisor_id;
    std::string host;
    bool connected = false;
    v1::WorkerProcess process;
  };
  virtual std::vector<Supervisor> List() const = 0;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_SUPERVISOR_DIRECTORY_H_
