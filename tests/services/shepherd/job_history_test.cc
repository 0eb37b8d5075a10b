// The bounded, persisted per-round history of a job: appends, replacement of a round's
// record, compaction on open (torn tails included), dropping rounds after a resume, paging,
// and the bound on a 10,000-round job.
#include "pcp/shepherd/job_history.h"

#include <sys/stat.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "process_harness.h"

namespace pcp::shepherd {
namespace {

v1::RoundRecord Record(uint64_t round) {
  v1::RoundRecord r;
  r.set_round(round);
  r.set_train_loss(4.0 / static_cast<double>(round));
  r.set_tokens(768);
  r.set_tokens_total(768 * round);
  r.add_participants("local-1");
  r.add_participants("local-2");
  r.set_round_s(0.5);
  return r;
}

class JobHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcp-job-history");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(*std::move(dir));
    path_ = dir_->path() + "/history.pb";
  }
  // Appends not fdatasync'd: durability is not under test, and 10,000 syncs are slow.
  JobHistory Open(size_t max_records = kDefaultMaxHistoryRecords) {
    absl::StatusOr<JobHistory> h = JobHistory::Open(path_, {.max_records = max_records, .sync_appends = false});
    EXPECT_TRUE(h.ok()) << h.status();
    return *std::move(h);
  }
  static std::vector<uint64_t> Rounds(const JobHistory& h) {
    std::vector<uint64_t> out;
    for (const v1::RoundRecord& r : h.records()) out.push_back(r.round());
    return out;
  }
  std::optional<testing::TempDir> dir_;
  std::string path_;
};

TEST_F(JobHistoryTest, RecordsSurviveReopeningAndALaterRecordOfARoundReplacesIt) {
  JobHistory h = Open();
  for (uint64_t r = 1; r <= 4; ++r) ASSERT_TRUE(h.Put(Record(r)).ok());
  v1::RoundRecord with_val = Record(2);
  with_val.set_val_loss(2.5);
  ASSERT_TRUE(h.Put(with_val).ok());
  EXPECT_EQ(h.records_in_file(), 5u);  // appended, not rewritten

  JobHistory again = Open();
  EXPECT_EQ(Rounds(again), (std::vector<uint64_t>{1, 2, 3, 4}));
  ASSERT_NE(again.Find(2), nullptr);
  EXPECT_DOUBLE_EQ(again.Find(2)->val_loss(), 2.5);
  EXPECT_FALSE(again.Find(3)->has_val_loss());
  EXPECT_EQ(again.records_in_file(), 4u);  // compacted on open
  EXPECT_EQ(again.Find(4)->rounds_since_previous(), 1u);
  EXPECT_EQ(again.Find(1)->rounds_since_previous(), 1u);
}

TEST_F(JobHistoryTest, ATornLastRecordIsDroppedOnOpen) {
  {
    JobHistory h = Open();
    for (uint64_t r = 1; r <= 3; ++r) ASSERT_TRUE(h.Put(Record(r)).ok());
  }
  // A crash in the middle of appending round 4: its size prefix promises more bytes than follow.
  std::string record4;
  ASSERT_TRUE(Record(4).SerializeToString(&record4));
  ASSERT_TRUE(
      AppendFile(path_, std::string(1, static_cast<char>(record4.size())) + record4.substr(0, 5), /*sync=*/false).ok());
  JobHistory h = Open();
  EXPECT_EQ(Rounds(h), (std::vector<uint64_t>{1, 2, 3}));
  ASSERT_TRUE(h.Put(Record(4)).ok());
  EXPECT_EQ(Rounds(Open()), (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST_F(JobHistoryTest, DropAfterForgetsTheRoundsThatRunAgain) {
  JobHistory h = Open();
  for (uint64_t r = 1; r <= 6; ++r) ASSERT_TRUE(h.Put(Record(r)).ok());
  ASSERT_TRUE(h.DropAfter(4).ok());
  v1::RoundRecord rerun = Record(5);
  rerun.set_train_loss(9.0);
  ASSERT_TRUE(h.Put(rerun).ok());
  JobHistory again = Open();
  EXPECT_EQ(Rounds(again), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_DOUBLE_EQ(again.Find(5)->train_loss(), 9.0);
  ASSERT_TRUE(again.DropAfter(0).ok());
  EXPECT_TRUE(Open().records().empty());
}

TEST_F(JobHistoryTest, PagesFollowEachOther) {
  JobHistory h = Open();
  for (uint64_t r = 1; r <= 7; ++r) ASSERT_TRUE(h.Put(Record(r)).ok());
  uint64_t next = 0;
  std::vector<v1::RoundRecord> page = h.Page(0, 3, &next);
  ASSERT_EQ(page.size(), 3u);
  EXPECT_EQ(next, 3u);
  page = h.Page(next, 3, &next);
  EXPECT_EQ(page.front().round(), 4u);
  EXPECT_EQ(next, 6u);
  page = h.Page(next, 3, &next);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].round(), 7u);
  EXPECT_EQ(next, 0u);
}

// The bound: a 10,000-round job keeps at most max_records records, in memory and in its
// file, with every one of its newest max_records / 2 rounds and the first one.
TEST_F(JobHistoryTest, ATenThousandRoundJobStaysWithinTheBound) {
  constexpr uint64_t kRounds = 10000;
  JobHistory h = Open();
  const size_t bound = h.max_records();
  ASSERT_EQ(bound, kDefaultMaxHistoryRecords);
  size_t most_in_file = 0;
  for (uint64_t r = 1; r <= kRounds; ++r) {
    v1::RoundRecord rec = Record(r);
    ASSERT_TRUE(h.Put(rec).ok());
    if (r % 250 == 0) {  // the val loss arrives later, as a second record of the round
      rec.set_val_loss(1.0);
      ASSERT_TRUE(h.Put(rec).ok());
    }
    ASSERT_LE(h.size(), bound) << "after round " << r;
    most_in_file = std::max(most_in_file, h.records_in_file());
  }
  EXPECT_LE(most_in_file, 2 * bound);
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  // ~40 bytes a record here; the file holds at most 2 x bound of them.
  EXPECT_LE(static_cast<size_t>(st.st_size), 2 * bound * 64);

  JobHistory reopened = Open();
  EXPECT_EQ(Rounds(reopened), Rounds(h));
  EXPECT_LE(reopened.size(), bound);
  EXPECT_GE(reopened.size(), bound / 2);
  const std::vector<v1::RoundRecord>& recs = reopened.records();
  EXPECT_EQ(recs.front().round(), 1u);
  EXPECT_EQ(recs.back().round(), kRounds);
  // The newest half is complete.
  for (size_t i = recs.size() - bound / 2; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].round(), recs[i - 1].round() + 1) << i;
  }
  // rounds_since_previous accounts for every round, and older records are sparser.
  uint64_t covered = 0;
  for (const v1::RoundRecord& r : recs) covered += r.rounds_since_previous();
  EXPECT_EQ(covered, kRounds);
  EXPECT_GT(recs[1].rounds_since_previous(), recs.back().rounds_since_previous());
}

TEST_F(JobHistoryTest, ABoundBelowFourIsRefused) {
  EXPECT_EQ(JobHistory::Open(path_, {.max_records = 3}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pcp::shepherd
