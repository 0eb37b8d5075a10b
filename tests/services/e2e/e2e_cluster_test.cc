// The whole cluster on loopback, as processes: pcp-shepherd + 2 pcp-supervisors (each with
// its pcp-worker) train a tiny GPT for several DiLoCo rounds, driven by the real pcpctl
// binary. Asserts the loss falls, a checkpoint (safetensors, nanoGPT names) is written and
// every process is gone afterwards.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"

namespace pcp::testing {
namespace {

// How many progress lines `pcpctl watch` printed (one per round when not on a terminal).
int WatchProgressLines(const std::string& output) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(output, '\n')) n += absl::StartsWith(line, "round ") ? 1 : 0;
  return n;
}

// Tensor names in a .safetensors file's JSON header.
std::vector<std::string> SafetensorsNames(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok() || bytes->size() < 8) return {};
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<uint8_t>((*bytes)[i]);
  if (header_size > bytes->size() - 8) return {};
  absl::StatusOr<Json> header = Json::Parse(absl::string_view(*bytes).substr(8, header_size));
  if (!header.ok() || !header->is_object()) return {};
  std::vector<std::string> names;
  for (const auto& [name, value] : header->object_items()) {
    if (name != "__metadata__") names.push_back(name);
  }
  return names;
}

TEST(E2eClusterTest, TwoWorkersTrainTheTinyJobThroughPcpctl) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  absl::Time t0 = absl::Now();
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();
  std::printf("cluster up (shepherd + 2 supervisors/workers) in %.2f s\n", absl::ToDoubleSeconds(absl::Now() - t0));

  absl::StatusOr<CommandResult> workers = cluster.Pcpctl({"workers"});
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_EQ(workers->exit_code, 0) << workers->output;
  EXPECT_TRUE(absl::StrContains(workers->output, "\nnode-1 ")) << workers->output;
  EXPECT_TRUE(absl::StrContains(workers->output, "\nnode-2 ")) << workers->output;

  E2eJob spec;
  spec.rounds = 6;
  spec.inner_steps = 25;
  spec.checkpoint_every = 2;
  std::string job_path = cluster.WriteJob(spec);
  absl::StatusOr<CommandResult> submit = cluster.Pcpctl({"submit", "--quiet", job_path});
  ASSERT_TRUE(submit.ok()) << submit.status();
  ASSERT_EQ(submit->exit_code, 0) << submit->output;
  std::string job_id(absl::StripAsciiWhitespace(submit->output));
  ASSERT_FALSE(job_id.empty());

  absl::StatusOr<CommandResult> jobs = cluster.Pcpctl({"jobs"});
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->exit_code, 0);
  EXPECT_TRUE(absl::StrContains(jobs->output, job_id + "  tiny_e2e  ")) << jobs->output;

  absl::Time t_job = absl::Now();
  absl::StatusOr<CommandResult> watch = cluster.Pcpctl({"watch", job_id}, absl::Seconds(600));
  ASSERT_TRUE(watch.ok()) << watch.status() << cluster.Logs();
  std::printf("pcpctl watch %s:\n%s", job_id.c_str(), watch->output.c_str());
  ASSERT_EQ(watch->exit_code, 0) << watch->output << cluster.Logs();
  EXPECT_TRUE(absl::StrContains(watch->output, absl::StrCat(job_id, " completed: 6 rounds"))) << watch->output;

  // pcpctl saw rounds as they completed (the first ones may precede the watch's snapshot).
  EXPECT_GE(WatchProgressLines(watch->output), 1) << watch->output;
  EXPECT_TRUE(absl::StrContains(watch->output, "round 6/6  train ")) << watch->output;

  // Loss falls: the last round's training loss is clearly below the first round's and below
  // the uniform guess ln(65) = 4.17 nats.
  std::vector<RoundLine> rounds = RoundsFromLog(cluster.shepherd()->Log(), job_id);
  ASSERT_EQ(rounds.size(), 6u) << cluster.shepherd()->Log();
  for (size_t i = 0; i < rounds.size(); ++i) EXPECT_EQ(rounds[i].round, static_cast<int>(i) + 1);
  std::printf("train loss by round (workers):");
  for (const RoundLine& r : rounds) std::printf(" %.4f (%d)", r.train_loss, r.workers);
  std::printf("\njob took %.1f s\n", absl::ToDoubleSeconds(absl::Now() - t_job));
  EXPECT_LT(rounds.back().train_loss, rounds.front().train_loss - 0.2);
  EXPECT_LT(rounds.back().train_loss, std::log(65.0));
  int rounds_with_both = 0;
  for (const RoundLine& r : rounds) rounds_with_both += r.workers == 2 ? 1 : 0;
  EXPECT_GE(rounds_with_both, 4) << "most rounds should have both workers' results";

  // The job's record and its checkpoint.
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetJobRequest get;
  get.set_job_id(job_id);
  v1::Job job;
  ASSERT_TRUE(cluster.admin().GetJob(&context, get, &job).ok());
  EXPECT_EQ(job.state(), v1::JOB_STATE_COMPLETED) << job.reason();
  EXPECT_EQ(job.progress().round(), 6u);
  EXPECT_EQ(job.progress().inner_steps(), 25u);
  ASSERT_TRUE(job.progress().has_val_loss());
  EXPECT_LT(job.progress().val_loss(), std::log(65.0));
  ASSERT_FALSE(job.checkpoint_path().empty());
  EXPECT_TRUE(std::filesystem::exists(job.checkpoint_path())) << job.checkpoint_path();
  std::vector<std::string> names = SafetensorsNames(job.checkpoint_path());
  EXPECT_NE(std::find(names.begin(), names.end(), "transformer.wte.weight"), names.end()) << job.checkpoint_path();
  std::printf("checkpoint: %s (%zu tensors), val loss %.4f\n", job.checkpoint_path().c_str(), names.size(),
              job.progress().val_loss());

  // The workers' view and a sample, through pcpctl.
  workers = cluster.Pcpctl({"workers"});
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->exit_code, 0);
  std::printf("%s", workers->output.c_str());
  absl::StatusOr<CommandResult> sample =
      cluster.Pcpctl({"sample", job_id, "--max_new_tokens=40", "--prompt=ROMEO:"}, absl::Seconds(120));
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->exit_code, 0) << sample->output;
  EXPECT_TRUE(absl::StartsWith(sample->output, "ROMEO:")) << sample->output;
  std::printf("sample:\n%s", sample->output.c_str());
  absl::StatusOr<CommandResult> status = cluster.Pcpctl({"status", job_id});
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(absl::StrContains(status->output, "state       completed\n")) << status->output;

  // Every process stops, the workers included.
  cluster.RecordWorkerPids();
  std::vector<pid_t> pids = cluster.PidsSeen();
  EXPECT_GE(pids.size(), 5u) << "shepherd, 2 supervisors, 2 workers";
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
  for (pid_t pid : pids) EXPECT_FALSE(PidAlive(pid)) << pid;
}

