// Streaming DiLoCo on a real cluster (processes on loopback): the same small job with plain
// DiLoCo (τ = 20) and with diloco.streaming {fragments: 4, overlap_steps: 2} (a round of 5
// steps syncs one quarter of θ), then streaming with int4 both ways. Each streaming job
// completes with both workers in every round and learns; its rounds carry about a quarter of
// a plain round's Δ bytes (fragments balanced to one value: at most ⌈|θ|/P⌉); every θ replica matches
// the shepherd's (the fragments' CRCs: no resync).
#include <algorithm>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/testing/metrics_scrape.h"

namespace pcp::testing {
namespace {

using TrainedJob = ClusterHarness::FinishedJob;

TrainedJob Train(ClusterHarness& cluster, const std::string& name, int rounds, const std::string& diloco_yaml) {
  E2eJob spec{.name = name, .rounds = rounds, .inner_steps = 20, .diloco_yaml = diloco_yaml};
  absl::StatusOr<TrainedJob> done = cluster.RunJob(spec, absl::Minutes(5));
  EXPECT_TRUE(done.ok()) << done.status();
  return done.ok() ? *std::move(done) : TrainedJob{};
}

TEST(StreamingTest, FragmentsSyncInTurnWithOverlapAndCompression) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();

  // 80 inner steps each: 4 rounds of 20, or 16 rounds of 5.
  const TrainedJob plain = Train(cluster, "plain", 4, "");
  const TrainedJob streamed = Train(cluster, "streamed", 16, "  streaming: {fragments: 4, overlap_steps: 2}\n");
  const TrainedJob packed =
      Train(cluster, "streamed_int4", 16,
            "  streaming: {fragments: 2, overlap_steps: 1}\n  compression: {up: int4, down: int4}\n");
  for (const TrainedJob* j : {&plain, &streamed, &packed}) {
    ASSERT_EQ(j->job.state(), v1::JOB_STATE_COMPLETED) << j->job.name() << ": " << j->job.reason() << cluster.Logs(60);
    ASSERT_TRUE(j->job.progress().has_val_loss());
    std::printf("%s: val loss %.4f after %zu rounds\n", j->job.name().c_str(), j->job.progress().val_loss(),
                j->history.size());
    EXPECT_LT(j->job.progress().val_loss(), 4.0) << j->job.name();  // ln 65 = 4.17: it learned
  }
  ASSERT_EQ(plain.history.size(), 4u);
  ASSERT_EQ(streamed.history.size(), 16u);
  ASSERT_EQ(packed.history.size(), 16u);
  double plain_up = 0, streamed_up = 0;
  for (const v1::RoundRecord& r : plain.history) plain_up += static_cast<double>(r.bytes_up()) / 4;
  for (const v1::RoundRecord& r : streamed.history) {
    EXPECT_EQ(r.participants_size(), 2) << "round " << r.round();
    streamed_up += static_cast<double>(r.bytes_up()) / 16;
  }
  // One fragment of four a round: a quarter of θ's values, plus the chunks' headers. (Per
  // round the records are not exact: a streaming worker's Δ may arrive before its round opens
  // and is counted with the round before.)
  const double share = streamed_up / plain_up;
  std::printf("Δ bytes per round: streamed %.0f, plain %.0f (%.3f)\n", streamed_up, plain_up, share);
  EXPECT_GT(share, 0.23);
  EXPECT_LT(share, 0.27);
  // Down: θ in full once, then a quarter of θ a round (16 rounds: 1 + 16/4 = 5 θs, the last
  // fragment possibly after the last record), against θ in full every round but the first,
  // whose θ₀ the workers draw (3 θs).
  double plain_down = 0, streamed_down = 0;
  for (const v1::RoundRecord& r : plain.history) plain_down += static_cast<double>(r.bytes_down());
  for (const v1::RoundRecord& r : streamed.history) streamed_down += static_cast<double>(r.bytes_down());
  std::printf("θ bytes down: streamed %.0f, plain %.0f (%.3f)\n", streamed_down, plain_down,
              streamed_down / plain_down);
  EXPECT_NEAR(streamed_down / plain_down, 1.625, 0.06);  // 4.75 to 5 θs over 3
  // Every sync carries at most ⌈|θ|/4⌉ values: the fragments are balanced to one value.
  const std::string worker_log = cluster.supervisor(0)->Log();
  std::smatch m;
  // (The streamed job's rounds: before the next job's assignment, of 2 fragments.)
  std::string rest = worker_log.substr(0, worker_log.find("streaming: 2 fragments"));
  std::vector<int64_t> sizes;
  const std::regex fragment_line(R"(round \d+ done: fragment \d \((\d+) values\))");
  while (std::regex_search(rest, m, fragment_line)) {
    sizes.push_back(std::stoll(m[1].str()));
    rest = m.suffix();
  }
  ASSERT_GE(sizes.size(), 16u);
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  EXPECT_LE(*hi - *lo, 1) << "fragments of " << *lo << " to " << *hi << " values";
  for (const v1::RoundRecord& r : packed.history) EXPECT_EQ(r.participants_size(), 2) << "round " << r.round();

  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(SampleValue(*page, "pcp_shepherd_replica_resyncs_total").value_or(-1), 0) << *page;
  EXPECT_TRUE(absl::StrContains(cluster.shepherd()->Log(), "streaming DiLoCo: 4 fragments"));
  EXPECT_TRUE(absl::StrContains(cluster.supervisor(0)->Log(), "streaming: 4 fragments, overlap 2 steps, alpha 0.5"))
      << cluster.Logs(40);
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
