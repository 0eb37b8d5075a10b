// Streaming DiLoCo (diloco.streaming) together with streaming aggregation (diloco.aggregation:
// streaming) on a real cluster (processes on loopback).
//
// 1. The same job (P = 4 fragments, τ_o = 1, same seeds, 2 workers) once with each Δ summed
//    as it arrives and once with the round's Δs kept whole: θ and the outer momentum of the
//    final checkpoints are bit-identical. Why exactly, not within a tolerance: each round has
//    4 steps × 8 sequences × 32 tokens = 1024 = 2^10 tokens per worker, so both workers weigh
//    W = 2^10. Streamed, the sum is 0 + W·d1 (exact) + W·d2 (one f32 rounding, commutative, so
//    arrival order does not matter), divided by 2W in f64 (exact: a power of two) and stored
//    as f32: round_f32(d1 + d2) / 2. Buffered, 0.5·d1 + 0.5·d2 is exact in f64 (two f32
//    values) and is then rounded to f32: round_f32((d1 + d2) / 2), the same number (barring
//    subnormals). Both then take the same fragment outer step, so nothing differs. With
//    weights that are not powers of two the streamed sum rounds twice and differs by about one
//    f32 ulp of the Δ (2^-24 relative) in a round, and the workers' training amplifies that:
//    with 5-step rounds (1280 tokens) the same comparison found θ differing by up to 6e-4
//    after 12 rounds, so no useful fixed tolerance follows from the summation order alone.
// 2. Screening inside fragment rounds, with a third worker started with --fault_delta: its
//    Δ × 1000 is rejected on its declared norm (reason norm), then a Δ × 1.1 declaring the
//    norm of Δ is caught mid-stream (declared_norm) after some chunks were summed, so that
//    round is rolled back: counted once, its fragment and momentum kept, the honest workers'
//    data streams moved on (the skipped round is not redone), every replica still matches θ
//    (no resync) and the job completes without the liar (quarantined after 2 refusals).
// 3. A worker whose every Δ is refused (not finite, on its header): each fragment round is
//    skipped, and after max_rollbacks in a row the job fails, saying why.
#include <cmath>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "pcp/tensor/safetensors.h"
#include "pcp/testing/metrics_scrape.h"

namespace pcp::testing {
namespace {

using FinishedJob = ClusterHarness::FinishedJob;

// P = 4 fragments of H = 16 inner steps: 4 steps a round, 1024 tokens per worker.
constexpr char kStreamingDiloco[] = "  streaming: {fragments: 4, overlap_steps: 1}\n";

E2eJob StreamingJob(const std::string& name, int rounds, int workers, const std::string& aggregation) {
  return E2eJob{.name = name,
                .rounds = rounds,
                .inner_steps = 16,
                .workers = workers,
                .checkpoint_every = 1,
                .diloco_yaml = absl::StrCat(kStreamingDiloco, "  aggregation: ", aggregation, "\n")};
}

std::string CheckpointDir(ClusterHarness& cluster, const std::string& job_id, const std::string& folder = "") {
  const std::string base = absl::StrCat(cluster.state_dir(), "/jobs/", job_id, "/checkpoints/");
  if (!folder.empty()) return base + folder;
  absl::StatusOr<std::string> latest = ReadFile(base + "LATEST");
  return latest.ok() ? base + std::string(absl::StripAsciiWhitespace(*latest)) : base + "(no LATEST)";
}

// Tensors of two safetensors files that are not bit-identical (name: how many elements differ
// and by how much at most), or what could not be read.
std::vector<std::string> Differences(const std::string& a_path, const std::string& b_path) {
  absl::StatusOr<SafetensorsContents> a = ReadSafetensorsFile(a_path);
  absl::StatusOr<SafetensorsContents> b = ReadSafetensorsFile(b_path);
  if (!a.ok() || !b.ok()) return {absl::StrCat(a.status().ToString(), " / ", b.status().ToString())};
  if (a->tensors.empty() || a->tensors.size() != b->tensors.size()) {
    return {absl::StrCat(a->tensors.size(), " tensors against ", b->tensors.size())};
  }
  std::vector<std::string> out;
  for (const NamedTensor& t : a->tensors) {
    const Tensor* u = b->Find(t.name);
    if (u == nullptr || u->shape() != t.tensor.shape() || t.tensor.dtype() != DType::kF32) {
      out.push_back(t.name + ": missing or another shape");
      continue;
    }
    const float* x = t.tensor.data<float>();
    const float* y = u->data<float>();
    int64_t differ = 0;
    double worst = 0;
    for (int64_t i = 0; i < t.tensor.num_elements(); ++i) {
      if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0) {
        ++differ;
        worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - y[i]));
      }
    }
    if (differ > 0) out.push_back(absl::StrCat(t.name, ": ", differ, " elements differ, by up to ", worst));
  }
  return out;
}

