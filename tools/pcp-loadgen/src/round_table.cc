#include "pcp/loadgen/round_table.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pcp::loadgen {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kMB = 1e6;

// `v` / scale with `decimals` digits after the point; "-" when unknown.
template <typename T>
std::string Cell(const std::optional<T>& v, int decimals, double scale = 1) {
  if (!v.has_value()) return "-";
  return absl::StrFormat("%.*f", decimals, static_cast<double>(*v) / scale);
}

double PerSecond(int64_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }

template <typename T>
Json Optional(const std::optional<T>& v) {
  return v.has_value() ? Json(*v) : Json();
}

}  // namespace

std::string TableHeader() {
  return absl::StrFormat("%5s %7s %5s %5s %10s %9s %8s %8s %8s %7s %8s %8s\n", "round", "workers", "sent", "drops",
                         "overhead_s", "outer_ms", "round_s", "rss_mib", "hwm_mib", "cpu_s", "in_mbs", "out_mbs");
}

std::string TableLine(const RoundRow& r) {
  return absl::StrFormat("%5d %7s %5d %5d %10s %9s %8s %8s %8s %7s %8.1f %8.1f\n", r.round,
                         r.workers ? absl::StrCat(*r.workers) : "-", r.sent, r.drops, Cell(r.overhead_s, 3),
                         Cell(r.outer_step_ms, 1), Cell(r.round_s, 2), Cell(r.rss_bytes, 0, kMiB),
                         Cell(r.hwm_bytes, 0, kMiB), Cell(r.cpu_s, 2), PerSecond(r.bytes_in, r.window_s) / kMB,
                         PerSecond(r.bytes_out, r.window_s) / kMB);
}

std::string FormatTable(const LoadgenReport& report) {
  std::string out = absl::StrFormat(
      "# pcp-loadgen: %d simulated workers against %s, job %s, |theta| %d, one delta %.1f MB, compute %.1f s/round\n"
      "# overhead_s (loadgen side): last simulated worker's delta sent -> first theta chunk of the next round "
      "received\n",
      report.workers, report.shepherd, report.job_id.empty() ? "-" : report.job_id, report.parameters,
      static_cast<double>(report.delta_bytes) / kMB, report.compute_s);
  if (report.shepherd_pid == 0) out += "# (no --shepherd_pid: no RSS / CPU figures)\n";
  out += TableHeader();
  for (const RoundRow& r : report.rows) out += TableLine(r);
  if (!report.end_reason.empty()) out += absl::StrCat("# stopped: ", report.end_reason, "\n");
  if (!report.error.empty()) out += absl::StrCat("# error: ", report.error, "\n");
  return out;
}

Json RowJson(const RoundRow& r) {
  Json j = Json::Object();
  j.Set("round", r.round);
  j.Set("workers", Optional(r.workers));
  j.Set("sent", r.sent);
  j.Set("drops", r.drops);
  j.Set("overhead_s", Optional(r.overhead_s));
  j.Set("outer_step_ms", Optional(r.outer_step_ms));
  j.Set("round_s", Optional(r.round_s));
  j.Set("rss_bytes", Optional(r.rss_bytes));
  j.Set("hwm_bytes", Optional(r.hwm_bytes));
  j.Set("cpu_s", Optional(r.cpu_s));
  j.Set("window_s", r.window_s);
  j.Set("bytes_in", r.bytes_in);
  j.Set("bytes_out", r.bytes_out);
  j.Set("in_bytes_per_s", PerSecond(r.bytes_in, r.window_s));
  j.Set("out_bytes_per_s", PerSecond(r.bytes_out, r.window_s));
  return j;
}

Json ReportJson(const LoadgenReport& report) {
  Json j = Json::Object();
  j.Set("shepherd", report.shepherd);
  j.Set("job_id", report.job_id);
  j.Set("workers", report.workers);
  j.Set("parameters", report.parameters);
  j.Set("delta_bytes", report.delta_bytes);
  j.Set("compute_s", report.compute_s);
  j.Set("shepherd_pid", report.shepherd_pid);
  j.Set("end_reason", report.end_reason);
  j.Set("error", report.error.empty() ? Json() : Json(report.error));
  j.Set("overhead_definition",
        "loadgen side: last simulated worker's delta sent -> first theta chunk of the next round received");
  Json rounds = Json::Array();
  for (const RoundRow& r : report.rows) rounds.Append(RowJson(r));
  j.Set("rounds", std::move(rounds));
  return j;
}

}  // namespace pcp::loadgen