// Admin commands that reach a worker through its supervisor's Control stream.
TEST(E2eClusterTest, RestartAndDrainThroughPcpctl) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(1).ok()) << cluster.Logs();
  auto wait_for_worker = [&](pid_t not_this) {
    absl::Time deadline = absl::Now() + absl::Seconds(30);
    pid_t pid = 0;
    while (absl::Now() < deadline) {
      pid = cluster.WorkerPid(0);
      if (pid != 0 && pid != not_this) return pid;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return pid_t{0};
  };
  pid_t first = wait_for_worker(0);
  ASSERT_GT(first, 0);

  absl::StatusOr<CommandResult> restart = cluster.Pcpctl({"restart", "node-1", "--reason=e2e"});
  ASSERT_TRUE(restart.ok()) << restart.status();
  EXPECT_EQ(restart->exit_code, 0) << restart->output << cluster.Logs();
  EXPECT_TRUE(absl::StartsWith(restart->output, "node-1: restarted (command ")) << restart->output;
  pid_t second = wait_for_worker(first);
  EXPECT_GT(second, 0) << "no new worker process after restart";
  EXPECT_TRUE(WaitForPidGone(first, absl::Seconds(10)).ok());
  ASSERT_TRUE(cluster.shepherd()->WaitForLogRegex(R"(worker node-1 joined: .*incarnation 2)", absl::Seconds(60)).ok())
      << cluster.Logs();

  absl::StatusOr<CommandResult> drain = cluster.Pcpctl({"drain", "node-1"});
  ASSERT_TRUE(drain.ok()) << drain.status();
  EXPECT_EQ(drain->exit_code, 0) << drain->output << cluster.Logs();
  EXPECT_TRUE(WaitForPidGone(second, absl::Seconds(20)).ok());
  absl::SleepFor(absl::Seconds(1));  // longer than the restart backoff: it stays stopped
  EXPECT_EQ(cluster.WorkerPid(0), 0);
  absl::StatusOr<CommandResult> workers = cluster.Pcpctl({"workers"});
  ASSERT_TRUE(workers.ok());
  EXPECT_TRUE(absl::StrContains(workers->output, "stopped")) << workers->output;

  restart = cluster.Pcpctl({"restart", "node-1"});
  ASSERT_TRUE(restart.ok());
  EXPECT_EQ(restart->exit_code, 0) << restart->output;
  EXPECT_GT(wait_for_worker(0), 0) << "a drained worker comes back with restart";
  ASSERT_TRUE(cluster.WaitForWorkers(1, absl::Seconds(60)).ok()) << cluster.Logs();

  absl::StatusOr<CommandResult> unknown = cluster.Pcpctl({"restart", "node-9"});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->exit_code, 1);
  EXPECT_TRUE(absl::StrContains(unknown->output, "node-9")) << unknown->output;

  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