// The sampler cursor of each slot in a checkpoint's state.json, by supervisor id.
std::map<std::string, int64_t> SlotCursors(const std::string& checkpoint_dir) {
  std::map<std::string, int64_t> cursors;
  absl::StatusOr<std::string> text = ReadFile(checkpoint_dir + "/state.json");
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return cursors;
  absl::StatusOr<Json> doc = Json::Parse(*text);
  EXPECT_TRUE(doc.ok()) << doc.status();
  const Json* slots = doc.ok() ? doc->Find("slots") : nullptr;
  if (slots == nullptr || !slots->is_array()) return cursors;
  for (const Json& slot : slots->array_items()) {
    const Json* id = slot.Find("supervisor_id");
    const Json* cursor = slot.Find("sampler_cursor");
    if (id == nullptr || cursor == nullptr || !id->is_string() || !cursor->is_string()) continue;
    cursors[id->string_value()] = std::stoll(cursor->string_value());
  }
  return cursors;
}

TEST(StreamingAggregationTest, FragmentRoundsSummedOnArrivalMatchBufferedBitForBit) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();

  // Both workers in every round (min_workers 2: no round starts or closes without either).
  E2eJob streamed_job = StreamingJob("sdiloco_streamed", 12, 2, "streaming");
  E2eJob buffered_job = StreamingJob("sdiloco_buffered", 12, 2, "buffered");
  streamed_job.min_workers = buffered_job.min_workers = 2;
  absl::StatusOr<FinishedJob> streamed = cluster.RunJob(streamed_job, absl::Minutes(5));
  ASSERT_TRUE(streamed.ok()) << streamed.status() << cluster.Logs();
  absl::StatusOr<FinishedJob> buffered = cluster.RunJob(buffered_job, absl::Minutes(5));
  ASSERT_TRUE(buffered.ok()) << buffered.status() << cluster.Logs();
  for (const FinishedJob* j : {&*streamed, &*buffered}) {
    ASSERT_EQ(j->job.state(), v1::JOB_STATE_COMPLETED) << j->job.name() << ": " << j->job.reason() << cluster.Logs(60);
    ASSERT_EQ(j->history.size(), 12u) << j->job.name();
    // Bit-equality needs the same participants (and so the same weights) in every round.
    for (const v1::RoundRecord& r : j->history) {
      ASSERT_EQ(r.participants_size(), 2) << j->job.name() << " round " << r.round() << cluster.Logs(60);
    }
    EXPECT_EQ(j->job.progress().deltas_refused(), 0u) << j->job.name();
    EXPECT_EQ(j->job.progress().rounds_rolled_back(), 0u) << j->job.name();
  }
  const std::string log = cluster.shepherd()->Log();
  EXPECT_TRUE(absl::StrContains(log, absl::StrCat("job ", streamed->job.job_id(), ": Δ aggregation streaming"))) << log;
  EXPECT_TRUE(absl::StrContains(log, absl::StrCat("job ", buffered->job.job_id(), ": Δ aggregation buffered"))) << log;
  EXPECT_TRUE(absl::StrContains(log, "streaming DiLoCo: 4 fragments")) << log;

  const std::string a = CheckpointDir(cluster, streamed->job.job_id());
  const std::string b = CheckpointDir(cluster, buffered->job.job_id());
  EXPECT_TRUE(absl::EndsWith(a, "round-000012")) << a;
  for (const char* file : {"/ckpt.safetensors", "/outer.safetensors"}) {
    std::vector<std::string> differ = Differences(a + file, b + file);
    EXPECT_TRUE(differ.empty()) << file << ":\n" << absl::StrJoin(differ, "\n");
  }
  EXPECT_EQ(streamed->job.progress().train_loss(), buffered->job.progress().train_loss());
  std::printf("streamed: val loss %.6f, buffered: val loss %.6f\n", streamed->job.progress().val_loss(),
              buffered->job.progress().val_loss());
  EXPECT_LT(streamed->job.progress().val_loss(), 4.0);  // ln 65 = 4.17: it learned

  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(SampleValue(*page, "pcp_shepherd_replica_resyncs_total").value_or(-1), 0) << *page;
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

