// Compressed tensor streams on a real cluster (processes on loopback): the same small job is
// trained with f32 streams and with diloco.compression {up: int8, down: int4}. The compressed
// job completes and learns; its Δs come up at about a quarter of the f32 bytes; in round 1 no θ
// comes down (the workers draw θ₀ from the job's init recipe), after it the θ updates come down
// at about 4.5/32 of the f32 job's θ in full; every worker's θ replica matched the shepherd's
// (StartRound's crc32c: no resync); the workers log the codecs. A worker whose draw of θ₀
// differs gets θ in full after one ResyncRequest and trains on with updates.
// The metrics show the same by kind and codec: f32-equivalent over wire bytes (the ratio),
// codec time on both ends, and each worker's network wait between rounds.
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

using TrainedJob = ClusterHarness::FinishedJob;

TrainedJob Train(ClusterHarness& cluster, const std::string& name, const std::string& diloco_yaml) {
  E2eJob spec{.name = name, .rounds = 4, .inner_steps = 10, .diloco_yaml = diloco_yaml};
  absl::StatusOr<TrainedJob> done = cluster.RunJob(spec, absl::Minutes(5));
  EXPECT_TRUE(done.ok()) << done.status();
  return done.ok() ? *std::move(done) : TrainedJob{};
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
    const double up =
        static_cast<double>(packed.history[i].bytes_up()) / static_cast<double>(f32.history[i].bytes_up());
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
    if (i == 0) {  // the workers draw θ₀ (Assignment.init)
      EXPECT_EQ(f32.history[i].bytes_down(), 0u);
      EXPECT_EQ(packed.history[i].bytes_down(), 0u);
    } else {
      EXPECT_LT(down, 0.2) << "round " << i + 1 << ": int4 updates (4.5 bits a value)";
    }
  }

  // Every replica matched: no worker asked for θ in full.
  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(SampleValue(*page, "pcp_shepherd_replica_resyncs_total").value_or(-1), 0) << *page;

  // The same in the shepherd's metrics, by codec. Both jobs sent 8 Δs of the same model, so
  // their f32-equivalent bytes are equal; f32 bytes over wire bytes is the compression ratio.
  const auto value = [&](const std::string& text, const char* name, const char* kind, const char* codec) {
    return SampleValue(text, name, {{"kind", kind}, {"codec", codec}}).value_or(-1);
  };
  const auto seconds = [&](const std::string& text, const char* name, const char* op, const char* codec) {
    return SampleValue(text, name, {{"op", op}, {"codec", codec}}).value_or(-1);
  };
  const double delta_f32 = value(*page, "pcp_shepherd_payload_f32_bytes_received_total", "delta", "f32");
  const double delta_int8 = value(*page, "pcp_shepherd_payload_f32_bytes_received_total", "delta", "int8");
  EXPECT_GT(delta_f32, 0) << *page;
  EXPECT_EQ(delta_int8, delta_f32);
  const double ratio_f32 = delta_f32 / value(*page, "pcp_shepherd_bytes_received_total", "delta", "f32");
  const double ratio_int8 = delta_int8 / value(*page, "pcp_shepherd_bytes_received_total", "delta", "int8");
  const double ratio_int4 = value(*page, "pcp_shepherd_payload_f32_bytes_sent_total", "theta_update", "int4") /
                            value(*page, "pcp_shepherd_bytes_sent_total", "theta_update", "int4");
  std::printf("compression ratios (f32 bytes / wire bytes): Δ f32 %.3f, Δ int8 %.3f, θ updates int4 %.3f\n", ratio_f32,
              ratio_int8, ratio_int4);
  EXPECT_GT(ratio_f32, 0.9);  // chunk headers only
  EXPECT_LE(ratio_f32, 1.0);
  EXPECT_GT(ratio_int8, 3.0);  // 32 / 8.03 = 3.98 at best
  EXPECT_LT(ratio_int8, 3.99);
  EXPECT_GT(ratio_int4, 4.5);  // 32 / 4.5 = 7.1 at best
  EXPECT_LT(ratio_int4, 7.12);
  EXPECT_EQ(value(*page, "pcp_shepherd_bytes_sent_total", "theta_update", "int8"), 0);
  EXPECT_GT(value(*page, "pcp_shepherd_bytes_sent_total", "control", "none"), 0);
  // Codec time: θ updates encoded as int4 and Δs decoded from int8 here; nothing else.
  EXPECT_GT(seconds(*page, "pcp_shepherd_codec_seconds_total", "encode", "int4"), 0) << *page;
  EXPECT_GT(seconds(*page, "pcp_shepherd_codec_seconds_total", "decode", "int8"), 0);
  EXPECT_EQ(seconds(*page, "pcp_shepherd_codec_seconds_total", "decode", "int4"), 0);
  EXPECT_EQ(seconds(*page, "pcp_shepherd_codec_seconds_total", "encode", "int8"), 0);
  // The workers: Δs encoded as int8, θ updates decoded from int4, the same Δ bytes as the
  // shepherd counted, and a network wait before each round but an assignment's first.
  double worker_delta_int8 = 0, waits = 0;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::string> w = cluster.ScrapeMetrics(cluster.worker_metrics_port(i));
    ASSERT_TRUE(w.ok()) << w.status();
    worker_delta_int8 += value(*w, "pcp_worker_payload_f32_bytes_sent_total", "delta", "int8");
    EXPECT_GT(seconds(*w, "pcp_worker_codec_seconds_total", "encode", "int8"), 0) << *w;
    EXPECT_GT(seconds(*w, "pcp_worker_codec_seconds_total", "decode", "int4"), 0);
    EXPECT_EQ(SampleValue(*w, "pcp_worker_replica_mismatches_total").value_or(-1), 0);
    waits += SampleValue(*w, "pcp_worker_network_wait_seconds_count").value_or(-1);
  }
  EXPECT_EQ(worker_delta_int8, delta_int8);
  EXPECT_EQ(waits, 2 * 2 * 3);  // 2 jobs x 2 workers x rounds 2-4
  // The job history has the workers' mean wait from round 2 on.
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(packed.history[i].has_network_wait_s(), i > 0) << "round " << i + 1;
    if (i > 0) {
      EXPECT_GT(packed.history[i].network_wait_s(), 0) << "round " << i + 1;
      EXPECT_LT(packed.history[i].network_wait_s(), 60) << "round " << i + 1;  // loopback
    }
  }
  EXPECT_FALSE(absl::StrContains(cluster.shepherd()->Log(), "does not match the shepherd's"));
  // The supervisor's log carries its worker's.
  EXPECT_TRUE(absl::StrContains(cluster.supervisor(0)->Log(), "Δ int8 with error feedback, θ updates int4"))
      << cluster.Logs(40);
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

