// Poisoning demonstration (issue 11, must-show 4), run by scripts/poison-demo.sh: the same
// job twice on a local cluster of 3 workers (real processes on loopback, as the e2e tests
// start them), first clean, then with one worker started with the test-only
// --fault_delta=scale:1000/negate_scale:10/noise:20 (Δ × 1000, −Δ × 10, noise of 20 × its
// norm, in turn). Prints both final val losses and their difference, and for the poisoned
// run every screening event (WatchJob), GetJob's screening summary and the shepherd's
// pcp_shepherd_deltas_refused_total series.
//
//   poison_demo --job=config/jobs/shakespeare_char.yaml --rounds=10 --inner_steps=20
//               [--max_iters=N] [--eval_iters=N] [--fault=SPEC] [--keep=DIR]
//
// The job file is used as it is, except data.path (made absolute), diloco.workers (3),
// diloco.rounds, diloco.inner_steps, training.max_iters (rounds × inner_steps unless given,
// so the LR schedule fits the shorter job), training.eval_iters, training.threads (1).
// Exit status 0 when both jobs completed and the poisoned one quarantined the worker.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster_harness.h"
#include "pcp/base/file.h"

ABSL_FLAG(std::string, job, "config/jobs/shakespeare_char.yaml", "the job file to reduce and run");
ABSL_FLAG(int, rounds, 10, "diloco.rounds");
ABSL_FLAG(int, inner_steps, 20, "diloco.inner_steps (τ)");
ABSL_FLAG(int, max_iters, 0, "training.max_iters (0: rounds × inner_steps)");
ABSL_FLAG(int, eval_iters, 50, "training.eval_iters (batches per val loss estimate)");
ABSL_FLAG(std::string, fault, "scale:1000/negate_scale:10/noise:20", "the bad worker's --fault_delta");
ABSL_FLAG(std::string, keep, "", "keep both clusters' folders (logs, checkpoints) under DIR");

