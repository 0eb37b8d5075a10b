// The shepherd and workers as real processes on loopback (no supervisors):
// - 2 workers train the tiny job from config/jobs/tiny.yaml for its DiLoCo rounds; the loss
//   falls, a checkpoint with nanoGPT names is written, Sample answers, and SIGTERM stops
//   every process with exit 0;
// - a stalled worker is left behind at the round deadline (min_workers reached);
// - SIGTERM to the shepherd mid-job checkpoints, and the restarted shepherd resumes the job
//   from there while the workers reconnect by themselves.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fake_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/tensor/safetensors.h"
#include "pcp/v1/admin.grpc.pb.h"
#include "process_harness.h"

namespace pcp::testing {
namespace {

using shepherd::FakeWorker;

std::unique_ptr<v1::Admin::Stub> AdminStub(const std::string& target) {
  return v1::Admin::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
}

void SetDeadline(grpc::ClientContext* context, int seconds) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

// A shepherd process and `workers` worker processes ("w1", ...).
struct Cluster {
  std::optional<TempDir> dir;
  std::string target;
  std::unique_ptr<Process> shepherd;
  std::vector<std::unique_ptr<Process>> workers;
  std::unique_ptr<v1::Admin::Stub> admin;

  absl::Status StartShepherd(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {absl::StrCat("--listen=", target),
                                     absl::StrCat("--state_dir=", dir->path(), "/state"),
                                     "--heartbeat_interval_ms=250",
                                     "--heartbeat_timeout_ms=1500",
                                     "--log_level=debug",
                                     "--metrics_listen="};  // no fixed port: tests run in parallel
    args.insert(args.end(), extra.begin(), extra.end());
    const size_t n = shepherd ? 2 : 1;
    absl::StatusOr<std::unique_ptr<Process>> s = Process::Start(
        {.binary = PCP_SHEPHERD_BINARY, .args = args, .log_path = absl::StrCat(dir->path(), "/shepherd-", n, ".log")});
    if (!s.ok()) return s.status();
    shepherd = *std::move(s);
    absl::StatusOr<std::string> up = shepherd->WaitForLog("listening on " + target, absl::Seconds(60));
    if (!up.ok()) return up.status();
    admin = v1::Admin::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    return absl::OkStatus();
  }
  absl::Status StartWorkers(int n) {
    for (int i = 1; i <= n; ++i) {
      const std::string id = absl::StrCat("w", i);
      absl::StatusOr<std::unique_ptr<Process>> w =
          Process::Start({.binary = PCP_WORKER_BINARY,
                          .args = {absl::StrCat("--shepherd=", target), absl::StrCat("--supervisor_id=", id),
                                   "--threads=1", "--backoff_initial_ms=100", "--backoff_max_ms=1000"},
                          .log_path = absl::StrCat(dir->path(), "/worker-", id, ".log")});
      if (!w.ok()) return w.status();
      workers.push_back(*std::move(w));
    }
    for (auto& w : workers) {
      absl::StatusOr<std::string> joined = w->WaitForLog("joined shepherd", absl::Seconds(60));
      if (!joined.ok()) return joined.status();
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Submit(const std::string& yaml) {
    grpc::ClientContext context;
    SetDeadline(&context, 60);
    v1::SubmitJobRequest submit;
    submit.set_yaml(yaml);
    submit.set_file_name("test.yaml");
    submit.set_base_dir(std::string(PCP_SOURCE_DIR) + "/config/jobs");
    v1::SubmitJobResponse r;
    grpc::Status s = admin->SubmitJob(&context, submit, &r);
    if (!s.ok()) return absl::InternalError(s.error_message());
    return r.job_id();
  }
  // Follows a job; `on_progress` may return false to stop watching early. `after_snapshot`
  // runs once the watch is on (e.g. to start workers, so that no round is missed).
  v1::JobResult Watch(const std::string& job_id, const std::function<bool(const v1::JobProgress&)>& on_progress,
                      const std::function<void()>& after_snapshot = nullptr) {
    grpc::ClientContext context;
    SetDeadline(&context, 600);
    v1::WatchJobRequest watch;
    watch.set_job_id(job_id);
    auto reader = admin->WatchJob(&context, watch);
    v1::JobEvent event;
    v1::JobResult result;
    while (reader->Read(&event)) {
      if (event.has_snapshot() && after_snapshot) after_snapshot();
      if (event.has_progress() && !on_progress(event.progress())) {
        context.TryCancel();
        break;
      }
      if (event.has_result()) result = event.result();
    }
    reader->Finish();
    return result;
  }
};

// The tiny model with `rounds` rounds of τ = `tau`, and extra diloco keys.
std::string SmallJob(int rounds, int tau, const std::string& diloco_extra) {
  return absl::StrCat("name: small\nmodel: {block_size: 32, n_layer: 2, n_head: 2, n_embd: 32}\n",
                      "data: {path: ../../data/tiny_shakespeare.txt}\n",
                      "optimizer: {lr: 1.0e-3, min_lr: 1.0e-4, warmup_iters: 5}\n",
                      "training: {batch_size: 4, eval_iters: 2, seed: 1337}\n",
                      "diloco: {workers: 2, inner_steps: ", tau, ", rounds: ", rounds, diloco_extra, "}\n");
}

TEST(ClusterTest, ShepherdAndTwoWorkersTrainTheTinyJob) {
  absl::StatusOr<TempDir> dir = TempDir::Create("pcp-shepherd-cluster");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const int port = PickFreePort();
  const std::string target = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<std::unique_ptr<Process>> shepherd =
      Process::Start({.binary = PCP_SHEPHERD_BINARY,
                      .args = {absl::StrCat("--listen=", target), absl::StrCat("--state_dir=", dir->path(), "/state"),
                               "--heartbeat_interval_ms=250", "--heartbeat_timeout_ms=1500",
                               "--round_start_grace_ms=20000", "--log_level=debug"},
                      .log_path = dir->path() + "/shepherd.log"});
  ASSERT_TRUE(shepherd.ok()) << shepherd.status();
  ASSERT_TRUE((*shepherd)->WaitForLog("listening on " + target, absl::Seconds(60)).ok()) << (*shepherd)->LogTail();

  auto admin = AdminStub(target);
  const std::string jobs_dir = std::string(PCP_SOURCE_DIR) + "/config/jobs";
  absl::StatusOr<std::string> yaml = ReadFile(jobs_dir + "/tiny.yaml");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  v1::SubmitJobRequest submit;
  submit.set_yaml(*yaml);
  submit.set_file_name("tiny.yaml");
  submit.set_base_dir(jobs_dir);
  v1::SubmitJobResponse submitted;
  {
    grpc::ClientContext context;
    SetDeadline(&context, 60);
    grpc::Status s = admin->SubmitJob(&context, submit, &submitted);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(submitted.job_id(), "job-0001");
  EXPECT_EQ(submitted.name(), "tiny");

  // Follow the job to its end.
  // Progress comes after each round, and again when its validation loss is in: keep the
  // latest per round.
  std::map<uint64_t, v1::JobProgress> by_round;
  // The per-round records the watch carries (a round's record comes again with its val loss).
  std::map<uint64_t, v1::RoundRecord> records;
  v1::JobResult result;
  bool saw_snapshot = false, saw_checkpoint = false;
  std::vector<std::unique_ptr<Process>> workers;
  const auto t0 = std::chrono::steady_clock::now();
  {
    grpc::ClientContext context;
    SetDeadline(&context, 600);
    v1::WatchJobRequest watch;
    watch.set_job_id(submitted.job_id());
    auto reader = admin->WatchJob(&context, watch);
    v1::JobEvent event;
    // Workers start once the watch is on, so it sees every round.
    ASSERT_TRUE(reader->Read(&event));
    saw_snapshot = event.has_snapshot();
    for (const char* id : {"w1", "w2"}) {
      absl::StatusOr<std::unique_ptr<Process>> w =
          Process::Start({.binary = PCP_WORKER_BINARY,
                          .args = {absl::StrCat("--shepherd=", target), absl::StrCat("--supervisor_id=", id),
                                   "--threads=1", absl::StrCat("--cache_dir=", dir->path(), "/cache-", id)},
                          .log_path = absl::StrCat(dir->path(), "/worker-", id, ".log")});
      ASSERT_TRUE(w.ok()) << w.status();
      workers.push_back(*std::move(w));
    }
    for (auto& w : workers) {
      ASSERT_TRUE(w->WaitForLog("joined shepherd", absl::Seconds(60)).ok()) << w->LogTail();
    }
    while (reader->Read(&event)) {
      if (event.has_progress()) {
        by_round[event.progress().round()] = event.progress();
        std::printf(
            "round %llu/%llu: train loss %.4f, val loss %s, %u workers, %.2f s\n",
            (unsigned long long)event.progress().round(), (unsigned long long)event.progress().total_rounds(),
            event.progress().train_loss(),
            event.progress().has_val_loss()
                ? absl::StrCat(event.progress().val_loss(), " (round ", event.progress().val_round(), ")").c_str()
                : "-",
            event.progress().workers_in_last_round(), event.progress().round_time_s());
      }
      if (event.has_checkpoint()) saw_checkpoint = true;
      if (event.has_round_record()) records[event.round_record().round()] = event.round_record();
      if (event.has_result()) result = event.result();
    }
    grpc::Status s = reader->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << (*shepherd)->LogTail(60);
  }
  std::vector<v1::JobProgress> rounds;
  for (auto& [r, p] : by_round) rounds.push_back(p);
  std::printf("job finished in %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_TRUE(saw_snapshot);
  EXPECT_TRUE(saw_checkpoint);
  ASSERT_EQ(result.state(), v1::JOB_STATE_COMPLETED) << result.reason() << "\n" << (*shepherd)->LogTail(60);
  ASSERT_EQ(rounds.size(), 5u) << (*shepherd)->LogTail(60);
  EXPECT_EQ(result.rounds_completed(), 5u);
  for (const v1::JobProgress& p : rounds) EXPECT_EQ(p.workers_in_last_round(), 2u);
  // The loss falls: the last round's training loss is well below the first's (ln 65 = 4.17
  // at initialisation), and the final validation loss below the initial entropy.
  EXPECT_LT(rounds.back().train_loss(), rounds.front().train_loss() - 0.3);
  ASSERT_TRUE(result.has_final_val_loss());
  EXPECT_LT(result.final_val_loss(), 3.9);
  EXPECT_EQ(result.tokens_processed(), 5u * 2u * 10u * 4u * 32u);

  // The job's history holds every round, exactly as the watch delivered it.
  {
    grpc::ClientContext context;
    SetDeadline(&context, 60);
    v1::GetJobHistoryRequest request;
    request.set_job_id(submitted.job_id());
    v1::GetJobHistoryResponse history;
    grpc::Status s = admin->GetJobHistory(&context, request, &history);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(history.records_size(), 5);
    EXPECT_EQ(history.next_after_round(), 0u);
    ASSERT_EQ(records.size(), 5u);
    for (const v1::RoundRecord& r : history.records()) {
      EXPECT_EQ(r.SerializeAsString(), records[r.round()].SerializeAsString()) << r.round();
      EXPECT_EQ(r.participants_size(), 2) << r.round();
      EXPECT_EQ(r.tokens(), 2u * 10u * 4u * 32u);
      EXPECT_DOUBLE_EQ(r.train_loss(), by_round[r.round()].train_loss()) << r.round();
    }
    EXPECT_DOUBLE_EQ(history.records(4).val_loss(), result.final_val_loss());
  }

  // The checkpoint: nanoGPT names, readable as safetensors.
  ASSERT_FALSE(result.checkpoint_path().empty());
  absl::StatusOr<SafetensorsContents> ckpt = ReadSafetensorsFile(result.checkpoint_path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_NE(ckpt->Find("transformer.wte.weight"), nullptr);
  EXPECT_NE(ckpt->Find("transformer.h.1.mlp.c_proj.weight"), nullptr);
  EXPECT_NE(ckpt->Find("lm_head.weight"), nullptr);

  // Text from the final parameters.
  {
    grpc::ClientContext context;
    SetDeadline(&context, 120);
    v1::SampleRequest request;
    request.set_job_id(submitted.job_id());
    request.set_prompt("ROMEO:");
    request.set_max_new_tokens(30);
    request.set_seed(7);
    v1::SampleResponse sample;
    grpc::Status s = admin->Sample(&context, request, &sample);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(sample.tokens_generated(), 30u);
    EXPECT_EQ(sample.text().size(), 30u);
    EXPECT_TRUE(sample.final_parameters());
    std::printf("sample: ROMEO:%s\n", sample.text().c_str());
  }

  // Workers and shepherd stop cleanly on SIGTERM.
  for (auto& w : workers) {
    absl::StatusOr<int> status = w->Stop(absl::Seconds(20));
    ASSERT_TRUE(status.ok()) << status.status();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << DescribeWaitStatus(*status) << w->LogTail();
  }
  absl::StatusOr<int> status = (*shepherd)->Stop(absl::Seconds(20));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << DescribeWaitStatus(*status);
}

}  // namespace
}  // namespace pcp::testing

namespace pcp::testing {
namespace {

TEST(ClusterTest, StalledWorkerIsLeftBehindAtTheRoundDeadline) {
  Cluster c;
  absl::StatusOr<TempDir> dir = TempDir::Create("pcp-shepherd-deadline");
  ASSERT_TRUE(dir.ok());
  c.dir.emplace(*std::move(dir));
  c.target = absl::StrCat("127.0.0.1:", PickFreePort());
  // Rounds wait up to 30 s for both workers, so each round starts with both.
  ASSERT_TRUE(c.StartShepherd({"--round_start_grace_ms=30000"}).ok()) << c.shepherd->LogTail();
  ASSERT_TRUE(c.StartWorkers(1).ok());
  absl::StatusOr<std::string> job =
      c.Submit(SmallJob(3, 5, ", min_workers: 1, round_deadline_s: 2, checkpoint_every: 10"));
  ASSERT_TRUE(job.ok()) << job.status();

  auto channel = grpc::CreateChannel(c.target, grpc::InsecureChannelCredentials());
  auto stub = v1::Training::NewStub(channel);
  FakeWorker slow(stub.get(), "slow");
  ASSERT_TRUE(slow.ExpectJoinAck());
  slow.StartHeartbeats(std::chrono::milliseconds(200));  // alive, but never reports
  v1::Assignment assignment;
  ASSERT_EQ(slow.RunToStartRound(&assignment), 1u);
  // The round closes at its deadline without the slow worker, which is told so.
  v1::ShepherdMessage m;
  ASSERT_TRUE(slow.ReadNext(&m));
  ASSERT_TRUE(m.has_cancel()) << m.DebugString();
  EXPECT_EQ(m.cancel().round(), 1u);
  EXPECT_THAT(m.cancel().reason(), ::testing::HasSubstr("closed without you"));
  ASSERT_EQ(slow.NextStartRound(), 2u);  // and gets the next round's θ

  std::map<uint64_t, v1::JobProgress> rounds;
  v1::JobResult result = c.Watch(*job, [&](const v1::JobProgress& p) {
    rounds[p.round()] = p;
    return true;
  });
  EXPECT_EQ(result.state(), v1::JOB_STATE_COMPLETED) << c.shepherd->LogTail(40);
  // Rounds 2 and 3. Round 1 ended before the watch began, but its validation loss, measured
  // in the background, may still arrive as a progress event for round 1.
  rounds.erase(1);
  ASSERT_EQ(rounds.size(), 2u);
  for (const auto& [r, p] : rounds) {
    EXPECT_EQ(p.workers_in_last_round(), 1u);
    EXPECT_GE(p.round_time_s(), 1.9);
  }
  EXPECT_TRUE(c.shepherd->WaitForLog("closes at its deadline without worker slow", absl::Seconds(1)).ok());
}

TEST(ClusterTest, SigtermCheckpointsAndTheRestartedShepherdResumes) {
  Cluster c;
  absl::StatusOr<TempDir> dir = TempDir::Create("pcp-shepherd-resume");
  ASSERT_TRUE(dir.ok());
  c.dir.emplace(*std::move(dir));
  c.target = absl::StrCat("127.0.0.1:", PickFreePort());
  ASSERT_TRUE(c.StartShepherd({"--round_start_grace_ms=20000"}).ok());
  // Checkpoints only at the end, so the one at SIGTERM is the one it resumes from.
  absl::StatusOr<std::string> job = c.Submit(SmallJob(40, 20, ", checkpoint_every: 1000, eval_every: 1000"));
  ASSERT_TRUE(job.ok()) << job.status();
  uint64_t seen = 0;
  c.Watch(
      *job,
      [&](const v1::JobProgress& p) {
        seen = p.round();
        return p.round() < 3;
      },
      [&] { ASSERT_TRUE(c.StartWorkers(2).ok()); });
  ASSERT_GE(seen, 3u);
  ASSERT_TRUE(c.shepherd->Signal(SIGTERM).ok());
  absl::StatusOr<int> status = c.shepherd->Wait(absl::Seconds(30));
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << DescribeWaitStatus(*status);
  absl::StatusOr<std::string> saved =
      c.shepherd->WaitForLogRegex("checkpoint of round [0-9]+ written", absl::Seconds(1));
  ASSERT_TRUE(saved.ok()) << c.shepherd->LogTail(30);
  const std::string round = saved->substr(saved->find("checkpoint of round ") + 20);
  const std::string round_number = round.substr(0, round.find(' '));
  std::printf("SIGTERM after round %llu; checkpoint: %s\n", (unsigned long long)seen, saved->c_str());

  ASSERT_TRUE(c.StartShepherd().ok());
  ASSERT_TRUE(c.shepherd->WaitForLog("resuming from the checkpoint of round " + round_number, absl::Seconds(60)).ok())
      << c.shepherd->LogTail(30);
  v1::JobResult result = c.Watch(*job, [](const v1::JobProgress&) { return true; });
  EXPECT_EQ(result.state(), v1::JOB_STATE_COMPLETED) << c.shepherd->LogTail(30);
  EXPECT_EQ(result.rounds_completed(), 40u);
  for (auto& w : c.workers) {
    EXPECT_TRUE(w->WaitForLog("AdamW state kept", absl::Seconds(1)).ok()) << w->LogTail();
  }
}

}  // namespace
}  // namespace pcp::testing
