// Data follows the work (docs/diloco.md, "Data follows the work"; pcp/diloco/slot_takeover.h)
// on a real cluster: a 3-slot job run by 2 workers trains all three shards. With
// diloco.orphan_slots: takeover (the default) a worker that has delivered its own task of a
// round takes the missing worker's slot (its shard, seed and cursor), so every slot's cursor
// ends at rounds × τ and each round uses three Δs; with `idle` the third slot is never
// trained (the behaviour before), which shows the check can fail.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint_slots.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"

namespace pcp::testing {
namespace {

constexpr int kRounds = 4;
constexpr int kTau = 10;

TEST(OrphanSlotsTest, ThreeSlotJobWithTwoWorkersTrainsEveryShard) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();

  for (const std::string mode : {"takeover", "idle"}) {
    SCOPED_TRACE(mode);
    E2eJob spec{.name = absl::StrCat("orphans_", mode), .rounds = kRounds, .inner_steps = kTau, .workers = 3};
    spec.diloco_yaml = absl::StrCat("  orphan_slots: ", mode, "\n");
    absl::StatusOr<ClusterHarness::FinishedJob> run = cluster.RunJob(spec, absl::Minutes(8));
    ASSERT_TRUE(run.ok()) << run.status() << cluster.Logs(60);
    ASSERT_EQ(run->job.state(), v1::JOB_STATE_COMPLETED) << run->job.reason() << cluster.Logs(60);
    absl::StatusOr<std::vector<CheckpointSlot>> slots = ReadCheckpointSlots(run->job.checkpoint_path());
    ASSERT_TRUE(slots.ok()) << slots.status();
    ASSERT_EQ(slots->size(), 3u);
    const uint64_t tokens_per_task = static_cast<uint64_t>(kTau) * spec.batch_size * spec.block_size;
    ASSERT_EQ(run->history.size(), static_cast<size_t>(kRounds));
    if (mode == "takeover") {
      // Every shard trained every round, from where it stood: nothing twice, nothing skipped.
      for (size_t s = 0; s < slots->size(); ++s) {
        EXPECT_EQ((*slots)[s].rounds_done, static_cast<uint64_t>(kRounds)) << "slot " << s;
        EXPECT_EQ((*slots)[s].sampler_cursor, static_cast<uint64_t>(kRounds * kTau)) << "slot " << s;
      }
      for (const v1::RoundRecord& rec : run->history) EXPECT_EQ(rec.tokens(), 3 * tokens_per_task) << rec.round();
    } else {
      int untrained = 0;
      for (const CheckpointSlot& s : *slots) untrained += s.rounds_done == 0 ? 1 : 0;
      EXPECT_EQ(untrained, 1);
      for (const v1::RoundRecord& rec : run->history) EXPECT_EQ(rec.tokens(), 2 * tokens_per_task) << rec.round();
    }
    std::printf("orphan_slots %s: slots (rounds done, cursor):", mode.c_str());
    for (const CheckpointSlot& s : *slots) std::printf(" (%lu, %lu)", s.rounds_done, s.sampler_cursor);
    std::printf("; val loss %.4f\n", run->job.progress().val_loss());
  }
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
