// pcpctl as a library: every command of the admin CLI, run against a shepherd's Admin
// service, writing to the given streams. main.cc only turns flags into PcpctlOptions.
//
//   PcpctlOptions options;
//   options.shepherd = "127.0.0.1:7070";
//   int exit_code = RunPcpctl({"submit", "config/jobs/tiny.yaml"}, options, stdout, stderr);
//
// Commands (operands after the command name):
//   submit JOB.yaml      send the file's text; prints the job id (only the id with `quiet`)
//   jobs                 table of all jobs, newest first
//   status JOB_ID        one job in detail (`show_yaml`: with its effective configuration)
//   cancel JOB_ID        cancel a queued or running job (`reason`)
//   watch JOB_ID         live progress until the job ends; exit code from the job's result
//   workers              table of worker slots
//   restart SUPERVISOR   restart that supervisor's worker (`reason`, `grace_ms`)
//   drain SUPERVISOR     stop that supervisor's worker and keep it stopped
//   sample [JOB_ID]      text from a job's parameters (`prompt`, `max_new_tokens`, ...)
//   cluster              the shepherd at a glance
//   history JOB_ID       the job's per-round record as a table (`csv`, `json`: as CSV or
//                        JSON lines, pcp/history/round_record_format.h)
//   plot JOB_ID          train / val loss vs rounds and vs tokens as a PNG (`out`)
//
// Errors go to `err` as one line, "pcpctl COMMAND: MESSAGE", the shepherd's message as is
// (for a YAML mistake it names file, line and column).
#ifndef PCP_PCPCTL_PCPCTL_H_
#define PCP_PCPCTL_PCPCTL_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "pcp/auth/tls_credentials.h"

namespace pcp::pcpctl {

// The shepherd's default Admin address; its default listen port is 7070.
inline constexpr char kDefaultShepherd[] = "127.0.0.1:7070";
// Environment variable that overrides kDefaultShepherd.
inline constexpr char kShepherdEnv[] = "PCP_SHEPHERD";

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;         // a call failed, or bad input (a file, an id)
inline constexpr int kExitUsage = 2;         // wrong command line
inline constexpr int kExitJobFailed = 3;     // watch: the job ended FAILED
inline constexpr int kExitJobCancelled = 4;  // watch: the job ended CANCELLED

struct PcpctlOptions {
  // host:port of the shepherd's Admin service.
  std::string shepherd = kDefaultShepherd;
  // TLS files (resolved) and bearer token; empty = plaintext, no token.
  auth::ClientCredentials credentials;
  // Deadline of each unary call.
  absl::Duration timeout = absl::Seconds(30);
  // Deadline of a whole `watch` (jobs can run for days).
  absl::Duration watch_timeout = absl::Hours(24 * 7);
  // watch: how long to keep reconnecting while the shepherd is unavailable (e.g. restarting).
  absl::Duration reconnect_timeout = absl::Seconds(120);
  // Rewrite watch's progress line in place; nullopt = when `out` is a terminal.
  std::optional<bool> tty;

  bool quiet = false;      // submit: print only the job id
  bool show_yaml = false;  // status: print the effective configuration too
  uint32_t limit = 0;      // jobs: at most this many (0 = all)
  std::string reason;      // cancel, restart, drain
  uint32_t grace_ms = 0;   // restart, drain: SIGTERM -> SIGKILL grace (0 = supervisor default)

  // sample
  std::string prompt;           // empty = the job's prompt
  uint32_t max_new_tokens = 0;  // 0 = the job's sample.max_new_tokens
  std::optional<double> temperature;
  std::optional<int64_t> top_k;
  uint64_t seed = 1337;

  // history: CSV or JSON lines instead of a table (at most one of them)
  bool csv = false;
  bool json = false;
  // plot: the PNG to write
  std::string out = "loss.png";
};

// `$PCP_SHEPHERD` when set and not empty, else kDefaultShepherd.
std::string DefaultShepherdAddress();

// Runs one command; `args` = {command, operands...}. Returns the exit code (above).
int RunPcpctl(const std::vector<std::string>& args, const PcpctlOptions& options, std::FILE* out, std::FILE* err);

// The usage text (commands and flags), for --help and usage errors.
const char* UsageText();

}  // namespace pcp::pcpctl

#endif  // PCP_PCPCTL_PCPCTL_H_
