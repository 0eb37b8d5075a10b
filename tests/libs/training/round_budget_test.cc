#include "pcp/training/round_budget.h"

#include <string>

#include "gtest/gtest.h"
#include "pcp/training/lr_schedule.h"

namespace pcp {
namespace {

absl::StatusOr<JobConfig> Parse(const std::string& yaml) {
  return ParseJobConfig("data:\n  path: tiny_shakespeare.txt\n" + yaml, "job.yaml", PCP_DATA_DIR,
                        DataRoots::Unconfined());
}

// 3 workers × 4 × 8 tokens a step; 10 rounds of 5 steps: 10 × 5 × 3 × 32 = 4800 tokens.
const std::string kJob =
    "model: {block_size: 8}\ntraining: {batch_size: 4, max_iters: 50}\n"
    "optimizer: {lr: 0.01, min_lr: 0.001, warmup_iters: 4}\ndiloco:\n  workers: 3\n  inner_steps: 5\n";

TEST(RoundBudgetTest, WithoutABudgetRoundsAreTauStepsAtTheFixedRatesAndTheJobEndsAtItsRounds) {
  absl::StatusOr<JobConfig> c = Parse(kJob);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->diloco.time_budget.enabled());
  EXPECT_EQ(c->diloco.time_budget.max_steps, 20);  // default 4 × inner_steps
  EXPECT_EQ(TokensPerStep(*c), 32u);
  EXPECT_EQ(JobTokenBudget(*c), 4800u);
  EXPECT_EQ(StepsOfRound(*c, 3, 12345), (RoundSteps{5, 5}));  // tokens do not matter
  const LrSchedule s = c->optimizer.Schedule();
  const std::vector<float> lrs = LearningRatesOfRound(*c, 3, 0);
  ASSERT_EQ(lrs.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(lrs[i], static_cast<float>(s.At(10 + i))) << i;
  EXPECT_FALSE(JobDone(*c, 9, 1'000'000));
  EXPECT_TRUE(JobDone(*c, 10, 0));
  // Streaming DiLoCo's rounds of 2 and 3 steps (τ = 5, P = 2) keep their global steps too.
  c = Parse(kJob + "  streaming: {fragments: 2}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  for (uint64_t round : {1, 2, 7}) {
    const std::vector<float> r = LearningRatesOfRound(*c, round, 0);
    ASSERT_EQ(static_cast<int64_t>(r.size()), c->diloco.StepsOfRound(round)) << round;
    EXPECT_EQ(StepsOfRound(*c, round, 0), (RoundSteps{c->diloco.StepsOfRound(round), c->diloco.StepsOfRound(round)}));
    for (size_t i = 0; i < r.size(); ++i) {
      EXPECT_EQ(r[i], static_cast<float>(s.At(c->diloco.FirstStep(round) + static_cast<int64_t>(i)))) << round;
    }
  }
}

TEST(RoundBudgetTest, WithABudgetStepsAreBoundedCappedAtTheEndAndRatesFollowTheTokens) {
  absl::StatusOr<JobConfig> c = Parse(kJob + "  time_budget: {seconds: 2.5, min_steps: 2, max_steps: 12}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->diloco.time_budget.enabled());
  EXPECT_EQ(c->diloco.max_steps_per_round(), 12);  // the Assignment's inner_steps
  EXPECT_EQ(StepsOfRound(*c, 1, 0), (RoundSteps{2, 12}));
  // 4800 − 4320 = 480 tokens left: 5 steps for each of 3 workers.
  EXPECT_EQ(StepsOfRound(*c, 9, 4320), (RoundSteps{2, 5}));
  // 64 tokens left: one step each (never 0), min lowered to it.
  EXPECT_EQ(StepsOfRound(*c, 20, 4736), (RoundSteps{1, 1}));
  // The schedule position is the tokens done over workers × tokens per step: 960 / 96 = 10.
  const LrSchedule s = c->optimizer.Schedule();
  const std::vector<float> lrs = LearningRatesOfRound(*c, 4, 960);
  ASSERT_EQ(lrs.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(lrs[i], static_cast<float>(s.At(10 + i))) << i;
  // The job ends at its tokens, whatever the rounds.
  EXPECT_FALSE(JobDone(*c, 100, 4799));
  EXPECT_TRUE(JobDone(*c, 3, 4800));
}

TEST(RoundBudgetTest, BadBudgetsAreRefusedNamingTheKey) {
  absl::StatusOr<JobConfig> c = Parse("diloco:\n  time_budget: {seconds: 5, min_steps: 30, max_steps: 20}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "diloco.time_budget.min_steps: 30 is more than diloco.time_budget.max_steps (20)"),
            std::string::npos)
      << c.status();
  c = Parse("diloco:\n  time_budget: {seconds: 5}\n  streaming: {fragments: 2}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("diloco.time_budget.seconds: time-budgeted rounds cannot be streamed"),
            std::string::npos)
      << c.status();
  c = Parse("diloco:\n  time_budget: {seconds: -1}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("diloco.time_budget.seconds: must be in [0.0, 86400.0]"), std::string::npos)
      << c.status();
  c = Parse("diloco:\n  time_budget: {second: 5}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown key 'second' in section 'diloco.time_budget'"), std::string::npos)
      << c.status();
}

}  // namespace
}  // namespace pcp