// Sparse streams (issue 33): Δs up and θ updates down as topk2 at 3% with error feedback on
// both ends. The job completes and learns; every round's Δ bytes are under 1/40 of the f32
// job's (0.28 bits a value against 32, plus chunk messages on a small model), θ updates from
// round 2 on too; every replica matched the shepherd's (no resync).
TEST(CompressionTest, SparseTopk2UpAndDownTrainAndKeepReplicasIdentical) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();
  const TrainedJob f32 = Train(cluster, "f32_streams", "");
  const TrainedJob sparse = Train(cluster, "sparse_streams",
                                  "  compression: {up: topk2, down: topk2, density: 0.03, error_feedback: true}\n");
  ASSERT_EQ(f32.job.state(), v1::JOB_STATE_COMPLETED) << f32.job.reason() << cluster.Logs(40);
  ASSERT_EQ(sparse.job.state(), v1::JOB_STATE_COMPLETED) << sparse.job.reason() << cluster.Logs(40);
  EXPECT_LT(sparse.job.progress().val_loss(), 4.0);  // ln 65 = 4.17: it learned
  ASSERT_EQ(sparse.history.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(sparse.history[i].participants_size(), 2) << "round " << i + 1;
    const double up =
        static_cast<double>(sparse.history[i].bytes_up()) / static_cast<double>(f32.history[i].bytes_up());
    const double down =
        static_cast<double>(sparse.history[i].bytes_down()) / static_cast<double>(f32.history[i].bytes_down());
    std::printf("round %zu: sparse bytes up %.4f, down %.4f of f32's\n", i + 1, up, down);
    EXPECT_LT(up, 1.0 / 40) << "round " << i + 1;               // 1/49 here: small tensors pay headers and messages
    if (i == 0) EXPECT_EQ(sparse.history[i].bytes_down(), 0u);  // the workers draw θ₀
    if (i > 0) EXPECT_LT(down, 1.0 / 20) << "round " << i + 1;
  }
  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(SampleValue(*page, "pcp_shepherd_replica_resyncs_total").value_or(-1), 0) << *page;
  EXPECT_GT(
      SampleValue(*page, "pcp_shepherd_bytes_received_total", {{"kind", "delta"}, {"codec", "topk2"}}).value_or(-1), 0);
  EXPECT_TRUE(absl::StrContains(cluster.supervisor(0)->Log(), "Δ topk2 with error feedback, θ updates topk2"))
      << cluster.Logs(40);
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

