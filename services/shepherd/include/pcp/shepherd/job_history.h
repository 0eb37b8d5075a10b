// A job's per-round history (v1::RoundRecord, admin.proto): kept in memory for
// GetJobHistory and persisted in the job's folder as jobs/<id>/history.pb, so that it
// survives shepherd restarts and resume.
//
//   PCP_ASSIGN_OR_RETURN(JobHistory history, JobHistory::Open(dir + "/history.pb"));
//   PCP_RETURN_IF_ERROR(history.Put(record));       // after each round (and its val loss)
//   PCP_RETURN_IF_ERROR(history.DropAfter(12));     // resumed from round 12's checkpoint
//   uint64_t next = 0;
//   std::vector<v1::RoundRecord> page = history.Page(/*after_round=*/0, /*limit=*/100, &next);
//
// The file: RoundRecord messages, each preceded by its size as a varint (protobuf's
// delimited format). Put appends one record (O(1) per round, fdatasync'd by default); a later record of
// a round replaces an earlier one (how a val loss that arrives after the round is added).
// The file is rewritten atomically (temp file + rename) only when the history is thinned,
// rounds are dropped, or it holds more than twice max_records records (so the cost per
// round stays O(1) amortised). Open compacts: it reads every record, keeps the last of each
// round, tolerates a torn tail (a crash during an append; the tail is dropped), and
// rewrites the file if it changed anything.
//
// Bounded: at most max_records records. When a Put would exceed it, the older records
// (all but the newest max_records / 2) are thinned: every second one of them is dropped, the
// first always kept. Recent rounds stay complete; older ones get sparser with age.
// rounds_since_previous is kept consistent (the rounds a record stands for).
//
// Not thread-safe (JobManager serialises access).
#ifndef PCP_SHEPHERD_JOB_HISTORY_H_
#define PCP_SHEPHERD_JOB_HISTORY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::shepherd {

// The bound every job's history has unless told otherwise (Job.history_max_records).
inline constexpr size_t kDefaultMaxHistoryRecords = 1024;

struct JobHistoryOptions {
  size_t max_records = kDefaultMaxHistoryRecords;  // >= 4
  // fdatasync after each append (a record survives a power loss once Put returns).
  bool sync_appends = true;
};

class JobHistory {
 public:
  // Reads (and compacts) `path`; a missing file is an empty history.
  static absl::StatusOr<JobHistory> Open(std::string path, JobHistoryOptions options = {});

  // Adds the record of a new round, or replaces the record of a round it holds. A record
  // for a round older than the newest that the history does not hold (thinned out, or
  // dropped) is ignored. The in-memory history changes even when the write fails (the
  // error says so; the next rewrite repairs the file).
  absl::Status Put(const v1::RoundRecord& record);
  // Forgets the records of rounds after `round`.
  absl::Status DropAfter(uint64_t round);

  // The record of `round`, or null.
  const v1::RoundRecord* Find(uint64_t round) const;
  // Up to `limit` records of rounds > after_round, oldest first; *next_after_round = the
  // last one's round when more follow, else 0.
  std::vector<v1::RoundRecord> Page(uint64_t after_round, size_t limit, uint64_t* next_after_round) const;

  const std::vector<v1::RoundRecord>& records() const { return records_; }
  size_t size() const { return records_.size(); }
  size_t max_records() const { return max_records_; }
  const std::string& path() const { return path_; }
  // Records in the file right now (appended since the last rewrite included).
  size_t records_in_file() const { return records_in_file_; }

 private:
  JobHistory(std::string path, JobHistoryOptions options)
      : path_(std::move(path)), max_records_(options.max_records), sync_appends_(options.sync_appends) {}
  // Inserts or replaces in memory; false when the record was ignored.
  bool Insert(const v1::RoundRecord& record);
  // Drops every second older record while over the bound; true if it dropped any.
  bool Thin();
  void Renumber();
  absl::Status Rewrite();

  std::string path_;
  size_t max_records_;
  bool sync_appends_;
  std::vector<v1::RoundRecord> records_;  // by round, ascending, each round once
  size_t records_in_file_ = 0;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_JOB_HISTORY_H_
