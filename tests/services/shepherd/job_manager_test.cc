// Jobs: validation at submit, the state machine (queued -> running -> completed / failed /
// cancelled), watchers, and persistence across a "restart" (a second JobManager on the same
// state directory).
#include "pcp/shepherd/job_manager.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "process_harness.h"

namespace pcp::shepherd {
namespace {

using ::testing::HasSubstr;

std::string JobsDir() { return std::string(PCP_SOURCE_DIR) + "/config/jobs"; }

v1::SubmitJobRequest TinyRequest() {
  v1::SubmitJobRequest r;
  r.set_yaml(*ReadFile(JobsDir() + "/tiny.yaml"));
  r.set_file_name("tiny.yaml");
  r.set_base_dir(JobsDir());
  return r;
}

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcp-job-manager");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(*std::move(dir));
    Reopen();
  }
  void Reopen() {
    jobs_.reset();
    absl::StatusOr<std::unique_ptr<JobManager>> m = JobManager::Open(dir_->path(), Policy());
    ASSERT_TRUE(m.ok()) << m.status();
    jobs_ = *std::move(m);
  }
  // The repository's data and this test's folder are the data roots.
  AdmissionPolicy Policy() const {
    AdmissionPolicy p = policy_;
    p.data_roots = *DataRoots::Confined({DefaultDataRoot(), dir_->path()});
    return p;
  }
  std::optional<testing::TempDir> dir_;
  AdmissionPolicy policy_;
  std::unique_ptr<JobManager> jobs_;
};

TEST_F(JobManagerTest, SubmitValidatesYamlAndData) {
  v1::SubmitJobRequest bad;
  bad.set_yaml("training:\n  max_iters: -3\ndata:\n  path: x\n");
  absl::StatusOr<v1::SubmitJobResponse> r = jobs_->Submit(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("<submitted job>:2:14: training.max_iters"));

  v1::SubmitJobRequest relative = TinyRequest();
  relative.set_base_dir("config/jobs");
  EXPECT_THAT(std::string(jobs_->Submit(relative).status().message()), HasSubstr("base_dir must be an absolute path"));

  v1::SubmitJobRequest short_data = TinyRequest();
  const std::string tiny_text = dir_->path() + "/short.txt";
  ASSERT_TRUE(WriteFileAtomic(tiny_text, "abc").ok());
  short_data.set_yaml("data:\n  path: " + tiny_text + "\n");
  absl::Status s = jobs_->Submit(short_data).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("tiny.yaml: data"));
  EXPECT_TRUE(jobs_->List({}).empty());
}

// A job is parsed and checked once: the coordinator receives SubmitJob's validated job (its
// vocabulary resolved from the data, its memory estimated); a job stored by an earlier process
// carries none and is validated again when it starts (the budgets may have changed).
TEST_F(JobManagerTest, StartNextHandsOverTheJobSubmitValidated) {
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  std::optional<RunnableJob> first = jobs_->StartNext();
  ASSERT_TRUE(first.has_value());
  ASSERT_NE(first->validated, nullptr);
  EXPECT_GT(first->validated->config.model.vocab_size, 0);  // tiny.yaml leaves it to the data
  EXPECT_GT(first->validated->memory.parameters, 0);
  EXPECT_GT(first->validated->memory.worker_bytes, 0);
  EXPECT_EQ(first->validated->memory.job_name, first->validated->config.name);

  Reopen();  // job-0001 was running: it resumes; job-0002 is still queued
  std::optional<RunnableJob> resumed = jobs_->StartNext();
  ASSERT_TRUE(resumed.has_value());
  EXPECT_TRUE(resumed->resumed);
  EXPECT_EQ(resumed->validated, nullptr);
  jobs_->Finish(resumed->id, v1::JOB_STATE_COMPLETED, "");
  std::optional<RunnableJob> second = jobs_->StartNext();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->id, "job-0002");
  EXPECT_EQ(second->validated, nullptr);
}

