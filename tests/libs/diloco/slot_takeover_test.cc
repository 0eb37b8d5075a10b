#include "pcp/diloco/slot_takeover.h"

#include "gtest/gtest.h"

namespace pcp::diloco {
namespace {

TEST(SlotTakeover, NothingWhenEverySlotIsHeldOrInTheRound) {
  EXPECT_FALSE(SlotToTakeOver({}).has_value());
  std::vector<SlotTask> tasks(3);
  tasks[0] = {.held = true, .in_round = true, .orphaned = false};
  tasks[1] = {.held = true, .in_round = false, .orphaned = false};
  tasks[2] = {.held = false, .in_round = true, .orphaned = true};  // its task already ran this round
  EXPECT_FALSE(SlotToTakeOver(tasks).has_value());
  EXPECT_FALSE(HasSlotToTakeOver(tasks));
}

TEST(SlotTakeover, AnOrphanedSlotNobodyHoldsIsTaken) {
  std::vector<SlotTask> tasks(3);
  tasks[0] = {.held = true, .in_round = true};
  tasks[1] = {.held = true, .in_round = true};
  tasks[2] = {.held = false, .in_round = false, .orphaned = true, .rounds_done = 4};
  ASSERT_TRUE(SlotToTakeOver(tasks).has_value());
  EXPECT_EQ(*SlotToTakeOver(tasks), 2);
  EXPECT_TRUE(HasSlotToTakeOver(tasks));
}

TEST(SlotTakeover, ASlotWhoseWorkerLeftMidRoundIsNotOrphanedYet) {
  // Its worker held it when the round started: it may come back and join late.
  std::vector<SlotTask> tasks(2);
  tasks[0] = {.held = true, .in_round = true};
  tasks[1] = {.held = false, .in_round = false, .orphaned = false};
  EXPECT_FALSE(SlotToTakeOver(tasks).has_value());
}

TEST(SlotTakeover, TheSlotFurthestBehindFirst) {
  std::vector<SlotTask> tasks(4);
  tasks[0] = {.held = true, .in_round = true};
  tasks[1] = {.held = false, .orphaned = true, .rounds_done = 7};
  tasks[2] = {.held = false, .orphaned = true, .rounds_done = 5};
  tasks[3] = {.held = false, .orphaned = true, .rounds_done = 5};
  ASSERT_TRUE(SlotToTakeOver(tasks).has_value());
  EXPECT_EQ(*SlotToTakeOver(tasks), 2);  // fewest rounds done, then the lowest index
  tasks[2].held = true;                  // given out
  EXPECT_EQ(*SlotToTakeOver(tasks), 3);
}

}  // namespace
}  // namespace pcp::diloco
