// A heterogeneous DiLoCo job: one worker on the CPU backend and one on the Vulkan backend
// (a GPU, or Mesa's lavapipe where there is none) train the same tiny GPT together, as
// processes on loopback. Asserts both workers' results go into every round (min_workers 2),
// the loss falls, the shepherd sees each worker's backend, and every process stops.
//
// Skips, saying why, only when this machine has no Vulkan device at all (the Vulkan backend
// reports Unavailable); any other failure to create it fails the test.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/kernels/backend_factory.h"

namespace pcp::testing {
namespace {

TEST(HeterogeneousClusterTest, CpuAndVulkanWorkersTrainOneJob) {
  {
    absl::StatusOr<std::unique_ptr<Backend>> vulkan = CreateBackend("vulkan", 1);
    if (absl::IsUnavailable(vulkan.status())) {
      GTEST_SKIP() << "no Vulkan device on this machine: " << vulkan.status().message();
    }
    ASSERT_TRUE(vulkan.ok()) << vulkan.status();
    std::printf("vulkan device: %s\n", (*vulkan)->DeviceDescription().c_str());
  }

  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartShepherd().ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.StartSupervisors(1, "cpu").ok()) << cluster.Logs();     // node-1
  ASSERT_TRUE(cluster.StartSupervisors(1, "vulkan").ok()) << cluster.Logs();  // node-2
  ASSERT_TRUE(cluster.WaitForWorkers(2, absl::Seconds(120)).ok()) << cluster.Logs();

  // The shepherd knows which backend each worker runs.
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ListWorkersResponse workers;
    ASSERT_TRUE(cluster.admin().ListWorkers(&context, v1::ListWorkersRequest(), &workers).ok());
    ASSERT_EQ(workers.workers_size(), 2);
    EXPECT_EQ(workers.workers(0).supervisor_id(), "node-1");
    EXPECT_EQ(workers.workers(0).backend(), v1::BACKEND_CPU);
    EXPECT_EQ(workers.workers(1).supervisor_id(), "node-2");
    EXPECT_EQ(workers.workers(1).backend(), v1::BACKEND_VULKAN);
    for (const v1::WorkerInfo& w : workers.workers()) {
      std::printf("%s: backend %s, device %s\n", w.supervisor_id().c_str(), v1::Backend_Name(w.backend()).c_str(),
                  w.device().c_str());
    }
  }

  // Small enough for lavapipe: 2 layers, 32 wide, block 32, batch 8, τ = 10.
  E2eJob spec;
  spec.name = "hetero_e2e";
  spec.rounds = 4;
  spec.inner_steps = 10;
  spec.checkpoint_every = 2;
  spec.round_deadline_s = 300;
  // Every round waits for both: lavapipe compiles the step's shaders on the CPU, which under
  // load took longer than the CPU worker's whole job (4 rounds in 1.3 s, none with node-2).
  spec.min_workers = 2;
  absl::StatusOr<CommandResult> submit = cluster.Pcpctl({"submit", "--quiet", cluster.WriteJob(spec)});
  ASSERT_TRUE(submit.ok()) << submit.status();
  ASSERT_EQ(submit->exit_code, 0) << submit->output;
  std::string job_id(absl::StripAsciiWhitespace(submit->output));

  absl::Time t_job = absl::Now();
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Seconds(800));
  ASSERT_TRUE(job.ok()) << job.status() << cluster.Logs();
  ASSERT_EQ(job->state(), v1::JOB_STATE_COMPLETED) << job->reason() << cluster.Logs();

  std::vector<RoundLine> rounds = RoundsFromLog(cluster.shepherd()->Log(), job_id);
  ASSERT_EQ(rounds.size(), 4u) << cluster.shepherd()->Log();
  std::printf("job took %.1f s; train loss by round (workers):", absl::ToDoubleSeconds(absl::Now() - t_job));
  int rounds_with_both = 0;
  for (const RoundLine& r : rounds) {
    std::printf(" %.4f (%d)", r.train_loss, r.workers);
    rounds_with_both += r.workers == 2 ? 1 : 0;
  }
  std::printf("\n");
  // Both backends contributed to every round.
  EXPECT_EQ(rounds_with_both, 4) << cluster.shepherd()->Log();
  EXPECT_LT(rounds.back().train_loss, rounds.front().train_loss - 0.2);
  ASSERT_TRUE(job->progress().has_val_loss());
  EXPECT_LT(job->progress().val_loss(), std::log(65.0));
  std::printf("val loss %.4f\n", job->progress().val_loss());

  cluster.RecordWorkerPids();
  std::vector<pid_t> pids = cluster.PidsSeen();
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
  for (pid_t pid : pids) EXPECT_FALSE(PidAlive(pid)) << pid;
}

}  // namespace
}  // namespace pcp::testing
