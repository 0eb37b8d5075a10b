#include "pcp/pcpctl/format.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/util/json_util.h"

namespace pcp::pcpctl {
namespace {

// "WORKER_PHASE_TRAINING" -> "training": the proto's own enum names, so a new value
// shows up without a table here to update.
std::string ShortEnumName(const std::string& full, absl::string_view prefix) {
  if (full.empty()) return "unknown";
  absl::string_view name = full;
  if (absl::StartsWith(name, prefix)) name.remove_prefix(prefix.size());
  if (name == "UNSPECIFIED") return "-";
  return absl::AsciiStrToLower(name);
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

std::string RoundOf(const v1::JobProgress& progress) {
  return absl::StrCat(progress.round(), "/", progress.total_rounds());
}

// Key/value lines with the keys padded to one width.
std::string FormatKeyValues(const std::vector<std::pair<std::string, std::string>>& rows) {
  size_t width = 0;
  for (const auto& [key, value] : rows) width = std::max(width, key.size());
  std::string out;
  for (const auto& [key, value] : rows) {
    absl::StrAppend(&out, key, std::string(width - key.size() + 2, ' '), value, "\n");
  }
  return out;
}

std::string ProcessSummary(const v1::WorkerProcess& process) {
  std::string text = WorkerProcessStateName(process.state());
  if (process.pid() != 0) absl::StrAppend(&text, " pid ", process.pid());
  return text;
}

}  // namespace

std::string JobStateName(v1::JobState state) { return ShortEnumName(v1::JobState_Name(state), "JOB_STATE_"); }
std::string WorkerPhaseName(v1::WorkerPhase phase) {
  return ShortEnumName(v1::WorkerPhase_Name(phase), "WORKER_PHASE_");
}
std::string WorkerProcessStateName(v1::WorkerProcessState state) {
  return ShortEnumName(v1::WorkerProcessState_Name(state), "WORKER_PROCESS_STATE_");
}
std::string BackendName(v1::Backend backend) { return ShortEnumName(v1::Backend_Name(backend), "BACKEND_"); }

std::string FormatRate(double per_second) {
  if (!std::isfinite(per_second) || per_second < 0) return "-";
  if (per_second < 1e3) return absl::StrFormat("%.0f", per_second);
  if (per_second < 1e6) return absl::StrFormat("%.1fk", per_second / 1e3);
  if (per_second < 1e9) return absl::StrFormat("%.2fM", per_second / 1e6);
  return absl::StrFormat("%.2fG", per_second / 1e9);
}

std::string FormatLoss(bool has_value, double value) { return has_value ? absl::StrFormat("%.4f", value) : "-"; }

std::string FormatUnixMs(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms), absl::LocalTimeZone());
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string FormatJobsTable(const v1::ListJobsResponse& response) {
  if (response.jobs().empty()) return "no jobs\n";
  std::vector<std::vector<std::string>> rows = {
      {"JOB", "NAME", "STATE", "ROUND", "TRAIN", "VAL", "SUBMITTED", "REASON"}};
  for (const v1::Job& job : response.jobs()) {
    const v1::JobProgress& p = job.progress();
    rows.push_back({job.job_id(), job.name(), JobStateName(job.state()), RoundOf(p),
                    FormatLoss(p.has_train_loss(), p.train_loss()), FormatLoss(p.has_val_loss(), p.val_loss()),
                    FormatUnixMs(job.submitted_unix_ms()), OrDash(job.reason())});
  }
  return FormatTable(rows);
}

std::string FormatJobDetails(const v1::Job& job, bool include_yaml) {
  const v1::JobProgress& p = job.progress();
  std::vector<std::pair<std::string, std::string>> rows = {
      {"job", job.job_id()},
      {"name", job.name()},
      {"state", JobStateName(job.state())},
  };
  if (!job.model().empty()) rows.push_back({"model", job.model()});
  if (!job.reason().empty()) rows.push_back({"reason", job.reason()});
  rows.push_back({"submitted", FormatUnixMs(job.submitted_unix_ms())});
  rows.push_back({"started", FormatUnixMs(job.started_unix_ms())});
  rows.push_back({"finished", FormatUnixMs(job.finished_unix_ms())});
  rows.push_back({"round", absl::StrCat(RoundOf(p), " (", p.inner_steps(), " inner steps each)")});
  rows.push_back({"train loss", FormatLoss(p.has_train_loss(), p.train_loss())});
  std::string val = FormatLoss(p.has_val_loss(), p.val_loss());
  if (p.has_val_loss()) absl::StrAppend(&val, " (after round ", p.val_round(), ")");
  rows.push_back({"val loss", val});
  rows.push_back({"tokens", absl::StrCat(p.tokens_processed(), " (", FormatRate(p.tokens_per_second()),
                                         " tok/s in the last round)")});
  rows.push_back({"round time",
                  absl::StrCat(FormatDuration(p.round_time_s()), ", ETA ",
                               job.state() == v1::JOB_STATE_RUNNING ? FormatDuration(p.eta_s()) : std::string("-"))});
  rows.push_back({"workers", absl::StrCat(p.workers_in_last_round(), " in the last round")});
  if (p.deltas_refused() > 0 || p.rounds_rolled_back() > 0) {
    rows.push_back({"screening",
                    absl::StrCat(p.deltas_refused(), " Δs refused, ", p.rounds_rolled_back(), " rounds rolled back")});
    for (const v1::ScreenedWorker& w : p.screened_workers()) {
      rows.push_back({"", FormatScreenedWorker(w)});
    }
  }
  rows.push_back({"checkpoint", OrDash(job.checkpoint_path())});
  rows.push_back({"history", absl::StrCat(job.history_records(), " round records (at most ", job.history_max_records(),
                                          "; pcpctl history ", job.job_id(), ")")});
  std::string out = FormatKeyValues(rows);
  if (include_yaml && !job.effective_yaml().empty()) {
    absl::StrAppend(&out, "\neffective configuration:\n", job.effective_yaml());
    if (out.back() != '\n') out += '\n';
  }
  return out;
}

std::string FormatWorkersTable(const v1::ListWorkersResponse& response) {
  if (response.workers().empty()) return "no workers\n";
  std::vector<std::vector<std::string>> rows = {{"SUPERVISOR", "HOST", "LINKS", "PROCESS", "RESTARTS", "PHASE",
                                                 "BACKEND", "JOB", "ROUND", "ROUNDS DONE", "TOK/S", "MS/STEP", "STEPS",
                                                 "STALE", "IDLE", "LAST SEEN"}};
  for (const v1::WorkerInfo& w : response.workers()) {
    // "sw" = supervisor and worker streams both up; '-' marks a missing one.
    std::string links = absl::StrCat(w.supervisor_connected() ? "s" : "-", w.worker_connected() ? "w" : "-");
    rows.push_back({w.supervisor_id(), OrDash(w.host()), links, ProcessSummary(w.process()),
                    absl::StrCat(w.process().restarts()), WorkerPhaseName(w.phase()), BackendName(w.backend()),
                    OrDash(w.job_id()), w.round() == 0 ? "-" : absl::StrCat(w.round()),
                    absl::StrCat(w.rounds_completed()), FormatRate(w.tokens_per_second()),
                    // (From its last delivered round; '-' before one.)
                    w.round_steps() == 0 ? "-" : absl::StrFormat("%.1f", w.step_time_ms()),
                    w.round_steps() == 0 ? "-" : absl::StrCat(w.round_steps()),
                    w.round_steps() == 0 ? "-" : absl::StrCat(w.staleness()),
                    w.round_steps() == 0 ? "-" : absl::StrFormat("%.0f%%", 100 * w.idle_fraction()),
                    absl::StrCat(FormatDuration(w.last_seen_ms() / 1000.0), " ago")});
  }
  return FormatTable(rows) + "LINKS: s = supervisor connected, w = worker connected\n";
}

std::string FormatCluster(const v1::Cluster& c) {
  double uptime_s =
      c.started_unix_ms() > 0 ? absl::ToDoubleSeconds(absl::Now() - absl::FromUnixMillis(c.started_unix_ms())) : -1;
  return FormatKeyValues({
      {"shepherd", absl::StrCat(OrDash(c.shepherd_version()), ", up ", FormatDuration(uptime_s), " (since ",
                                FormatUnixMs(c.started_unix_ms()), ")")},
      {"state dir", OrDash(c.state_dir())},
      {"supervisors", absl::StrCat(c.supervisors_connected(), " connected")},
      {"workers", absl::StrCat(c.workers_connected(), " connected, ", c.workers_in_round(), " in the current round")},
      {"active job", OrDash(c.active_job_id())},
      {"jobs", absl::StrCat(c.jobs_queued(), " queued, ", c.jobs_completed(), " completed, ", c.jobs_failed(),
                            " failed, ", c.jobs_cancelled(), " cancelled")},
  });
}

std::string FormatScreenedWorker(const v1::ScreenedWorker& w) {
  return absl::StrCat(w.supervisor_id(), ": ", w.refusals(), w.refusals() == 1 ? " Δ" : " Δs",
                      " refused (last: ", w.last_reason(), ", round ", w.last_round(), ")",
                      w.quarantined() ? ", QUARANTINED" : "");
}

std::string FormatScreeningEvent(const v1::ScreeningEvent& e) {
  switch (e.kind()) {
    case v1::ScreeningEvent::DELTA_REJECTED:
    case v1::ScreeningEvent::DELTA_CLIPPED:
      return absl::StrCat("round ", e.round(), ": Δ of ", e.supervisor_id(),
                          e.kind() == v1::ScreeningEvent::DELTA_REJECTED ? " rejected" : " clipped", " (", e.reason(),
                          ": norm ", absl::StrFormat("%.4g", e.norm()), ", threshold ",
                          absl::StrFormat("%.4g", e.threshold()), "), refusal ", e.refusals());
    case v1::ScreeningEvent::WORKER_QUARANTINED:
      return absl::StrCat("round ", e.round(), ": worker ", e.supervisor_id(), " QUARANTINED after ", e.refusals(),
                          " refused Δs");
    case v1::ScreeningEvent::ROUND_ROLLED_BACK: return absl::StrCat("round ", e.round(), " rolled back: ", e.reason());
    default: return absl::StrCat("screening event ", static_cast<int>(e.kind()), " in round ", e.round());
  }
}

std::string FormatProgressLine(const v1::JobProgress& p) {
  std::string line = absl::StrCat("round ", RoundOf(p), "  train ", FormatLoss(p.has_train_loss(), p.train_loss()),
                                  "  val ", FormatLoss(p.has_val_loss(), p.val_loss()));
  if (p.has_val_loss()) absl::StrAppend(&line, " (r", p.val_round(), ")");
  absl::StrAppend(&line, "  ", FormatRate(p.tokens_per_second()), " tok/s  ", p.workers_in_last_round(),
                  p.workers_in_last_round() == 1 ? " worker" : " workers", "  ", FormatDuration(p.round_time_s()),
                  "/round  ETA ", FormatDuration(p.eta_s()));
  if (p.deltas_refused() > 0) {
    int quarantined = 0;
    for (const v1::ScreenedWorker& w : p.screened_workers()) quarantined += w.quarantined() ? 1 : 0;
    absl::StrAppend(&line, "  ", p.deltas_refused(), " refused");
    if (quarantined > 0) absl::StrAppend(&line, ", ", quarantined, " quarantined");
  }
  return line;
}

std::string FormatHistoryTable(const std::vector<v1::RoundRecord>& records) {
  if (records.empty()) return "no rounds recorded\n";
  std::vector<std::vector<std::string>> rows = {{"ROUND", "END", "TRAIN", "VAL", "TOKENS", "ROUND TIME", "OUTER STEP",
                                                 "NET WAIT", "DOWN", "UP", "INNER LR", "WORKERS", "MISSING",
                                                 "REFUSED"}};
  for (const v1::RoundRecord& r : records) {
    std::vector<std::string> refused;
    for (const v1::RefusedWorker& w : r.refused()) refused.push_back(w.supervisor_id());
    rows.push_back(
        {absl::StrCat(r.round()), FormatUnixMs(r.end_unix_ms()), FormatLoss(r.has_train_loss(), r.train_loss()),
         FormatLoss(r.has_val_loss(), r.val_loss()), absl::StrCat(r.tokens_total()), FormatDuration(r.round_s()),
         FormatDuration(r.outer_step_s()), r.has_network_wait_s() ? FormatDuration(r.network_wait_s()) : "-",
         FormatRate(static_cast<double>(r.bytes_down())) + "B", FormatRate(static_cast<double>(r.bytes_up())) + "B",
         absl::StrFormat("%.3g", r.inner_lr()), absl::StrCat(r.participants_size()),
         OrDash(absl::StrJoin(r.missing(), ",")), OrDash(absl::StrJoin(refused, ","))});
  }
  return FormatTable(rows);
}

std::string FormatJobResult(absl::string_view job_id, const v1::JobResult& r) {
  std::string out = absl::StrCat(job_id, " ", JobStateName(r.state()));
  if (!r.reason().empty()) absl::StrAppend(&out, " (", r.reason(), ")");
  absl::StrAppend(&out, ": ", r.rounds_completed(), " rounds in ", FormatDuration(r.duration_s()), ", train loss ",
                  FormatLoss(r.has_final_train_loss(), r.final_train_loss()), ", val loss ",
                  FormatLoss(r.has_final_val_loss(), r.final_val_loss()), ", ", r.tokens_processed(), " tokens\n");
  if (!r.checkpoint_path().empty()) absl::StrAppend(&out, "checkpoint: ", r.checkpoint_path(), "\n");
  return out;
}

void WatchPrinter::PrintLine(const std::string& line) {
  Finish();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void WatchPrinter::Note(absl::string_view text) { PrintLine(std::string(text)); }

void WatchPrinter::Finish() {
  if (line_open_) {
    std::fputc('\n', out_);
    line_open_ = false;
    std::fflush(out_);
  }
}

void WatchPrinter::OnEvent(const v1::JobEvent& event) {
  switch (event.kind_case()) {
    case v1::JobEvent::kSnapshot: {
      const v1::Job& job = event.snapshot();
      std::string line = absl::StrCat(job.job_id(), " (", job.name(), "): ", JobStateName(job.state()), ", round ",
                                      RoundOf(job.progress()));
      if (!job.reason().empty()) absl::StrAppend(&line, " (", job.reason(), ")");
      PrintLine(line);
      break;
    }
    case v1::JobEvent::kProgress: {
      std::string line = FormatProgressLine(event.progress());
      if (tty_) {
        // Rewrite the line in place: carriage return, the line, erase what is left of a longer one.
        std::fprintf(out_, "\r%s\x1b[K", line.c_str());
        line_open_ = true;
        std::fflush(out_);
      } else {
        PrintLine(line);
      }
      break;
    }
    case v1::JobEvent::kStateChange: {
      const v1::JobStateChange& change = event.state_change();
      std::string line = absl::StrCat("state: ", JobStateName(change.from()), " -> ", JobStateName(change.to()));
      if (!change.reason().empty()) absl::StrAppend(&line, " (", change.reason(), ")");
      PrintLine(line);
      break;
    }
    case v1::JobEvent::kCheckpoint:
      PrintLine(absl::StrCat("checkpoint after round ", event.checkpoint().round(), ": ", event.checkpoint().path()));
      break;
    case v1::JobEvent::kScreening: PrintLine(FormatScreeningEvent(event.screening())); break;
    case v1::JobEvent::kResult: {
      has_result_ = true;
      result_ = event.result();
      std::string text = FormatJobResult(event.job_id(), event.result());
      text.pop_back();  // PrintLine adds the newline
      PrintLine(text);
      break;
    }
    case v1::JobEvent::kRoundRecord:  // the progress line shows the round; `pcpctl history` the records
    case v1::JobEvent::KIND_NOT_SET: break;
  }
}

std::string FormatJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  // Cannot fail for messages without Any fields (none of pcp.v1's have one).
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json + "\n";
}

}  // namespace pcp::pcpctl
