// Time-budgeted rounds (diloco.time_budget, issue 32) on loopback: two workers, one of them
// slowed 4x with the testing option --fault_slow_factor, train a tiny job whose rounds are a
// time budget. Asserts the job completes at its token budget (rounds × inner_steps × workers ×
// batch × block, overshooting by less than one step per worker), every round's tokens are
// whole steps, and the shepherd's worker listing shows each worker's speed and steps.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"

namespace pcp::testing {
namespace {

TEST(TimeBudgetE2eTest, UnevenWorkersEndAtTheJobsTokenBudget) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2, "--fault_slow_factor=4").ok()) << cluster.Logs();

  E2eJob spec;
  spec.name = "budget_e2e";
  spec.rounds = 4;
  spec.inner_steps = 10;
  spec.round_deadline_s = 120;
  // At most 15 steps a round each: at least 3 rounds for the job's 80 steps' tokens.
  spec.diloco_yaml = "  time_budget: {seconds: 0.04, min_steps: 2, max_steps: 15}\n";
  const uint64_t step_tokens = static_cast<uint64_t>(spec.batch_size) * static_cast<uint64_t>(spec.block_size);
  const uint64_t budget = static_cast<uint64_t>(spec.rounds * spec.inner_steps * spec.workers) * step_tokens;

  absl::StatusOr<ClusterHarness::FinishedJob> run = cluster.RunJob(spec, absl::Seconds(600));
  ASSERT_TRUE(run.ok()) << run.status() << cluster.Logs();
  ASSERT_EQ(run->job.state(), v1::JOB_STATE_COMPLETED) << run->job.reason() << cluster.Logs();
  uint64_t tokens = 0;
  std::printf("rounds: %zu; tokens by round:", run->history.size());
  for (const v1::RoundRecord& r : run->history) {
    std::printf(" %llu", static_cast<unsigned long long>(r.tokens()));
    EXPECT_EQ(r.tokens() % step_tokens, 0u) << "round " << r.round();
    EXPECT_GT(r.tokens(), 0u) << "round " << r.round();
    tokens += r.tokens();
  }
  std::printf("\n");
  EXPECT_GE(run->history.size(), 3u);
  EXPECT_EQ(run->job.progress().tokens_processed(), tokens);
  EXPECT_GE(tokens, budget);
  EXPECT_LT(tokens, budget + static_cast<uint64_t>(spec.workers) * step_tokens);
  ASSERT_TRUE(run->job.progress().has_val_loss());

  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(cluster.admin().ListWorkers(&context, v1::ListWorkersRequest(), &workers).ok());
  ASSERT_EQ(workers.workers_size(), 2);
  for (const v1::WorkerInfo& w : workers.workers()) {
    std::printf("%s: %.1f ms/step, %u steps in its last round, idle %.0f%%, staleness %llu\n",
                w.supervisor_id().c_str(), w.step_time_ms(), w.round_steps(), 100 * w.idle_fraction(),
                static_cast<unsigned long long>(w.staleness()));
    EXPECT_GT(w.step_time_ms(), 0) << w.supervisor_id();
    EXPECT_GE(w.round_steps(), 1u) << w.supervisor_id();
    EXPECT_LE(w.round_steps(), 15u) << w.supervisor_id();
    EXPECT_EQ(w.staleness(), 0u) << w.supervisor_id();  // synchronous rounds
    EXPECT_GE(w.idle_fraction(), 0);
    EXPECT_LE(w.idle_fraction(), 1);
  }
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