// θ₀ drawn by the workers (Assignment.init, StartRound.theta_from_init): node-1 draws the job's
// θ₀ and is sent nothing in round 1; node-2 (the test-only --fault_init) draws another θ₀, which
// its StartRound's crc32c catches: one ResyncRequest, θ in full to it alone (round 1 sends one θ:
// half of round 2's two, the f32 job's θ in full to both workers), then int4 updates to both from
// round 2 with no further mismatch; the job completes and learns.
TEST(CompressionTest, WorkersDrawThetaZeroAndAMismatchedDrawGetsThetaInFull) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2, "--fault_init").ok()) << cluster.Logs();
  const TrainedJob f32 = Train(cluster, "f32_streams", "");
  ASSERT_EQ(f32.job.state(), v1::JOB_STATE_COMPLETED) << f32.job.reason() << cluster.Logs(40);
  EXPECT_LT(f32.job.progress().val_loss(), 4.0);  // ln 65 = 4.17: it learned
  ASSERT_EQ(f32.history.size(), 4u);
  const double theta_bytes = static_cast<double>(f32.history[1].bytes_down()) / 2;  // one θ in full
  std::printf("round 1: %llu bytes down, one θ in full %.0f\n",
              static_cast<unsigned long long>(f32.history[0].bytes_down()), theta_bytes);
  EXPECT_NEAR(static_cast<double>(f32.history[0].bytes_down()) / theta_bytes, 1.0, 0.01);
  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(SampleValue(*page, "pcp_shepherd_replica_resyncs_total").value_or(-1), 1) << *page;
  EXPECT_TRUE(absl::StrContains(cluster.supervisor(0)->Log(), "θ for round 1 drawn from the job's init recipe"))
      << cluster.Logs(40);
  EXPECT_TRUE(absl::StrContains(cluster.supervisor(1)->Log(), "θ crc32c mismatch")) << cluster.Logs(40);
  EXPECT_FALSE(absl::StrContains(cluster.supervisor(0)->Log(), "θ crc32c mismatch")) << cluster.Logs(40);

  // With int4 updates: round 2's update is from the θ in full node-2 received; no new resync.
  const TrainedJob packed = Train(cluster, "packed_streams", "  compression: {up: f32, down: int4}\n");
  ASSERT_EQ(packed.job.state(), v1::JOB_STATE_COMPLETED) << packed.job.reason() << cluster.Logs(40);
  page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(SampleValue(*page, "pcp_shepherd_replica_resyncs_total").value_or(-1), 2) << *page;
  for (size_t i = 1; i < packed.history.size(); ++i) {
    EXPECT_LT(static_cast<double>(packed.history[i].bytes_down()), 0.4 * theta_bytes) << "round " << i + 1;
  }
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

// A shepherd sized for many workers accepts smaller Δ chunks (transport_workers 1024: 128 KiB,
// the floor; ShepherdConfig::AcceptedChunkBytes) and says so in its JoinAck; the workers send chunks of
// that size, so a model with 1 MiB tensors trains (workers that kept sending 1 MiB chunks had
// every Δ refused: "chunk of 1048576 bytes exceeds the limit of 262144 bytes").
TEST(CompressionTest, WorkersSendTheChunkSizeTheShepherdAccepts) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  cluster.SetShepherdFlags({"--transport_workers=1024"});
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();
  // n_embd 256: the MLP's weights are 256 x 1024 f32 = 1 MiB each.
  E2eJob spec{.name = "small_chunks", .rounds = 2, .inner_steps = 2, .min_workers = 2, .n_layer = 1, .n_embd = 256};
  absl::StatusOr<TrainedJob> done = cluster.RunJob(spec, absl::Minutes(5));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs(40);
  ASSERT_EQ(done->job.state(), v1::JOB_STATE_COMPLETED) << done->job.reason() << cluster.Logs(40);
  ASSERT_EQ(done->history.size(), 2u);
  for (const v1::RoundRecord& r : done->history) {
    EXPECT_EQ(r.participants_size(), 2) << "round " << r.round();
    EXPECT_GT(r.bytes_up(), uint64_t{2} << 20) << "round " << r.round();  // both Δs arrived
  }
  EXPECT_NE(cluster.shepherd()->Log().find("128.0 KiB Δ chunks"), std::string::npos) << cluster.Logs(40);
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
