// pcp-loadgen's per-round figures and their two forms: a text table (a progress line per
// round as it ends, the whole table at the end) and JSON.
//
//   RoundRow row{.round = 3, .workers = 32, ...};
//   std::fputs(TableHeader().c_str(), stdout);
//   std::fputs(TableLine(row).c_str(), stdout);
//   std::string json = ReportJson(report).Serialize();
//
// Columns (a figure that is unknown prints as "-", and is null in JSON):
//   round      the DiLoCo round
//   workers    participants the shepherd recorded for the round (its job history)
//   sent       simulated workers whose Δ for the round finished sending (loadgen side)
//   drops      streams the loadgen dropped on purpose during the round (--drop_rate)
//   overhead_s as seen from the loadgen: from the moment the last simulated worker's Δ of the
//              round had been handed to the transport (its RoundResult written) to the first
//              θ chunk of the next round received by any simulated worker: the shepherd's
//              aggregation, outer step and θ encoding, plus loopback transfer
//   outer_ms   the shepherd's own outer step time (RoundRecord.outer_step_s)
//   round_s    the shepherd's round time (RoundRecord.round_s)
//   rss_mib    the shepherd's largest VmRSS sampled during the round (/proc, --shepherd_pid)
//   hwm_mib    its VmHWM (peak resident ever) at the round's end
//   cpu_s      the shepherd's CPU time (utime + stime) during the round
//   in_mbs, out_mbs  loadgen bytes received (θ) / sent (Δ) per second over the round, MB/s
// A round's window runs from its first θ chunk at the loadgen to the next round's first θ
// chunk (the last round's: to the end of the run, within 0.5 s of its record appearing in the
// shepherd's history). /proc is sampled every 100 ms.
#ifndef PCP_LOADGEN_ROUND_TABLE_H_
#define PCP_LOADGEN_ROUND_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pcp/base/json.h"

namespace pcp::loadgen {

struct RoundRow {
  uint64_t round = 0;
  std::optional<int64_t> workers;
  int64_t sent = 0;
  int64_t drops = 0;
  std::optional<double> overhead_s;
  std::optional<double> outer_step_ms;
  std::optional<double> round_s;
  std::optional<int64_t> rss_bytes;
  std::optional<int64_t> hwm_bytes;
  std::optional<double> cpu_s;
  double window_s = 0;
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;
};

// What a run measured, and under which settings.
struct LoadgenReport {
  std::string shepherd;
  std::string job_id;
  int64_t workers = 0;      // simulated workers (streams)
  int64_t parameters = 0;   // |θ|, from the assignment
  int64_t delta_bytes = 0;  // one Δ on the wire
  double compute_s = 0;
  int64_t shepherd_pid = 0;  // 0: no /proc figures
  std::string end_reason;    // why the run stopped
  std::string error;         // set when the run failed (a protocol error, a refused Join, ...)
  std::vector<RoundRow> rows;
};

// Lines end with '\n'.
std::string TableHeader();
std::string TableLine(const RoundRow& row);
// The header comment (what overhead means), then TableHeader and a line per row.
std::string FormatTable(const LoadgenReport& report);

Json RowJson(const RoundRow& row);
// {"shepherd":..., "job_id":..., "workers":..., ..., "rounds":[RowJson...]}
Json ReportJson(const LoadgenReport& report);

}  // namespace pcp::loadgen

#endif  // PCP_LOADGEN_ROUND_TABLE_H_
