// pcpctl's text (durations: tests/libs/base/format_duration_test.cc): rates, tables, the progress line, the watch printer.
#include "pcp/pcpctl/format.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace pcp::pcpctl {
namespace {

TEST(FormatTest, RatesAndLosses) {
  EXPECT_EQ(FormatRate(950), "950");
  EXPECT_EQ(FormatRate(12345), "12.3k");
  EXPECT_EQ(FormatRate(1.25e6), "1.25M");
  EXPECT_EQ(FormatLoss(true, 2.13456), "2.1346");
  EXPECT_EQ(FormatLoss(false, 0), "-");
}

TEST(FormatTest, EnumNames) {
  EXPECT_EQ(JobStateName(v1::JOB_STATE_RUNNING), "running");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_UNSPECIFIED), "-");
  EXPECT_EQ(WorkerPhaseName(v1::WORKER_PHASE_TRAINING), "training");
  EXPECT_EQ(WorkerProcessStateName(v1::WORKER_PROCESS_STATE_BACKOFF), "backoff");
  EXPECT_EQ(BackendName(v1::BACKEND_VULKAN), "vulkan");
}

TEST(FormatTest, TableAlignsColumnsWithoutTrailingSpaces) {
  EXPECT_EQ(FormatTable({{"A", "LONG HEADER", "C"}, {"value", "x", ""}}),
            "A      LONG HEADER  C\n"
            "value  x\n");
}

TEST(FormatTest, WorkersTableShowsSpeedStepsStalenessAndIdle) {
  v1::ListWorkersResponse r;
  v1::WorkerInfo* fast = r.add_workers();
  fast->set_supervisor_id("node-1");
  fast->set_tokens_per_second(2400);
  fast->set_step_time_ms(106.66);
  fast->set_round_steps(150);
  fast->set_staleness(2);
  fast->set_idle_fraction(0.084);
  v1::WorkerInfo* fresh = r.add_workers();  // no round delivered yet
  fresh->set_supervisor_id("node-2");
  const std::string table = FormatWorkersTable(r);
  EXPECT_TRUE(absl::StrContains(table, "TOK/S  MS/STEP  STEPS  STALE  IDLE")) << table;
  EXPECT_TRUE(absl::StrContains(table, "2.4k   106.7    150    2      8%")) << table;
  EXPECT_TRUE(absl::StrContains(table, "0      -        -      -      -     ")) << table;
}

TEST(FormatTest, ProgressLine) {
  v1::JobProgress p;
  p.set_round(12);
  p.set_total_rounds(40);
  p.set_train_loss(2.13454);
  p.set_val_loss(2.2012);
  p.set_val_round(10);
  p.set_tokens_per_second(12345);
  p.set_workers_in_last_round(2);
  p.set_round_time_s(1.5);
  p.set_eta_s(192);
  EXPECT_EQ(FormatProgressLine(p),
            "round 12/40  train 2.1345  val 2.2012 (r10)  12.3k tok/s  2 workers  1.5s/round  ETA 3m12s");
  p.clear_val_loss();
  p.clear_train_loss();
  p.set_workers_in_last_round(1);
  EXPECT_TRUE(absl::StrContains(FormatProgressLine(p), "train -  val -  12.3k tok/s  1 worker "));
}

