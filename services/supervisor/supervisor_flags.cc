#include "supervisor_flags.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"

// The only flag that is not a key of supervisor.yaml; the keys' flags come from its table.
ABSL_FLAG(std::string, config, "", "supervisor YAML file (see config/supervisor.yaml); the key flags override it");

namespace pcp::supervisor {

absl::StatusOr<SupervisorConfig> ConfigFromCommandLine(int argc, char** argv, absl::string_view usage) {
  absl::SetProgramUsageMessage(absl::StrCat(usage, "\n\n", SupervisorFlagsHelp()));
  std::vector<char*> rest;
  std::vector<yaml_fields::Override> overrides;
  PCP_RETURN_IF_ERROR(SupervisorKeyFlags().Extract(argc, argv, yaml_fields::IsAbslFlag, rest, overrides));
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  if (positional.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", positional[1], "'"));
  }
  return SupervisorConfigFromCommandLine(absl::GetFlag(FLAGS_config), overrides);
}

}  // namespace pcp::supervisor
