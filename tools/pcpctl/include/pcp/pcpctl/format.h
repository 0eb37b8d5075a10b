// Human-readable text for pcpctl: tables, job details, the live progress line of `watch`.
// Pure functions of the Admin messages (no gRPC), so they can be tested on their own.
//
//   std::fputs(FormatJobsTable(list_jobs_response).c_str(), stdout);
//
//   WatchPrinter printer(stdout, /*tty=*/isatty(fileno(stdout)));
//   for (const v1::JobEvent& event : events) printer.OnEvent(event);
//   printer.Finish();  // ends a progress line left open on a TTY
//
// Every function returns text ending in '\n' (or "" when there is nothing to show) unless
// documented otherwise. Losses are in nats/token, durations in seconds.
#ifndef PCP_PCPCTL_FORMAT_H_
#define PCP_PCPCTL_FORMAT_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "pcp/base/format_duration.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::pcpctl {

// "queued", "running", "completed", "failed", "cancelled" ("unknown" otherwise).
std::string JobStateName(v1::JobState state);
// Short lower-case names of the worker enums: "training", "running", "cpu", ...
std::string WorkerPhaseName(v1::WorkerPhase phase);
std::string WorkerProcessStateName(v1::WorkerProcessState state);
std::string BackendName(v1::Backend backend);

// Durations: pcp::FormatDuration (pcp/base/format_duration.h).
// A rate with an SI suffix: "950", "12.3k", "1.25M".
std::string FormatRate(double per_second);
// A loss with 4 decimals ("2.1345"), or "-" when `has_value` is false.
std::string FormatLoss(bool has_value, double value);
// Local time "2024-05-01 12:03:04" of a *_unix_ms field; "-" for 0.
std::string FormatUnixMs(int64_t unix_ms);

// Aligns `rows` (the first one is the header) in columns separated by two spaces; no
// trailing spaces. Missing cells are empty.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

// `pcpctl jobs`: one row per job (newest first, as the shepherd returns them).
std::string FormatJobsTable(const v1::ListJobsResponse& response);
// `pcpctl status`: the job as "key  value" lines; with `include_yaml`, its effective
// configuration after them.
std::string FormatJobDetails(const v1::Job& job, bool include_yaml);
// `pcpctl workers`: one row per worker slot.
std::string FormatWorkersTable(const v1::ListWorkersResponse& response);
// `pcpctl cluster`.
std::string FormatCluster(const v1::Cluster& cluster);
// One progress line without a newline, e.g.
// "round 12/40  train 2.1345  val 2.2012 (r10)  12.3k tok/s  2 workers  ETA 3m12s".
std::string FormatProgressLine(const v1::JobProgress& progress);
// One worker of JobProgress.screened_workers, e.g.
// "node-3: 3 Δs refused (last: norm, round 4), QUARANTINED".
std::string FormatScreenedWorker(const v1::ScreenedWorker& worker);
// A WatchJob screening event, e.g.
// "round 4: Δ of node-3 rejected (norm: norm 1.2e+04, threshold 55.1), refusal 3".
std::string FormatScreeningEvent(const v1::ScreeningEvent& event);
// `pcpctl history`: one row per round record (oldest first); "no rounds recorded" when empty.
std::string FormatHistoryTable(const std::vector<v1::RoundRecord>& records);
// `--json` of status and workers: the message as one line of proto JSON, field names as in
// the .proto (snake_case), every field printed (zeros and false included), and a newline.
std::string FormatJson(const google::protobuf::Message& message);
// How a job ended, e.g. "job-0001 completed: 40 rounds in 3m12s, train loss 1.9012, ..."
// followed by a "checkpoint: PATH" line when there is one.
std::string FormatJobResult(absl::string_view job_id, const v1::JobResult& result);

// Prints the events of one WatchJob stream (or several, after reconnects). On a TTY the
// progress line is rewritten in place ('\r' and erase-to-end-of-line); otherwise each
// event is one line, which suits logs and pipes. Does not own `out`.
class WatchPrinter {
 public:
  WatchPrinter(std::FILE* out, bool tty) : out_(out), tty_(tty) {}

  void OnEvent(const v1::JobEvent& event);
  // A line of its own (e.g. "shepherd unavailable, reconnecting"), below an open progress line.
  void Note(absl::string_view text);
  // Ends an open progress line. Call before printing anything else to `out`.
  void Finish();

  // The result, once the stream delivered one.
  bool has_result() const { return has_result_; }
  const v1::JobResult& result() const { return result_; }

 private:
  void PrintLine(const std::string& line);

  std::FILE* out_;
  bool tty_;
  bool line_open_ = false;
  bool has_result_ = false;
  v1::JobResult result_;
};

}  // namespace pcp::pcpctl

#endif  // PCP_PCPCTL_FORMAT_H_
