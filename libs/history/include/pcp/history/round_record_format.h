// A job's per-round record (pcp.v1.RoundRecord, admin.proto) as text, with one column
// table for every form, so `pcpctl history --csv` and `pcp-local train`'s history.csv have
// the same columns.
//
//   std::string csv = RecordsCsvHeader();
//   for (const v1::RoundRecord& r : records) csv += RecordCsvRow(r);
//   std::string line = RecordJsonLine(r);   // {"round":"3","train_loss":2.41,...}\n
//   PCP_ASSIGN_OR_RETURN(v1::RoundRecord back, ParseRecordJsonLine(line));
//
// CSV: a header line, then one line per record; empty cells for values not recorded (a
// round without a val loss); lists (participants, missing) joined with ';', refused as
// "id:reason" pairs joined with ';'. JSON lines: protobuf's JSON mapping of the record with
// the proto's field names (64-bit integers are strings, as that mapping says).
#ifndef PCP_HISTORY_ROUND_RECORD_FORMAT_H_
#define PCP_HISTORY_ROUND_RECORD_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::history {

// The CSV column names, in order ("round", "start_unix_ms", ..., "train_loss", ...).
const std::vector<std::string>& RecordColumns();
// The cells of one record, in RecordColumns() order (as in the CSV, unquoted).
std::vector<std::string> RecordCells(const v1::RoundRecord& record);

// RecordColumns() joined with ',' and a newline.
std::string RecordsCsvHeader();
// One CSV line (cells containing ',' or '"' are quoted).
std::string RecordCsvRow(const v1::RoundRecord& record);

// One JSON object and a newline.
std::string RecordJsonLine(const v1::RoundRecord& record);
// The inverse; InvalidArgument naming the problem.
absl::StatusOr<v1::RoundRecord> ParseRecordJsonLine(absl::string_view line);

}  // namespace pcp::history

#endif  // PCP_HISTORY_ROUND_RECORD_FORMAT_H_