TEST(StreamingAggregationTest, FragmentRoundsRefuseARejectedDeltaAndSkipTheRoundALiarTouched) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartShepherd().ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.StartSupervisors(2).ok()) << cluster.Logs();
  // node-3, one fault per Δ in turn: honest (round 1), × 1000 (2), honest (3), × 1.1 declaring
  // the norm of Δ (4).
  ASSERT_TRUE(cluster.StartSupervisors(1, "cpu", "--fault_delta=none/scale:1000/none/lie:1.1").ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.WaitForWorkers(3, absl::Seconds(120)).ok()) << cluster.Logs();
  E2eJob spec = StreamingJob("sdiloco_screening", 5, 3, "streaming");
  absl::StrAppend(&spec.diloco_yaml, "  screening: {quarantine_after: 2}\n");
  absl::StatusOr<FinishedJob> done = cluster.RunJob(spec, absl::Minutes(8));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  const v1::Job& job = done->job;
  ASSERT_EQ(job.state(), v1::JOB_STATE_COMPLETED) << job.reason() << cluster.Logs(60);
  EXPECT_EQ(job.progress().round(), 5u);
  ASSERT_TRUE(job.progress().has_val_loss());
  EXPECT_TRUE(std::isfinite(job.progress().val_loss()));
  EXPECT_LT(job.progress().val_loss(), 4.2);  // it learned, not blew up

  const std::string log = cluster.shepherd()->Log();
  const v1::JobProgress& p = job.progress();
  EXPECT_EQ(p.deltas_refused(), 2u) << log;
  // One rollback for the one round the liar touched (it was counted twice, the second time as
  // "every Δ of the round was refused", though the honest workers' Δs had been accepted).
  EXPECT_EQ(p.rounds_rolled_back(), 1u) << log;
  EXPECT_FALSE(absl::StrContains(log, "every Δ of the round was refused")) << log;
  const std::regex rolled_back(
      R"(round (\d+) rolled back \(a streamed Δ broke its header after some of its chunks were summed\): its fragment and momentum stay as they were; 1 of 3 in a row)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, rolled_back)) << log;
  // Round 4 normally; 5 if node-3 was still compiling when round 1 started without it (its
  // faults go Δ by Δ), which leaves no round after the skipped one.
  const int lie_round = std::stoi(m[1].str());
  ASSERT_TRUE(lie_round == 4 || lie_round == 5) << log;
  ASSERT_EQ(p.screened_workers_size(), 1);
  EXPECT_EQ(p.screened_workers(0).supervisor_id(), "node-3");
  EXPECT_EQ(p.screened_workers(0).last_reason(), "declared_norm");
  EXPECT_TRUE(p.screened_workers(0).quarantined());
  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  auto refused = [&](const std::string& reason) {
    return SampleValue(*page, "pcp_shepherd_deltas_refused_total", {{"reason", reason}}).value_or(-1);
  };
  EXPECT_EQ(refused("norm"), 1) << *page;
  EXPECT_EQ(refused("declared_norm"), 1) << *page;
  // The skipped round's fragment went out unchanged and the workers trained on: every replica
  // still matched the shepherd's θ.
  EXPECT_EQ(SampleValue(*page, "pcp_shepherd_replica_resyncs_total").value_or(-1), 0) << *page;

  // The records: node-3's × 1000 is refused, not a participant; the skipped round has none;
  // a round after it ran on the honest two.
  ASSERT_EQ(done->history.size(), 5u);
  int norm_refusals = 0;
  for (const v1::RoundRecord& r : done->history) {
    SCOPED_TRACE(r.DebugString());
    if (r.round() == static_cast<uint64_t>(lie_round)) {
      EXPECT_EQ(r.participants_size(), 0);
    } else if (r.refused_size() > 0 || r.round() > static_cast<uint64_t>(lie_round)) {
      EXPECT_EQ(r.participants_size(), 2);
      norm_refusals += r.refused_size();
    }
  }
  EXPECT_EQ(norm_refusals, 1);

  // The checkpoint of the skipped round: the honest workers trained its 4 steps too, and their
  // next round (sent ahead) went on from there, so their slots' cursors stand past it.
  std::map<std::string, int64_t> cursors =
      SlotCursors(CheckpointDir(cluster, job.job_id(), absl::StrFormat("round-%06d", lie_round)));
  EXPECT_EQ(cursors["node-1"], 4 * lie_round);
  EXPECT_EQ(cursors["node-2"], 4 * lie_round);
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

TEST(StreamingAggregationTest, FragmentRoundsWithEveryDeltaRefusedAreSkippedAndFailTheJob) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartShepherd().ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.StartSupervisors(1, "cpu", "--fault_delta=nan").ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.WaitForWorkers(1, absl::Seconds(120)).ok()) << cluster.Logs();
  E2eJob spec = StreamingJob("sdiloco_all_refused", 6, 1, "streaming");
  absl::StrAppend(&spec.diloco_yaml, "  screening: {quarantine_after: 0, max_rollbacks: 2}\n");
  absl::StatusOr<FinishedJob> done = cluster.RunJob(spec, absl::Minutes(5));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  const v1::Job& job = done->job;
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED) << job.ShortDebugString();
  EXPECT_TRUE(absl::StrContains(job.reason(), "2 rounds in a row rolled back")) << job.reason();
  EXPECT_TRUE(absl::StrContains(job.reason(), "the last, round 2: every Δ of the round was refused")) << job.reason();
  EXPECT_EQ(job.progress().rounds_rolled_back(), 2u);  // (the one that failed it was left out)
  EXPECT_EQ(job.progress().deltas_refused(), 2u);
  // Round 1 was closed as skipped (the worker had moved on to round 2): nothing went into θ.
  EXPECT_EQ(job.progress().round(), 1u);
  ASSERT_EQ(done->history.size(), 1u);
  EXPECT_EQ(done->history[0].participants_size(), 0) << done->history[0].DebugString();
  ASSERT_EQ(done->history[0].refused_size(), 1) << done->history[0].DebugString();
  EXPECT_EQ(done->history[0].refused(0).reason(), "non_finite");
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