TEST_F(JobManagerTest, ValidateJobChecksTheBudgetWithTheDataVocabulary) {
  const std::string yaml = *ReadFile(JobsDir() + "/tiny.yaml");
  absl::StatusOr<ValidatedJob> v = ValidateJob(yaml, "tiny.yaml", JobsDir(), Policy().data_roots, MemoryBudgets{});
  ASSERT_TRUE(v.ok()) << v.status();
  // A worker budget one byte short of the estimate made with the data's vocabulary: refused,
  // although the estimate before the data was read (vocab_size 0 counts as 1) is smaller.
  MemoryBudgets tight{.worker_bytes = v->memory.worker_bytes - 1};
  absl::Status s = ValidateJob(yaml, "tiny.yaml", JobsDir(), Policy().data_roots, tight).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("worker memory budget"));
  std::optional<Dataset> data;
  ASSERT_TRUE(ValidateJob(yaml, "tiny.yaml", JobsDir(), Policy().data_roots, MemoryBudgets{}, &data).ok());
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->vocab_size(), v->config.model.vocab_size);
}

TEST_F(JobManagerTest, FifoStateMachineAndReasons) {
  int notified = 0;
  jobs_->SetListener([&] { ++notified; });
  absl::StatusOr<v1::SubmitJobResponse> a = jobs_->Submit(TinyRequest());
  absl::StatusOr<v1::SubmitJobResponse> b = jobs_->Submit(TinyRequest());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->job_id(), "job-0001");
  EXPECT_EQ(b->job_id(), "job-0002");
  EXPECT_EQ(a->queue_position(), 0u);
  EXPECT_EQ(b->queue_position(), 1u);
  EXPECT_EQ(notified, 2);

  std::optional<RunnableJob> first = jobs_->StartNext();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->id, "job-0001");
  EXPECT_FALSE(first->resumed);
  EXPECT_TRUE(jobs_->IsRunning("job-0001"));
  EXPECT_EQ(jobs_->Counts().running_id, "job-0001");
  EXPECT_EQ(jobs_->Counts().queued, 1u);

  // Watch the running job: progress, then the end.
  std::vector<v1::JobEvent> events;
  absl::StatusOr<JobManager::WatchStart> watch =
      jobs_->Watch("job-0001", [&](const v1::JobEvent& e) { events.push_back(e); });
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(watch->snapshot.state(), v1::JOB_STATE_RUNNING);
  EXPECT_FALSE(watch->snapshot.effective_yaml().empty());
  v1::JobProgress p;
  p.set_round(1);
  p.set_total_rounds(5);
  p.set_train_loss(3.5);
  jobs_->ReportProgress("job-0001", p);
  jobs_->ReportCheckpoint("job-0001", 1, "/x/ckpt.safetensors");
  EXPECT_TRUE(jobs_->Finish("job-0001", v1::JOB_STATE_COMPLETED, ""));
  EXPECT_FALSE(jobs_->Finish("job-0001", v1::JOB_STATE_FAILED, "late"));  // first end wins
  ASSERT_EQ(events.size(), 4u);
  EXPECT_TRUE(events[0].has_progress());
  EXPECT_TRUE(events[1].has_checkpoint());
  EXPECT_EQ(events[2].state_change().to(), v1::JOB_STATE_COMPLETED);
  ASSERT_TRUE(events[3].has_result());
  EXPECT_EQ(events[3].result().rounds_completed(), 1u);
  EXPECT_EQ(events[3].result().checkpoint_path(), "/x/ckpt.safetensors");
  EXPECT_DOUBLE_EQ(events[3].result().final_train_loss(), 3.5);

  // Cancelling a finished job is refused; a queued one is cancelled with its reason.
  absl::Status again = jobs_->Cancel("job-0001", "").status();
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(again.message()), HasSubstr("already finished (completed)"));
  absl::StatusOr<v1::Job> cancelled = jobs_->Cancel("job-0002", "by alice: wrong lr");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cancelled->reason(), "by alice: wrong lr");
  EXPECT_FALSE(jobs_->StartNext().has_value());
  EXPECT_EQ(jobs_->Cancel("job-0042", "").status().code(), absl::StatusCode::kNotFound);

  // Newest first; filters by state.
  std::vector<v1::Job> all = jobs_->List({});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].job_id(), "job-0002");
  EXPECT_TRUE(all[0].effective_yaml().empty());
  v1::ListJobsRequest only;
  only.add_states(v1::JOB_STATE_COMPLETED);
  ASSERT_EQ(jobs_->List(only).size(), 1u);
  EXPECT_EQ(jobs_->LatestFinishedJob(), "job-0002");

  // Watching a finished job gives its result at once.
  absl::StatusOr<JobManager::WatchStart> done = jobs_->Watch("job-0001", [](const v1::JobEvent&) {});
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->watch_id, 0);
  ASSERT_TRUE(done->result.has_value());
  EXPECT_EQ(done->result->state(), v1::JOB_STATE_COMPLETED);
}

