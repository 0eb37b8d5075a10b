// A whole supervisor: the worker's ProcessManager plus the ControlClient, run until
// SIGTERM/SIGINT or the shepherd's Shutdown command.
//
//   PCP_RETURN_IF_ERROR(InstallTerminationHandler());  // pcp/base/termination_signal.h
//   PCP_ASSIGN_OR_RETURN(SupervisorConfig config, LoadSupervisorConfig(path));
//   PCP_RETURN_IF_ERROR(RunSupervisor(config));        // blocks; OK after a clean stop
//
// The worker is started as
//   <worker.binary> --shepherd=<shepherd> --supervisor_id=<id> <worker.args...>
// with PCP_WORKER_INCARNATION=<n> in its environment. On stop the worker gets SIGTERM, then
// SIGKILL after `grace`; RunSupervisor returns only once it is gone.
#ifndef PCP_SUPERVISOR_SUPERVISOR_H_
#define PCP_SUPERVISOR_SUPERVISOR_H_

#include "absl/status/status.h"
#include "pcp/supervisor/supervisor_config.h"

namespace pcp::supervisor {

// Runs until WaitForTermination returns (SIGTERM, SIGINT, or the Shutdown command, which
// calls RequestTermination). Errors only for a configuration that cannot work (invalid id,
// missing worker binary, unwritable state_dir); an unreachable shepherd is retried for ever.
[[nodiscard]] absl::Status RunSupervisor(const SupervisorConfig& config);

}  // namespace pcp::supervisor

#endif  // PCP_SUPERVISOR_SUPERVISOR_H_
