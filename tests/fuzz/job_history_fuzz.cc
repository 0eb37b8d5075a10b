// A job's history file (jobs/<id>/history.pb: delimited RoundRecords, possibly torn by a
// crash): JobHistory::Open takes any bytes; what it keeps is within the bound, in round
// order, and reads back the same after the compaction it wrote.
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz_target.h"
#include "pcp/base/file.h"
#include "pcp/shepherd/job_history.h"

namespace {

const std::string& Path() {
  static const std::string* path = new std::string(absl::StrCat("/tmp/pcp-job-history-fuzz-", ::getpid(), ".pb"));
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using pcp::shepherd::JobHistory;
  if (!pcp::WriteFileAtomic(Path(), pcp::fuzz::AsText(data, size)).ok()) return 0;
  const pcp::shepherd::JobHistoryOptions options{.max_records = 8, .sync_appends = false};
  absl::StatusOr<JobHistory> history = JobHistory::Open(Path(), options);
  if (!history.ok()) return 0;
  PCP_FUZZ_CHECK(history->size() <= 8);
  for (size_t i = 1; i < history->size(); ++i) {
    PCP_FUZZ_CHECK(history->records()[i - 1].round() < history->records()[i].round());
  }
  absl::StatusOr<JobHistory> again = JobHistory::Open(Path(), options);
  PCP_FUZZ_CHECK(again.ok() && again->size() == history->size());
  return 0;
}