TEST_F(JobManagerTest, JobsSurviveARestartAndTheRunningOneResumes) {
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(jobs_->StartNext().has_value());
  v1::JobProgress p;
  p.set_round(3);
  p.set_val_loss(2.5);
  jobs_->ReportProgress("job-0001", p);
  ASSERT_TRUE(jobs_->Cancel("job-0003", "nope").ok());

  Reopen();
  absl::StatusOr<v1::Job> running = jobs_->Get("job-0001");
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(running->progress().round(), 3u);
  EXPECT_DOUBLE_EQ(running->progress().val_loss(), 2.5);
  EXPECT_GT(running->started_unix_ms(), 0);
  EXPECT_EQ(jobs_->Get("job-0003")->reason(), "nope");
  // The running job comes back first, marked resumed; then the queue in order.
  std::optional<RunnableJob> next = jobs_->StartNext();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, "job-0001");
  EXPECT_TRUE(next->resumed);
  EXPECT_EQ(next->file_name, "tiny.yaml");
  EXPECT_EQ(next->base_dir, JobsDir());
  ASSERT_TRUE(jobs_->Finish("job-0001", v1::JOB_STATE_FAILED, "disk full"));
  next = jobs_->StartNext();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, "job-0002");
  // New ids continue after the highest one on disk.
  absl::StatusOr<v1::SubmitJobResponse> fourth = jobs_->Submit(TinyRequest());
  ASSERT_TRUE(fourth.ok());
  EXPECT_EQ(fourth->job_id(), "job-0004");
  Reopen();
  EXPECT_EQ(jobs_->Get("job-0001")->reason(), "disk full");
  EXPECT_EQ(jobs_->Get("job-0001")->state(), v1::JOB_STATE_FAILED);
}

TEST_F(JobManagerTest, AnUnreadableJobFolderIsSkipped) {
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(WriteFileAtomic(dir_->path() + "/jobs/job-0001/state.pb", "\xff\xff not a proto").ok());
  ASSERT_TRUE(MakeDirs(dir_->path() + "/jobs/job-0007").ok());  // no state file: an interrupted submit
  Reopen();
  EXPECT_TRUE(jobs_->List({}).empty());
  absl::StatusOr<v1::SubmitJobResponse> r = jobs_->Submit(TinyRequest());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->job_id(), "job-0008");  // never reuses a folder's number
}

// A job whose start keeps taking the shepherd down (each "restart" here: a new JobManager
// on the same folder without Finish) fails after max_start_attempts instead of looping; a
// completed round resets the count.
TEST_F(JobManagerTest, AJobThatKeepsDyingAtStartFailsInsteadOfLooping) {
  policy_.max_start_attempts = 3;
  Reopen();
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  for (uint32_t attempt = 1; attempt <= 3; ++attempt) {
    std::optional<RunnableJob> next = jobs_->StartNext();
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(next->id, "job-0001");
    EXPECT_EQ(jobs_->Get("job-0001")->start_attempts(), attempt);
    Reopen();  // the process died while starting it
  }
  std::optional<RunnableJob> next = jobs_->StartNext();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, "job-0002");  // job-0001 failed instead
  absl::StatusOr<v1::Job> failed = jobs_->Get("job-0001");
  EXPECT_EQ(failed->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(failed->reason(), HasSubstr("started 3 times without completing a round"));

  // job-0002 completes a round after its first start: its count starts again.
  v1::JobProgress p;
  p.set_round(1);
  jobs_->ReportProgress("job-0002", p);
  EXPECT_EQ(jobs_->Get("job-0002")->start_attempts(), 0u);
  Reopen();
  EXPECT_EQ(jobs_->Get("job-0001")->state(), v1::JOB_STATE_FAILED);  // stays failed
  next = jobs_->StartNext();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, "job-0002");
  EXPECT_TRUE(next->resumed);
}

