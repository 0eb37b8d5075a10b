// Compressed tensor streams on a real cluster (processes on loopback): the same small job is
// trained with f32 streams and with diloco.compression {up: int8, down: int4}. The compressed
// job completes and learns; its Δs come up at about a quarter of the f32 bytes, and after
// round 1 (θ in full) its θ updates come down at about 4.5/32 of them; every worker's θ
// replica matched the shepherd's (StartRound's crc32c: no resync); the workers log the codecs.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/testing/metrics_scrape.h"

namespace pcp::testing {
namespace {

struct TrainedJob {
  v1::Job job;
  std::vector<v1::RoundRecord> history;
};

TrainedJob Train(ClusterHarness& cluster, const std::string& name, const std::string& diloco_yaml) {
  E2eJob spec{.name = name, .rounds = 4, .inner_steps = 10, .diloco_yaml = diloco_yaml};
  absl::StatusOr<std::string> job_id = cluster.SubmitJob(spec);
  EXPECT_TRUE(job_id.ok()) << job_id.status();
  if (!job_id.ok()) return {};
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(*job_id, absl::Minutes(5));
  EXPECT_TRUE(job.ok()) << job.status();
  absl::StatusOr<std::vector<v1::RoundRecord>> history = cluster.JobHistory(*job_id);
  EXPECT_TRUE(history.ok()) << history.status();
  if (!job.ok() || !history.ok()) return {};
  return {*job, *history};
}

TEST(CompressionTest, Int8DeltasAndInt4UpdatesTrainAndKeepReplicasIdentical) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();

  const TrainedJob f32 = Train(cluster, "f32_streams", "");
  const TrainedJob packed = Train(cluster, "packed_streams", "  compression: {up: int8, down: int4}\n");
  ASSERT_EQ(f32.job.state(), v1::JOB_STATE_COMPLETED) << f32.job.reason() << cluster.Logs(40);
  ASSERT_EQ(packed.job.state(), v1::JOB_STATE_COMPLETED) << packed.job.reason() << cluster.Logs(40);
  ASSERT_TRUE(packed.job.progress().has_val_loss());
  EXPECT_TRUE(std::isfinite(packed.job.progress().val_loss()));
  EXPECT_LT(packed.job.progress().val_loss(), 4.0);  // ln 65 = 4.17: it learned

  // Bytes per round, both workers in every round (same seeds, same model).
  ASSERT_EQ(f32.history.size(), 4u);
  ASSERT_EQ(packed.history.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(f32.history[i].participants_size(), 2) << "round " << i + 1;
    ASSERT_EQ(packed.history[i].participants_size(), 2) << "round " << i + 1;
    const double up = static_cast<double>(packed.history[i].bytes_up()) / static_cast<double>(f32.history[i].bytes_up());
    const double down =
        static_cast<double>(packed.history[i].bytes_down()) / static_cast<double>(f32.history[i].bytes_down());
    std::printf("round %zu: bytes up %llu vs %llu (%.3f), down %llu vs %llu (%.3f)\n", i + 1,
                static_cast<unsigned long long>(packed.history[i].bytes_up()),
                static_cast<unsigned long long>(f32.history[i].bytes_up()), up,
                static_cast<unsigned long long>(packed.history[i].bytes_down()),
                static_cast<unsigned long long>(f32.history[i].bytes_down()), down);
    // int8: 8.03 bits a value against 32, plus per-chunk headers and the chunk messages.
    EXPECT_GT(up, 0.2) << "round " << i + 1;
    EXPECT_LT(up, 0.3) << "round " << i + 1;
    if (i == 0) {
      EXPECT_NEAR(down, 1.0, 0.02) << "round 1 sends θ in full";
    } else {
      EXPECT_LT(down, 0.2) << "round " << i + 1 << ": int4 updates (4.5 bits a value)";
    }
  }

  // Every replica matched: no worker asked for θ in full.
  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(SampleValue(*page, "pcp_shepherd_replica_resyncs_total").value_or(-1), 0) << *page;
  EXPECT_FALSE(absl::StrContains(cluster.shepherd()->Log(), "does not match the shepherd's"));
  // The supervisor's log carries its worker's.
  EXPECT_TRUE(absl::StrContains(cluster.supervisor(0)->Log(), "Δ int8 with error feedback, θ updates int4"))
      << cluster.Logs(40);
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