namespace pcp::testing {
namespace {

struct RunResult {
  bool ok = false;
  v1::Job job;
  std::vector<v1::JobEvent> events;
  std::string refused_metric;  // the pcp_shepherd_deltas_refused_total lines
};

// The reduced job as YAML.
absl::StatusOr<std::string> ReducedJob(const std::string& path) {
  YAML::Node job = YAML::LoadFile(path);
  const std::string base = std::filesystem::absolute(std::filesystem::path(path)).parent_path().string();
  job["data"]["path"] =
      (std::filesystem::path(base) / job["data"]["path"].as<std::string>()).lexically_normal().string();
  job["diloco"]["workers"] = 3;
  job["diloco"]["rounds"] = absl::GetFlag(FLAGS_rounds);
  job["diloco"]["inner_steps"] = absl::GetFlag(FLAGS_inner_steps);
  const int max_iters = absl::GetFlag(FLAGS_max_iters) > 0
                            ? absl::GetFlag(FLAGS_max_iters)
                            : absl::GetFlag(FLAGS_rounds) * absl::GetFlag(FLAGS_inner_steps);
  job["training"]["max_iters"] = max_iters;
  job["optimizer"]["lr_decay_iters"] = max_iters;
  job["optimizer"]["warmup_iters"] = std::min(100, max_iters / 10);
  job["training"]["eval_iters"] = absl::GetFlag(FLAGS_eval_iters);
  job["training"]["threads"] = 1;
  YAML::Emitter out;
  out << job;
  return std::string(out.c_str());
}

RunResult Run(const std::string& label, const std::string& yaml, const std::string& fault) {
  RunResult result;
  absl::StatusOr<TempDir> tmp = TempDir::Create();
  if (!tmp.ok()) return result;
  std::string dir = tmp->path();
  if (!absl::GetFlag(FLAGS_keep).empty()) {
    dir = absl::StrCat(absl::GetFlag(FLAGS_keep), "/", label);
    std::filesystem::create_directories(dir);
  }
  ClusterHarness cluster(dir);
  auto fail = [&](absl::string_view what, const absl::Status& s) {
    std::printf("%s: %s: %s\n%s\n", label.c_str(), std::string(what).c_str(), s.ToString().c_str(),
                cluster.Logs(40).c_str());
    return result;
  };
  if (absl::Status s = cluster.StartShepherd(); !s.ok()) return fail("starting the shepherd", s);
  if (absl::Status s = cluster.StartSupervisors(2); !s.ok()) return fail("starting supervisors", s);
  if (absl::Status s = cluster.StartSupervisors(1, "cpu", fault.empty() ? "" : "--fault_delta=" + fault); !s.ok()) {
    return fail("starting supervisors", s);
  }
  if (absl::Status s = cluster.WaitForWorkers(3, absl::Minutes(3)); !s.ok()) return fail("waiting for workers", s);
  const std::string job_path = cluster.job_dir() + "/poison_demo.yaml";
  std::filesystem::create_directories(cluster.job_dir());
  if (absl::Status s = WriteFileAtomic(job_path, yaml); !s.ok()) return fail("writing the job", s);
  absl::StatusOr<CommandResult> submit = cluster.Pcpctl({"submit", "--quiet", job_path});
  if (!submit.ok() || submit->exit_code != 0) {
    return fail("submitting", submit.ok() ? absl::InternalError(submit->output) : submit.status());
  }
  const std::string job_id(absl::StripAsciiWhitespace(submit->output));
  std::printf("%s: %s submitted (3 workers%s)\n", label.c_str(), job_id.c_str(),
              fault.empty() ? "" : absl::StrCat("; node-3 --fault_delta=", fault).c_str());
  std::fflush(stdout);
  grpc::ClientContext watch_context;
  std::thread watcher([&] {
    v1::WatchJobRequest request;
    request.set_job_id(job_id);
    auto reader = cluster.admin().WatchJob(&watch_context, request);
    v1::JobEvent event;
    while (reader->Read(&event)) result.events.push_back(event);
    (void)reader->Finish();
  });
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Hours(1));
  watcher.join();
  if (!job.ok()) return fail("waiting for the job", job.status());
  result.job = *job;
  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  if (page.ok()) {
    for (absl::string_view line : absl::StrSplit(*page, '\n')) {
      if (absl::StartsWith(line, "pcp_shepherd_deltas_refused_total"))
        absl::StrAppend(&result.refused_metric, line, "\n");
    }
  }
  if (absl::Status s = cluster.StopAll(); !s.ok()) return fail("stopping", s);
  result.ok = job->state() == v1::JOB_STATE_COMPLETED;
  return result;
}

std::string Loss(const v1::JobProgress& p) {
  return p.has_val_loss() ? absl::StrFormat("%.4f", p.val_loss()) : std::string("-");
}

int Main() {
  absl::StatusOr<std::string> yaml = ReducedJob(absl::GetFlag(FLAGS_job));
  if (!yaml.ok()) {
    std::printf("%s\n", yaml.status().ToString().c_str());
    return 2;
  }
  std::printf("job (reduced from %s):\n%s\n\n", absl::GetFlag(FLAGS_job).c_str(), yaml->c_str());
  RunResult clean = Run("clean", *yaml, "");
  RunResult poisoned = Run("poisoned", *yaml, absl::GetFlag(FLAGS_fault));
  std::printf("\n== poisoned run: screening events (WatchJob)\n");
  for (const v1::JobEvent& e : poisoned.events) {
    if (!e.has_screening()) continue;
    const v1::ScreeningEvent& s = e.screening();
    const bool delta = s.kind() == v1::ScreeningEvent::DELTA_REJECTED || s.kind() == v1::ScreeningEvent::DELTA_CLIPPED;
    std::printf("round %llu  %-18s %-7s %-10s %s refusals %u\n", static_cast<unsigned long long>(s.round()),
                v1::ScreeningEvent::Kind_Name(s.kind()).c_str(), s.supervisor_id().c_str(), s.reason().c_str(),
                delta ? absl::StrFormat("norm %-11.4g threshold %-11.4g", s.norm(), s.threshold()).c_str()
                      : std::string(39, ' ').c_str(),
                s.refusals());
  }
  std::printf("\n== poisoned run: GetJob screening\n");
  const v1::JobProgress& p = poisoned.job.progress();
  std::printf("deltas_refused %llu, rounds_rolled_back %llu\n", static_cast<unsigned long long>(p.deltas_refused()),
              static_cast<unsigned long long>(p.rounds_rolled_back()));
  bool quarantined = false;
  for (const v1::ScreenedWorker& w : p.screened_workers()) {
    std::printf("  %s: refusals %u, quarantined %s, last %s in round %llu\n", w.supervisor_id().c_str(), w.refusals(),
                w.quarantined() ? "yes" : "no", w.last_reason().c_str(),
                static_cast<unsigned long long>(w.last_round()));
    quarantined = quarantined || w.quarantined();
  }
  std::printf("\n== poisoned run: shepherd metric\n%s", poisoned.refused_metric.c_str());
  std::printf("\n== final val loss\n");
  std::printf("clean     %s  (%s, round %llu)\n", Loss(clean.job.progress()).c_str(),
              v1::JobState_Name(clean.job.state()).c_str(),
              static_cast<unsigned long long>(clean.job.progress().round()));
  std::printf("poisoned  %s  (%s, round %llu)\n", Loss(poisoned.job.progress()).c_str(),
              v1::JobState_Name(poisoned.job.state()).c_str(),
              static_cast<unsigned long long>(poisoned.job.progress().round()));
  if (clean.job.progress().has_val_loss() && poisoned.job.progress().has_val_loss()) {
    const double diff = poisoned.job.progress().val_loss() - clean.job.progress().val_loss();
    std::printf("difference %+.4f (goal: within ±0.02)\n", diff);
  }
  return clean.ok && poisoned.ok && quarantined ? 0 : 1;
}

}  // namespace
}  // namespace pcp::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return pcp::testing::Main();
}