TEST_F(JobManagerTest, QueueAndStoreAreBoundedOldFinishedJobsPruned) {
  policy_.max_jobs = 3;
  policy_.max_queued_jobs = 2;
  Reopen();
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());  // job-0001
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());  // job-0002
  absl::Status full = jobs_->Submit(TinyRequest()).status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(full.message()), HasSubstr("max_queued_jobs 2"));
  ASSERT_TRUE(jobs_->Cancel("job-0001", "").ok());
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());  // job-0003: 3 kept
  ASSERT_TRUE(jobs_->Cancel("job-0002", "").ok());
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());  // job-0004: job-0001 (oldest finished) pruned
  EXPECT_EQ(jobs_->Get("job-0001").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(jobs_->Get("job-0002").ok());
  EXPECT_EQ(jobs_->List({}).size(), 3u);
  Reopen();  // pruned from disk too
  EXPECT_EQ(jobs_->List({}).size(), 3u);
  EXPECT_EQ(jobs_->Get("job-0001").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobManagerTest, SubmitChecksDataRootsAndMemoryBudgets) {
  v1::SubmitJobRequest outside = TinyRequest();
  outside.set_yaml("data:\n  path: /etc/passwd\n");
  absl::Status s = jobs_->Submit(outside).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("data file '/etc/passwd' refused"));

  policy_.budgets = MemoryBudgets{.worker_bytes = 1 << 20};
  Reopen();
  s = jobs_->Submit(TinyRequest()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("over the worker memory budget of 1.0 MiB"));
  EXPECT_TRUE(jobs_->List({}).empty());
}

