// pcp-supervisor's command line: --config FILE, then flags that override the file's values.
//
//   absl::ParseCommandLine(argc, argv);
//   PCP_ASSIGN_OR_RETURN(SupervisorConfig config, ConfigFromFlags());
#ifndef PCP_SERVICES_SUPERVISOR_SUPERVISOR_FLAGS_H_
#define PCP_SERVICES_SUPERVISOR_SUPERVISOR_FLAGS_H_

#include "absl/status/statusor.h"
#include "pcp/supervisor/supervisor_config.h"

namespace pcp::supervisor {

// The --config file (defaults if none), with every flag that was given applied on top.
[[nodiscard]] absl::StatusOr<SupervisorConfig> ConfigFromFlags();

}  // namespace pcp::supervisor

#endif  // PCP_SERVICES_SUPERVISOR_SUPERVISOR_FLAGS_H_
