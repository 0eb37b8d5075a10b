// pcp-loadgen as a library: M simulated workers against a real shepherd, each one
// Training.Connect stream speaking the real protocol with real credentials, and a per-round
// report of what it cost the shepherd (main.cc turns flags into LoadgenOptions).
//
//   LoadgenOptions o;
//   o.shepherd = "127.0.0.1:7070";
//   o.workers = 32;
//   o.job_file = "bench/jobs/gpt10m.yaml";   // submitted with Admin.SubmitJob; empty = attach
//   o.shepherd_pid = 1234;                   // for RSS / CPU from /proc
//   PCP_ASSIGN_OR_RETURN(LoadgenReport report, RunLoadgen(o));
//   std::fputs(FormatTable(report).c_str(), stdout);
//
// A simulated worker joins as "<id_prefix>-<index>" (index from 1, 4 digits), reconnecting
// with a higher incarnation after a drop. It receives the program, the shard and θ and
// discards them (counting bytes), answers the Assignment with AssignmentReady, waits
// compute_s after each StartRound, then sends a synthetic Δ (pcp/loadgen/synthetic_delta.h,
// one for all workers) and a RoundResult whose steps, tokens and sampler cursor are what the
// shepherd expects. Heartbeats go both ways. It checks what a worker would of the shepherd's
// side (θ complete before StartRound, one learning rate per inner step) and ends the run with
// the error otherwise. Compressed jobs work (Δ in the job's up codec; θ updates are only
// counted). Streaming DiLoCo jobs (diloco.streaming) are simulated as pcp-worker runs them:
// θ in full once, then a fragment per round; the StartRounds sent one round ahead are
// computed in turn (compute_s each), each waiting overlap_steps / steps of the way in for the
// fragment of the round before, and each round's fragment Δ (one synthetic Δ per fragment)
// is sent while the next round computes. The checks are pcp-worker's for streaming (θ in full
// before the first StartRound, 1 to inner_steps learning rates, fragments in round order).
//
// Faults (off by default; every choice drawn from `seed`, so a run can be repeated):
//   drop_rate     each worker, each round, with this probability drops its stream at a random
//                 point (while θ arrives, while it "computes", or while its Δ is sent) and
//                 reconnects reconnect_ms later with incarnation + 1
//   slow_senders  the first k workers send their Δ at slow_mbit Mbit/s (paced chunk by chunk)
//   stall_rounds  in these rounds the last stall_workers workers stop reading and sending
//                 (heartbeats too) for stall_s seconds after StartRound
//
// The run stops by itself: after `rounds` rounds (0: when the job ends), or after
// max_seconds. A job it submitted and leaves unfinished is cancelled (cancel_at_end).
#ifndef PCP_LOADGEN_LOADGEN_H_
#define PCP_LOADGEN_LOADGEN_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/loadgen/round_table.h"

namespace pcp::loadgen {

struct LoadgenOptions {
  std::string shepherd = "127.0.0.1:7070";  // HOST:PORT of Training and Admin
  auth::ClientCredentials credentials;      // as the worker's --tls_* / --token_source
  int64_t workers = 4;                      // M simulated workers, 1..4096
  std::string id_prefix = "loadgen";        // supervisor ids "<prefix>-0001", ...
  double compute_s = 2.0;                   // simulated compute per round, >= 0
  int64_t rounds = 0;                       // stop after this many rounds; 0 = at the job's end
  double max_seconds = 600;                 // stop after this long in any case, > 0
  std::string job_file;                     // submit this job (YAML); empty = attach
  std::string job_id;                       // attach: report this job (default: the assigned one)
  bool cancel_at_end = true;                // cancel a submitted job left unfinished
  int64_t shepherd_pid = 0;                 // read /proc/PID for RSS and CPU; 0 = none
  double max_shepherd_rss_gib = 0;          // stop when the shepherd's VmRSS passes this; 0 = no limit
  uint64_t seed = 1;
  float delta_scale = 1e-4f;  // synthetic Δ values uniform in [-scale, scale]
  double drop_rate = 0;       // [0, 1]
  int64_t reconnect_ms = 500;
  int64_t slow_senders = 0;
  double slow_mbit = 0;  // > 0 when slow_senders > 0
  std::vector<uint64_t> stall_rounds;
  double stall_s = 0;
  int64_t stall_workers = 1;
  std::FILE* progress = stdout;  // a line per round as it ends; nullptr = quiet
  // When set and true: stop now, as at any other end (main: SIGTERM / SIGINT), and report.
  const std::atomic<bool>* interrupt = nullptr;
};

// InvalidArgument naming the option for a bad value.
absl::Status ValidateOptions(const LoadgenOptions& options);

// Runs until the stop condition; the report holds every round seen. Errors: bad options, a
// channel that cannot be made, a refused job. A failure during the run ends it, and the
// report says why in `error`: a refused Join (credentials), or a protocol error the shepherd
// reported (a stream ended with INVALID_ARGUMENT / FAILED_PRECONDITION / PERMISSION_DENIED
// that the loadgen did not cause on purpose).
absl::StatusOr<LoadgenReport> RunLoadgen(const LoadgenOptions& options);

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_LOADGEN_H_
