#include "pcp/shepherd/job_history.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

void AppendDelimited(const v1::RoundRecord& record, std::string* out) {
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::util::SerializeDelimitedToZeroCopyStream(record, &stream);
}

bool ByRound(const v1::RoundRecord& r, uint64_t round) { return r.round() < round; }

}  // namespace

absl::StatusOr<JobHistory> JobHistory::Open(std::string path, JobHistoryOptions options) {
  if (options.max_records < 4) {
    return absl::InvalidArgumentError(absl::StrCat("history bound ", options.max_records, " is below 4"));
  }
  JobHistory history(std::move(path), options);
  absl::StatusOr<std::string> bytes = ReadFile(history.path_);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return history;
    return bytes.status();
  }
  google::protobuf::io::ArrayInputStream input(bytes->data(), static_cast<int>(bytes->size()));
  google::protobuf::io::CodedInputStream coded(&input);
  coded.SetTotalBytesLimit(INT32_MAX);
  size_t read = 0;
  bool changed = false;
  while (true) {
    v1::RoundRecord record;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromCodedStream(&record, &coded, &clean_eof)) {
      if (!clean_eof) {
        // A crash during an append leaves a torn last record: what came before is intact.
        spdlog::warn("{}: unreadable record after {} records (torn write?); dropped from there on", history.path_,
                     read);
        changed = true;
      }
      break;
    }
    ++read;
    history.Insert(record);
  }
  changed |= history.Thin() || history.records_.size() != read;
  history.Renumber();
  history.records_in_file_ = read;
  if (changed) PCP_RETURN_IF_ERROR(history.Rewrite(), _ << "compacting the job history");
  return history;
}

bool JobHistory::Insert(const v1::RoundRecord& record) {
  auto it = std::lower_bound(records_.begin(), records_.end(), record.round(), ByRound);
  if (it != records_.end() && it->round() == record.round()) {
    *it = record;
    return true;
  }
  if (it != records_.end()) return false;  // older than the newest, and not held
  records_.push_back(record);
  return true;
}

bool JobHistory::Thin() {
  bool dropped = false;
  while (records_.size() > max_records_) {
    const size_t keep_recent = max_records_ / 2;
    const size_t older = records_.size() - keep_recent;
    std::vector<v1::RoundRecord> kept;
    kept.reserve(older / 2 + 1 + keep_recent);
    for (size_t i = 0; i < older; i += 2) kept.push_back(std::move(records_[i]));
    for (size_t i = older; i < records_.size(); ++i) kept.push_back(std::move(records_[i]));
    records_ = std::move(kept);
    dropped = true;
  }
  return dropped;
}

void JobHistory::Renumber() {
  uint64_t previous = 0;
  for (v1::RoundRecord& r : records_) {
    r.set_rounds_since_previous(r.round() - previous);
    previous = r.round();
  }
}

absl::Status JobHistory::Rewrite() {
  std::string bytes;
  for (const v1::RoundRecord& r : records_) AppendDelimited(r, &bytes);
  PCP_RETURN_IF_ERROR(WriteFileAtomic(path_, bytes));
  records_in_file_ = records_.size();
  return absl::OkStatus();
}

absl::Status JobHistory::Put(const v1::RoundRecord& in) {
  v1::RoundRecord record = in;
  auto it = std::lower_bound(records_.begin(), records_.end(), record.round(), ByRound);
  record.set_rounds_since_previous(record.round() - (it == records_.begin() ? 0 : std::prev(it)->round()));
  if (!Insert(record)) return absl::OkStatus();
  if (Thin()) {
    Renumber();
    return Rewrite();
  }
  if (records_in_file_ + 1 > 2 * max_records_) return Rewrite();
  std::string bytes;
  AppendDelimited(record, &bytes);
  ++records_in_file_;
  return AppendFile(path_, bytes, sync_appends_);
}

absl::Status JobHistory::DropAfter(uint64_t round) {
  auto it = std::upper_bound(records_.begin(), records_.end(), round,
                             [](uint64_t r, const v1::RoundRecord& rec) { return r < rec.round(); });
  if (it == records_.end()) return absl::OkStatus();
  records_.erase(it, records_.end());
  return Rewrite();
}

const v1::RoundRecord* JobHistory::Find(uint64_t round) const {
  auto it = std::lower_bound(records_.begin(), records_.end(), round, ByRound);
  return it != records_.end() && it->round() == round ? &*it : nullptr;
}

std::vector<v1::RoundRecord> JobHistory::Page(uint64_t after_round, size_t limit, uint64_t* next_after_round) const {
  auto it = std::upper_bound(records_.begin(), records_.end(), after_round,
                             [](uint64_t r, const v1::RoundRecord& rec) { return r < rec.round(); });
  std::vector<v1::RoundRecord> out;
  for (; it != records_.end() && out.size() < limit; ++it) out.push_back(*it);
  *next_after_round = (it != records_.end() && !out.empty()) ? out.back().round() : 0;
  return out;
}

}  // namespace pcp::shepherd