// Shepherds before state.pb wrote state.json; such a folder still loads, and the first save
// replaces it with state.pb.
TEST_F(JobManagerTest, ALegacyStateJsonStillLoads) {
  const std::string dir = dir_->path() + "/jobs/job-0003";
  ASSERT_TRUE(MakeDirs(dir).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/job.yaml", TinyRequest().yaml()).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/state.json",
                              "{\"file_name\": \"tiny.yaml\", \"base_dir\": \"" + JobsDir() +
                                  "\", \"job\": {\"job_id\": \"job-0003\", \"name\": \"tiny\", "
                                  "\"state\": \"JOB_STATE_QUEUED\", \"progress\": {\"total_rounds\": \"5\"}}}\n")
                  .ok());
  Reopen();
  absl::StatusOr<v1::Job> job = jobs_->Get("job-0003");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(job->progress().total_rounds(), 5u);
  std::optional<RunnableJob> next = jobs_->StartNext();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->base_dir, JobsDir());
  EXPECT_TRUE(std::filesystem::exists(dir + "/state.pb"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/state.json"));
  Reopen();
  EXPECT_EQ(jobs_->Get("job-0003")->state(), v1::JOB_STATE_RUNNING);
}

v1::RoundRecord Record(uint64_t round, double train_loss) {
  v1::RoundRecord r;
  r.set_round(round);
  r.set_train_loss(train_loss);
  r.set_tokens_total(100 * round);
  r.add_participants("node-a");
  return r;
}

TEST_F(JobManagerTest, TheHistoryIsWatchedPersistedAndPaged) {
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(jobs_->StartNext().has_value());
  std::vector<v1::JobEvent> events;
  absl::StatusOr<JobManager::WatchStart> watch =
      jobs_->Watch("job-0001", [&](const v1::JobEvent& e) { events.push_back(e); });
  ASSERT_TRUE(watch.ok());
  for (uint64_t r = 1; r <= 5; ++r) jobs_->RecordRound("job-0001", Record(r, 3.0 - 0.1 * r));
  jobs_->RecordValLoss("job-0001", 4, 2.75);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[4].round_record().round(), 5u);
  EXPECT_EQ(events[5].round_record().round(), 4u);  // round 4 again, now with its val loss
  EXPECT_DOUBLE_EQ(events[5].round_record().val_loss(), 2.75);
  EXPECT_DOUBLE_EQ(events[5].round_record().train_loss(), 2.6);

  Reopen();
  v1::GetJobHistoryRequest request;
  request.set_job_id("job-0001");
  request.set_limit(2);
  std::vector<uint64_t> rounds;
  while (true) {
    absl::StatusOr<v1::GetJobHistoryResponse> page = jobs_->History(request);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(page->total_records(), 5u);
    EXPECT_EQ(page->max_records(), kDefaultMaxHistoryRecords);
    for (const v1::RoundRecord& r : page->records()) {
      rounds.push_back(r.round());
      EXPECT_EQ(r.has_val_loss(), r.round() == 4) << r.round();
    }
    if (page->next_after_round() == 0) break;
    request.set_after_round(page->next_after_round());
  }
  EXPECT_EQ(rounds, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(jobs_->Get("job-0001")->history_records(), 5u);

  // Resumed from round 3's checkpoint: rounds 4 and 5 run again.
  jobs_->DropHistoryAfter("job-0001", 3);
  jobs_->RecordRound("job-0001", Record(4, 1.0));
  Reopen();
  request.set_after_round(0);
  request.set_limit(0);
  absl::StatusOr<v1::GetJobHistoryResponse> all = jobs_->History(request);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->records_size(), 4);
  EXPECT_DOUBLE_EQ(all->records(3).train_loss(), 1.0);
  EXPECT_FALSE(all->records(3).has_val_loss());

  request.set_limit(10001);
  EXPECT_EQ(jobs_->History(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_job_id("job-0099");
  request.set_limit(0);
  EXPECT_EQ(jobs_->History(request).status().code(), absl::StatusCode::kNotFound);
}

// What a job keeps is bounded in bytes: a job file over max_job_yaml_bytes, and over-long
// paths, are refused at submit; a cancel reason is cut at a character boundary.
TEST_F(JobManagerTest, JobFilesAndRecordStringsAreBounded) {
  policy_.max_job_yaml_bytes = 1024;
  Reopen();
  v1::SubmitJobRequest big = TinyRequest();
  big.set_yaml(big.yaml() + "# " + std::string(1024, 'x') + "\n");
  absl::Status s = jobs_->Submit(big).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("tiny.yaml: the job file is"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("over this shepherd's max_job_yaml_bytes 1024"));
  v1::SubmitJobRequest long_name = TinyRequest();
  long_name.set_file_name(std::string(5000, 'f'));
  EXPECT_THAT(std::string(jobs_->Submit(long_name).status().message()), HasSubstr("at most 4096 bytes each"));
  v1::SubmitJobRequest long_job_name = TinyRequest();
  std::string yaml = long_job_name.yaml();
  yaml.replace(yaml.find("name: tiny"), 10, "name: " + std::string(300, 'n'));
  long_job_name.set_yaml(yaml);
  EXPECT_THAT(std::string(jobs_->Submit(long_job_name).status().message()),
              HasSubstr("name: 300 bytes long, at most 256"));
  EXPECT_TRUE(jobs_->List({}).empty());

  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  std::string reason;
  for (int i = 0; i < 700; ++i) reason += "\xc3\xa9";  // "é": 1,400 bytes
  absl::StatusOr<v1::Job> cancelled = jobs_->Cancel("job-0001", "x" + reason);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->reason(), "x" + reason.substr(0, 1022));  // 1,023 bytes: no half character
  Reopen();                                                      // and it still parses from state.pb
  EXPECT_EQ(jobs_->Get("job-0001")->reason(), "x" + reason.substr(0, 1022));
}

// Finished jobs beyond the newest max_finished_job_yamls keep their record, not their file,
// in memory and on disk, across restarts; a lower bound at a restart compacts at once.
TEST_F(JobManagerTest, OlderFinishedJobsKeepTheirRecordButNotTheirFile) {
  policy_.max_finished_job_yamls = 2;
  Reopen();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  std::optional<RunnableJob> running = jobs_->StartNext();  // job-0001
  ASSERT_TRUE(running.has_value());
  v1::JobProgress progress;
  progress.set_round(1);
  progress.set_train_loss(3.5);
  jobs_->ReportProgress("job-0001", progress);
  v1::RoundRecord record;
  record.set_round(1);
  record.set_train_loss(3.5);
  jobs_->RecordRound("job-0001", record);
  ASSERT_TRUE(jobs_->Finish("job-0001", v1::JOB_STATE_COMPLETED, ""));
  for (const char* id : {"job-0002", "job-0003", "job-0004"}) ASSERT_TRUE(jobs_->Cancel(id, "").ok());
  auto yaml_on_disk = [&](const std::string& id) {
    return std::filesystem::exists(dir_->path() + "/jobs/" + id + "/job.yaml");
  };
  auto check = [&](const std::string& when) {
    SCOPED_TRACE(when);
    for (const char* id : {"job-0001", "job-0002"}) {
      absl::StatusOr<v1::Job> job = jobs_->Get(id);
      ASSERT_TRUE(job.ok()) << job.status();
      EXPECT_TRUE(job->effective_yaml().empty()) << id;
      EXPECT_FALSE(yaml_on_disk(id)) << id;
      EXPECT_EQ(job->name(), "tiny");
    }
    for (const char* id : {"job-0003", "job-0004", "job-0005"}) {
      EXPECT_FALSE(jobs_->Get(id)->effective_yaml().empty()) << id;
      EXPECT_TRUE(yaml_on_disk(id)) << id;
    }
    absl::StatusOr<v1::Job> done = jobs_->Get("job-0001");
    EXPECT_EQ(done->state(), v1::JOB_STATE_COMPLETED);
    EXPECT_DOUBLE_EQ(done->progress().train_loss(), 3.5);
    absl::StatusOr<v1::GetJobHistoryResponse> history = jobs_->History([] {
      v1::GetJobHistoryRequest r;
      r.set_job_id("job-0001");
      return r;
    }());
    ASSERT_TRUE(history.ok()) << history.status();
    EXPECT_EQ(history->records_size(), 1);
    EXPECT_EQ(jobs_->Get("job-0002")->state(), v1::JOB_STATE_CANCELLED);
    EXPECT_EQ(jobs_->List({}).size(), 5u);
  };
  check("live");
  Reopen();
  check("after a restart");
  // The queued job still starts from its file.
  std::optional<RunnableJob> next = jobs_->StartNext();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, "job-0005");
  EXPECT_EQ(next->yaml, TinyRequest().yaml());

  policy_.max_finished_job_yamls = 1;
  Reopen();
  EXPECT_FALSE(yaml_on_disk("job-0003"));
  EXPECT_TRUE(yaml_on_disk("job-0004"));
  EXPECT_TRUE(jobs_->Get("job-0003")->effective_yaml().empty());
}

// A queued job whose job.yaml is gone is not loaded (only finished jobs go without one).
TEST_F(JobManagerTest, AQueuedJobWithoutItsFileIsSkipped) {
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(jobs_->Submit(TinyRequest()).ok());
  ASSERT_TRUE(jobs_->Cancel("job-0001", "").ok());
  std::filesystem::remove(dir_->path() + "/jobs/job-0001/job.yaml");
  std::filesystem::remove(dir_->path() + "/jobs/job-0002/job.yaml");
  Reopen();
  EXPECT_EQ(jobs_->Get("job-0001")->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(jobs_->Get("job-0002").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace pcp::shepherd
