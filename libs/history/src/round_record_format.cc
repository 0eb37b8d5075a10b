#include "pcp/history/round_record_format.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "google/protobuf/util/json_util.h"

namespace pcp::history {
namespace {

using Cell = std::function<std::string(const v1::RoundRecord&)>;

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

template <typename List>
std::string Joined(const List& list) {
  return absl::StrJoin(list, ";");
}

struct Column {
  const char* name;
  Cell cell;
};

// The one table of columns.
const std::vector<Column>& Columns() {
  static const auto* columns = new std::vector<Column>{
      {"round", [](const v1::RoundRecord& r) { return absl::StrCat(r.round()); }},
      {"start_unix_ms", [](const v1::RoundRecord& r) { return absl::StrCat(r.start_unix_ms()); }},
      {"end_unix_ms", [](const v1::RoundRecord& r) { return absl::StrCat(r.end_unix_ms()); }},
      {"tokens", [](const v1::RoundRecord& r) { return absl::StrCat(r.tokens()); }},
      {"tokens_total", [](const v1::RoundRecord& r) { return absl::StrCat(r.tokens_total()); }},
      {"train_loss", [](const v1::RoundRecord& r) { return r.has_train_loss() ? Num(r.train_loss()) : ""; }},
      {"val_loss", [](const v1::RoundRecord& r) { return r.has_val_loss() ? Num(r.val_loss()) : ""; }},
      {"round_s", [](const v1::RoundRecord& r) { return Num(r.round_s()); }},
      {"outer_step_s", [](const v1::RoundRecord& r) { return Num(r.outer_step_s()); }},
      {"bytes_down", [](const v1::RoundRecord& r) { return absl::StrCat(r.bytes_down()); }},
      {"bytes_up", [](const v1::RoundRecord& r) { return absl::StrCat(r.bytes_up()); }},
      {"outer_lr", [](const v1::RoundRecord& r) { return Num(r.outer_lr()); }},
      {"inner_lr", [](const v1::RoundRecord& r) { return Num(r.inner_lr()); }},
      {"participants", [](const v1::RoundRecord& r) { return Joined(r.participants()); }},
      {"missing", [](const v1::RoundRecord& r) { return Joined(r.missing()); }},
      {"refused",
       [](const v1::RoundRecord& r) {
         std::vector<std::string> parts;
         for (const v1::RefusedWorker& w : r.refused())
           parts.push_back(absl::StrCat(w.supervisor_id(), ":", w.reason()));
         return Joined(parts);
       }},
      {"rounds_since_previous", [](const v1::RoundRecord& r) { return absl::StrCat(r.rounds_since_previous()); }},
      // Last, so that the columns before it keep their places in older readers.
      {"network_wait_s",
       [](const v1::RoundRecord& r) { return r.has_network_wait_s() ? Num(r.network_wait_s()) : ""; }},
  };
  return *columns;
}

std::string CsvCell(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  return absl::StrCat("\"", absl::StrReplaceAll(cell, {{"\"", "\"\""}}), "\"");
}

}  // namespace

const std::vector<std::string>& RecordColumns() {
  static const auto* names = [] {
    auto* out = new std::vector<std::string>;
    for (const Column& c : Columns()) out->push_back(c.name);
    return out;
  }();
  return *names;
}

std::vector<std::string> RecordCells(const v1::RoundRecord& record) {
  std::vector<std::string> cells;
  for (const Column& c : Columns()) cells.push_back(c.cell(record));
  return cells;
}

std::string RecordsCsvHeader() { return absl::StrCat(absl::StrJoin(RecordColumns(), ","), "\n"); }

std::string RecordCsvRow(const v1::RoundRecord& record) {
  std::vector<std::string> cells = RecordCells(record);
  for (std::string& c : cells) c = CsvCell(c);
  return absl::StrCat(absl::StrJoin(cells, ","), "\n");
}

std::string RecordJsonLine(const v1::RoundRecord& record) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // Cannot fail for a message without Any fields.
  (void)google::protobuf::util::MessageToJsonString(record, &json, options);
  return json + "\n";
}

absl::StatusOr<v1::RoundRecord> ParseRecordJsonLine(absl::string_view line) {
  v1::RoundRecord record;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto s = google::protobuf::util::JsonStringToMessage(std::string(line), &record, options);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("not a RoundRecord JSON line: ", s.ToString()));
  return record;
}

}  // namespace pcp::history
