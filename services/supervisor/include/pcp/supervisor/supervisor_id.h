// The supervisor's stable identity: configured, or generated once and kept in the state
// directory so that restarts of the supervisor (and of the machine) reuse it.
//
//   PCP_ASSIGN_OR_RETURN(std::string id,
//                        ResolveSupervisorId(config.supervisor_id, config.state_dir, host));
//   // "node-1" if configured; otherwise the content of <state_dir>/supervisor_id, created
//   // on first use as "<host>-<8 hex digits>".
//
// An id is 1–128 characters of [A-Za-z0-9._:-] (control.proto, SupervisorHello).
#ifndef PCP_SUPERVISOR_SUPERVISOR_ID_H_
#define PCP_SUPERVISOR_SUPERVISOR_ID_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::supervisor {

// The file in the state directory that keeps a generated id.
inline constexpr absl::string_view kSupervisorIdFile = "supervisor_id";

// INVALID_ARGUMENT saying what a valid id looks like, unless `id` is one.
[[nodiscard]] absl::Status ValidateSupervisorId(absl::string_view id);

// `configured` if non-empty (validated), else the id kept in `state_dir` (validated), else a
// new id "<host>-<random hex>" written there atomically (the directory is created).
// INVALID_ARGUMENT when there is neither a configured id nor a state directory.
[[nodiscard]] absl::StatusOr<std::string> ResolveSupervisorId(absl::string_view configured, absl::string_view state_dir,
                                                              absl::string_view host);

// This machine's host name ("localhost" if it cannot be read).
std::string HostName();

}  // namespace pcp::supervisor

#endif  // PCP_SUPERVISOR_SUPERVISOR_ID_H_
