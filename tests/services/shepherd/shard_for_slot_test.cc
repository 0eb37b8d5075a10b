// Which training tokens each slot samples (job_program.h ShardForSlot): its 1/world shard in
// synchronous rounds of τ steps, the whole set with a time budget or asynchronous rounds (slots
// then run unequal shares of the steps), inline and as a shared file's range.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/shepherd/job_program.h"

namespace pcp::shepherd {
namespace {

constexpr int64_t kTrain = 300;

// A job over 300 training tokens 0, 1, ..., 299 (and 20 val tokens), blocks of 4.
PreparedJob Job() {
  std::vector<uint16_t> train(kTrain), val(20);
  for (int64_t i = 0; i < kTrain; ++i) train[static_cast<size_t>(i)] = static_cast<uint16_t>(i);
  PreparedJob job{.data = Dataset(TokenSequence(std::move(train)), TokenSequence(std::move(val)), std::nullopt)};
  job.config.model.block_size = 4;
  job.config.diloco.workers = 3;
  return job;
}

// The tokens of an inline shard, decoded from its u16 little-endian bytes.
std::vector<uint16_t> InlineTokens(const ShardPlan& plan) {
  EXPECT_TRUE(plan.shard.has_inline_tokens());
  EXPECT_NE(plan.inline_bytes, nullptr);
  std::vector<uint16_t> out;
  if (plan.inline_bytes == nullptr) return out;
  const std::string& b = *plan.inline_bytes;
  for (size_t i = 0; i + 1 < b.size(); i += 2) {
    out.push_back(static_cast<uint16_t>(static_cast<uint8_t>(b[i]) | (static_cast<uint8_t>(b[i + 1]) << 8)));
  }
  EXPECT_EQ(out.size(), plan.num_tokens);
  EXPECT_EQ(plan.shard.inline_tokens().num_tokens(), plan.num_tokens);
  return out;
}

TEST(ShardForSlotTest, SynchronousRoundsGiveEachSlotItsThird) {
  const PreparedJob job = Job();
  ASSERT_FALSE(SlotsSampleWholeData(job.config));
  for (int64_t slot = 0; slot < 3; ++slot) {
    absl::StatusOr<ShardPlan> plan = ShardForSlot(job, slot, 3);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const std::vector<uint16_t> tokens = InlineTokens(*plan);
    ASSERT_EQ(tokens.size(), 100u) << "slot " << slot;
    EXPECT_EQ(tokens.front(), 100 * slot);
    EXPECT_EQ(tokens.back(), 100 * slot + 99);
  }
}

TEST(ShardForSlotTest, TimeBudgetedAndAsyncRoundsGiveEverySlotTheWholeSet) {
  PreparedJob budgeted = Job();
  budgeted.config.diloco.time_budget.seconds = 5;
  PreparedJob async = Job();
  async.config.diloco.mode = diloco::RoundMode::kAsync;
  for (const PreparedJob* job : {&budgeted, &async}) {
    ASSERT_TRUE(SlotsSampleWholeData(job->config));
    for (int64_t slot = 0; slot < 3; ++slot) {
      absl::StatusOr<ShardPlan> plan = ShardForSlot(*job, slot, 3);
      ASSERT_TRUE(plan.ok()) << plan.status();
      const std::vector<uint16_t> tokens = InlineTokens(*plan);
      ASSERT_EQ(tokens.size(), static_cast<size_t>(kTrain)) << "slot " << slot;
      EXPECT_EQ(tokens.front(), 0);
      EXPECT_EQ(tokens.back(), kTrain - 1);
    }
  }
}

TEST(ShardForSlotTest, SharedFileRangesFollowTheSameRule) {
  PreparedJob job = Job();
  job.config.data.shared = true;
  job.config.data.path = "/data/tokens.bin";
  job.config.data.format = DataFormat::kBin;
  absl::StatusOr<ShardPlan> third = ShardForSlot(job, 2, 3);
  ASSERT_TRUE(third.ok()) << third.status();
  ASSERT_TRUE(third->shard.has_shared_file());
  EXPECT_EQ(third->inline_bytes, nullptr);
  EXPECT_EQ(third->shard.shared_file().begin_token(), 200u);
  EXPECT_EQ(third->shard.shared_file().end_token(), 300u);
  EXPECT_EQ(third->num_tokens, 100u);

  job.config.diloco.time_budget.seconds = 5;
  absl::StatusOr<ShardPlan> whole = ShardForSlot(job, 2, 3);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->shard.shared_file().begin_token(), 0u);
  EXPECT_EQ(whole->shard.shared_file().end_token(), static_cast<uint64_t>(kTrain));
  EXPECT_EQ(whole->num_tokens, static_cast<uint64_t>(kTrain));
}

TEST(ShardForSlotTest, ASlotOutsideTheWorldIsAnError) {
  PreparedJob job = Job();
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(ShardForSlot(job, 3, 3).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ShardForSlot(job, -1, 3).status().code(), absl::StatusCode::kInvalidArgument);
    job.config.diloco.time_budget.seconds = 5;  // the whole set: still a slot of the world
  }
}

}  // namespace
}  // namespace pcp::shepherd