TEST(FormatTest, Screening) {
  v1::JobProgress p;
  p.set_round(4);
  p.set_total_rounds(6);
  p.set_deltas_refused(3);
  p.set_rounds_rolled_back(1);
  v1::ScreenedWorker* w = p.add_screened_workers();
  w->set_supervisor_id("node-3");
  w->set_refusals(3);
  w->set_quarantined(true);
  w->set_last_reason("norm");
  w->set_last_round(4);
  EXPECT_TRUE(absl::StrContains(FormatProgressLine(p), "  3 refused, 1 quarantined")) << FormatProgressLine(p);
  EXPECT_EQ(FormatScreenedWorker(*w), "node-3: 3 Δs refused (last: norm, round 4), QUARANTINED");
  v1::Job job;
  *job.mutable_progress() = p;
  const std::string details = FormatJobDetails(job, false);
  EXPECT_TRUE(absl::StrContains(details, "3 Δs refused, 1 rounds rolled back\n")) << details;
  EXPECT_TRUE(absl::StrContains(details, "node-3: 3 Δs refused (last: norm, round 4), QUARANTINED\n")) << details;

  v1::ScreeningEvent e;
  e.set_kind(v1::ScreeningEvent::DELTA_CLIPPED);
  e.set_round(2);
  e.set_supervisor_id("node-3");
  e.set_reason("max_norm");
  e.set_norm(12345.6);
  e.set_threshold(10000);
  e.set_refusals(1);
  EXPECT_EQ(FormatScreeningEvent(e),
            "round 2: Δ of node-3 clipped (max_norm: norm 1.235e+04, threshold 1e+04), refusal 1");
  e.set_kind(v1::ScreeningEvent::WORKER_QUARANTINED);
  EXPECT_EQ(FormatScreeningEvent(e), "round 2: worker node-3 QUARANTINED after 1 refused Δs");
  e.set_kind(v1::ScreeningEvent::ROUND_ROLLED_BACK);
  e.set_reason("θ or the outer momentum is not finite after the outer step");
  EXPECT_EQ(FormatScreeningEvent(e), "round 2 rolled back: θ or the outer momentum is not finite after the outer step");
}

TEST(FormatTest, JobResult) {
  v1::JobResult r;
  r.set_state(v1::JOB_STATE_COMPLETED);
  r.set_rounds_completed(5);
  r.set_duration_s(65);
  r.set_final_train_loss(1.5);
  r.set_tokens_processed(1000);
  r.set_checkpoint_path("/s/ckpt.safetensors");
  EXPECT_EQ(FormatJobResult("job-0001", r),
            "job-0001 completed: 5 rounds in 1m05s, train loss 1.5000, val loss -, 1000 tokens\n"
            "checkpoint: /s/ckpt.safetensors\n");
}

std::string PrintEvents(bool tty) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  WatchPrinter printer(out, tty);
  v1::JobEvent e;
  e.set_job_id("job-0001");
  e.mutable_snapshot()->set_job_id("job-0001");
  e.mutable_snapshot()->set_name("tiny");
  e.mutable_snapshot()->set_state(v1::JOB_STATE_RUNNING);
  printer.OnEvent(e);
  for (int round = 1; round <= 2; ++round) {
    e.mutable_progress()->set_round(round);
    e.mutable_progress()->set_total_rounds(2);
    printer.OnEvent(e);
  }
  e.mutable_checkpoint()->set_round(2);
  e.mutable_checkpoint()->set_path("/c");
  printer.OnEvent(e);
  e.mutable_result()->set_state(v1::JOB_STATE_COMPLETED);
  e.mutable_result()->set_rounds_completed(2);
  printer.OnEvent(e);
  EXPECT_TRUE(printer.has_result());
  printer.Finish();
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

TEST(WatchPrinterTest, OneLinePerEventWhenNotATerminal) {
  std::string text = PrintEvents(/*tty=*/false);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_TRUE(absl::StartsWith(text, "job-0001 (tiny): running, round 0/0\nround 1/2 ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\nround 2/2 ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\ncheckpoint after round 2: /c\njob-0001 completed: 2 rounds")) << text;
}

TEST(WatchPrinterTest, RewritesTheProgressLineOnATerminal) {
  std::string text = PrintEvents(/*tty=*/true);
  EXPECT_TRUE(absl::StrContains(text, "\rround 1/2 ")) << text;
  // Round 2 overwrites round 1 on the same line; the checkpoint starts a new line.
  EXPECT_TRUE(absl::StrContains(text, "\x1b[K\rround 2/2 ")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\x1b[K\ncheckpoint after round 2")) << text;
}

}  // namespace
}  // namespace pcp::pcpctl
