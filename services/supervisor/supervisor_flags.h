// pcp-supervisor's command line: --config FILE, then every key of supervisor.yaml as a flag
// (--set KEY=VALUE, --KEY=VALUE; pcp/supervisor/supervisor_config.h), applied on top in order.
//
//   PCP_ASSIGN_OR_RETURN(SupervisorConfig config, ConfigFromCommandLine(argc, argv, usage));
#ifndef PCP_SERVICES_SUPERVISOR_SUPERVISOR_FLAGS_H_
#define PCP_SERVICES_SUPERVISOR_SUPERVISOR_FLAGS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/supervisor/supervisor_config.h"

namespace pcp::supervisor {

// Sets the usage message (`usage`, then every key flag), parses the command line (absl
// flags too) and returns the --config file (defaults if none) with every override applied
// and validated. InvalidArgument names the flag for a bad key, value or argument.
[[nodiscard]] absl::StatusOr<SupervisorConfig> ConfigFromCommandLine(int argc, char** argv, absl::string_view usage);

}  // namespace pcp::supervisor

#endif  // PCP_SERVICES_SUPERVISOR_SUPERVISOR_FLAGS_H_
