#include "pcp/loadgen/loadgen.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "delta_source.h"
#include "job_client.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/loadgen/proc_stats.h"
#include "pcp/rpc/channel_options.h"
#include "round_timeline.h"
#include "sim_worker.h"
#include "spdlog/spdlog.h"
#include "timer_queue.h"

namespace pcp::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The loadgen-side figures of one round, from its first θ chunk to the next round's.
struct Window {
  Clock::time_point start, end;
  int64_t in_start = 0, out_start = 0, in_end = 0, out_end = 0;
  std::optional<double> cpu_start, cpu_end;
  std::optional<int64_t> rss_max, hwm_end;
  bool closed = false;
};

class Monitor {
 public:
  Monitor(const LoadgenOptions& o, FleetContext* ctx, RoundTimeline* timeline, JobClient* admin, std::string job_id)
      : o_(o), ctx_(ctx), timeline_(timeline), admin_(admin), job_id_(std::move(job_id)) {}

  // Runs until a stop condition; returns why it stopped (an error: the run failed).
  absl::StatusOr<std::string> Run() {
    const auto begin = Clock::now();
    auto last_poll = begin - std::chrono::seconds(10);
    while (true) {
      if (absl::Status f = ctx_->failure(); !f.ok()) return f;
      const auto now = Clock::now();
      if (Seconds(now - begin) > o_.max_seconds) return absl::StrCat("--max_seconds ", o_.max_seconds, " passed");
      if (o_.interrupt != nullptr && o_.interrupt->load()) return std::string("interrupted");
      if (absl::StatusOr<std::string> why = Sample(now); !why.ok() || !why->empty()) return why;
      if (now - last_poll >= std::chrono::milliseconds(500)) {
        last_poll = now;
        if (absl::StatusOr<std::string> why = Poll(); !why.ok() || !why->empty()) return why;
      }
      PrintReady();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // After the run: the last windows closed, the last records read, every row.
  std::vector<RoundRow> Finish() {
    if (open_ != 0) Close(open_, Clock::now(), timeline_->bytes_in.load(), timeline_->bytes_out.load());
    (void)Poll();
    std::vector<RoundRow> rows;
    std::set<uint64_t> rounds;
    for (const auto& [r, w] : windows_) {
      // (Streaming DiLoCo: the last round's fragment comes as θ of a round after the job's last.)
      if (total_rounds_ == 0 || r <= total_rounds_) rounds.insert(r);
    }
    for (const auto& [r, rec] : records_) rounds.insert(r);
    for (uint64_t r : rounds) rows.push_back(Row(r));
    return rows;
  }

  const std::string& job_id() const { return job_id_; }
  bool job_ended() const { return job_ended_; }

 private:
  // /proc and the timeline: opens and closes windows. A non-empty string: stop.
  absl::StatusOr<std::string> Sample(Clock::time_point now) {
    std::optional<ProcMemory> mem;
    std::optional<double> cpu;
    if (o_.shepherd_pid > 0) {
      absl::StatusOr<ProcMemory> m = ReadProcMemory(static_cast<int>(o_.shepherd_pid));
      absl::StatusOr<double> c = ReadProcCpuSeconds(static_cast<int>(o_.shepherd_pid));
      if (!m.ok() || !c.ok()) {
        return absl::StrCat("the shepherd (pid ", o_.shepherd_pid,
                            ") is gone: ", (m.ok() ? c.status() : m.status()).message());
      }
      mem = *m;
      cpu = *c;
      if (o_.max_shepherd_rss_gib > 0 && static_cast<double>(m->rss_bytes) > o_.max_shepherd_rss_gib * (1 << 30)) {
        return absl::StrFormat("the shepherd's RSS (%.2f GiB) passed --max_shepherd_rss_gib=%g",
                               static_cast<double>(m->rss_bytes) / (1 << 30), o_.max_shepherd_rss_gib);
      }
    }
    last_cpu_ = cpu;
    last_hwm_ = mem ? std::optional<int64_t>(mem->hwm_bytes) : std::nullopt;
    const uint64_t latest = timeline_->LatestThetaRound();
    if (latest > open_) {
      // Byte counters and times are the timeline's, taken at the first θ chunk; /proc is
      // sampled here (every 100 ms).
      const RoundTimeline::Marks m = timeline_->Get(latest);
      if (open_ != 0) Close(open_, m.first_theta.value_or(now), m.in_at_theta, m.out_at_theta);
      Window& w = windows_[latest];
      w.start = m.first_theta.value_or(now);
      w.in_start = m.in_at_theta;
      w.out_start = m.out_at_theta;
      w.cpu_start = cpu;
      open_ = latest;
    }
    if (open_ != 0 && mem) {
      Window& w = windows_[open_];
      w.rss_max = std::max(w.rss_max.value_or(0), mem->rss_bytes);
    }
    return std::string();
  }

  void Close(uint64_t round, Clock::time_point end, int64_t in, int64_t out) {
    Window& w = windows_[round];
    w.end = end;
    w.in_end = in;
    w.out_end = out;
    w.cpu_end = last_cpu_;
    w.hwm_end = last_hwm_;
    w.closed = true;
  }

  // The shepherd's records and the job's state. A non-empty string: stop.
  absl::StatusOr<std::string> Poll() {
    if (job_id_.empty()) {
      std::lock_guard<std::mutex> lock(ctx_->mu);
      job_id_ = ctx_->job_id;
    }
    if (job_id_.empty()) return std::string();
    absl::StatusOr<std::vector<v1::RoundRecord>> page = admin_->HistoryAfter(job_id_, last_record_);
    if (page.ok()) {
      for (v1::RoundRecord& r : *page) {
        last_record_ = std::max(last_record_, r.round());
        records_[r.round()] = std::move(r);
      }
    } else {
      spdlog::warn("job history: {}", page.status().message());
    }
    if (o_.rounds > 0 && last_record_ >= static_cast<uint64_t>(o_.rounds)) {
      return absl::StrCat(o_.rounds, " rounds done");
    }
    absl::StatusOr<v1::Job> job = admin_->Get(job_id_);
    if (job.ok()) total_rounds_ = job->progress().total_rounds();
    if (job.ok() && JobEnded(job->state())) {
      job_ended_ = true;
      return absl::StrCat("job ", job_id_, " ended: ", v1::JobState_Name(job->state()),
                          job->reason().empty() ? "" : absl::StrCat(" (", job->reason(), ")"));
    }
    return std::string();
  }

  RoundRow Row(uint64_t r) const {
    RoundRow row;
    row.round = r;
    const RoundTimeline::Marks m = timeline_->Get(r), next = timeline_->Get(r + 1);
    row.sent = m.sent;
    row.drops = m.drops;
    if (m.last_delta_sent && next.first_theta && *next.first_theta >= *m.last_delta_sent) {
      row.overhead_s = Seconds(*next.first_theta - *m.last_delta_sent);
    }
    if (auto it = records_.find(r); it != records_.end()) {
      row.workers = it->second.participants_size();
      row.outer_step_ms = it->second.outer_step_s() * 1000.0;
      row.round_s = it->second.round_s();
    }
    if (auto it = windows_.find(r); it != windows_.end() && it->second.closed) {
      const Window& w = it->second;
      row.window_s = Seconds(w.end - w.start);
      row.bytes_in = w.in_end - w.in_start;
      row.bytes_out = w.out_end - w.out_start;
      row.rss_bytes = w.rss_max;
      row.hwm_bytes = w.hwm_end;
      if (w.cpu_start && w.cpu_end) row.cpu_s = *w.cpu_end - *w.cpu_start;
    }
    return row;
  }

  // Progress: a line per round once its window has closed and its record is known.
  void PrintReady() {
    if (o_.progress == nullptr) return;
    for (const auto& [r, w] : windows_) {
      if (!w.closed || printed_.count(r) != 0 || records_.count(r) == 0) continue;
      if (printed_.empty()) std::fputs(TableHeader().c_str(), o_.progress);
      std::fputs(TableLine(Row(r)).c_str(), o_.progress);
      std::fflush(o_.progress);
      printed_.insert(r);
    }
  }

  const LoadgenOptions& o_;
  FleetContext* ctx_;
  RoundTimeline* timeline_;
  JobClient* admin_;
  std::string job_id_;
  bool job_ended_ = false;
  std::map<uint64_t, Window> windows_;
  uint64_t open_ = 0;
  std::optional<double> last_cpu_;
  std::optional<int64_t> last_hwm_;
  std::map<uint64_t, v1::RoundRecord> records_;
  uint64_t last_record_ = 0;
  uint64_t total_rounds_ = 0;  // the job's, once GetJob said (0: not known)
  std::set<uint64_t> printed_;
};

}  // namespace

absl::Status ValidateOptions(const LoadgenOptions& o) {
  auto bad = [](absl::string_view flag, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
  };
  if (o.shepherd.empty()) return bad("shepherd", "required (HOST:PORT)");
  if (o.workers < 1 || o.workers > 4096) return bad("workers", "must be 1..4096");
  if (o.id_prefix.empty() || o.id_prefix.size() > 100) return bad("id_prefix", "must be 1..100 characters");
  if (!(o.compute_s >= 0) || !std::isfinite(o.compute_s)) return bad("compute_s", "must be >= 0");
  if (o.rounds < 0) return bad("rounds", "must be >= 0");
  if (!(o.max_seconds > 0)) return bad("max_seconds", "must be > 0");
  if (!o.job_file.empty() && !o.job_id.empty()) return bad("job", "give --job (submit) or --job_id (attach), not both");
  if (o.shepherd_pid < 0) return bad("shepherd_pid", "must be a process id");
  if (!(o.max_shepherd_rss_gib >= 0)) return bad("max_shepherd_rss_gib", "must be >= 0");
  if (!(o.delta_scale > 0) || !std::isfinite(o.delta_scale)) return bad("delta_scale", "must be finite and > 0");
  if (!(o.drop_rate >= 0 && o.drop_rate <= 1)) return bad("drop_rate", "must be in [0, 1]");
  if (o.reconnect_ms < 0) return bad("reconnect_ms", "must be >= 0");
  if (o.slow_senders < 0 || o.slow_senders > o.workers) return bad("slow_senders", "must be 0..--workers");
  if (o.slow_senders > 0 && !(o.slow_mbit > 0)) return bad("slow_mbit", "must be > 0 with --slow_senders");
  if (!o.stall_rounds.empty() && !(o.stall_s > 0)) return bad("stall_s", "must be > 0 with --stall_rounds");
  if (o.stall_workers < 0 || o.stall_workers > o.workers) return bad("stall_workers", "must be 0..--workers");
  return absl::OkStatus();
}

absl::StatusOr<LoadgenReport> RunLoadgen(const LoadgenOptions& o) {
  if (absl::Status s = ValidateOptions(o); !s.ok()) return s;
  absl::StatusOr<JobClient> admin = JobClient::Create(o.shepherd, o.credentials);
  if (!admin.ok()) return admin.status();
  std::string job_id = o.job_id;
  bool submitted = false;
  if (!o.job_file.empty()) {
    absl::StatusOr<std::string> id = admin->Submit(o.job_file);
    if (!id.ok()) return id.status();
    job_id = *id;
    submitted = true;
    spdlog::info("submitted {} as job {}", o.job_file, job_id);
  }

  TimerQueue timers;
  RoundTimeline timeline;
  DeltaSource deltas({.seed = o.seed, .scale = o.delta_scale});
  FleetContext ctx;
  ctx.options = &o;
  ctx.timers = &timers;
  ctx.timeline = &timeline;
  ctx.deltas = &deltas;

  std::vector<std::unique_ptr<SimWorker>> workers;
  for (int64_t i = 1; i <= o.workers; ++i) {
    grpc::ChannelArguments args;
    ApplyStreamChannelOptions(&args);
    // One TCP connection per simulated worker, as real workers have: a channel of its own
    // subchannel pool (else equal channels share one connection).
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = auth::MakeChannel(o.shepherd, o.credentials, args);
    if (!channel.ok()) return channel.status();
    Behaviour b;
    if (i <= o.slow_senders) b.slow_mbit = o.slow_mbit;
    if (i > o.workers - o.stall_workers) b.stall_rounds.insert(o.stall_rounds.begin(), o.stall_rounds.end());
    workers.push_back(std::make_unique<SimWorker>(static_cast<int>(i), &ctx, *std::move(channel), std::move(b)));
  }
  for (auto& w : workers) w->Start();

  Monitor monitor(o, &ctx, &timeline, &*admin, job_id);
  absl::StatusOr<std::string> why = monitor.Run();

  ctx.stopping = true;
  for (auto& w : workers) w->Stop();
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  for (auto& w : workers) {
    while (!w->finished() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  LoadgenReport report;
  report.shepherd = o.shepherd;
  report.workers = o.workers;
  report.compute_s = o.compute_s;
  report.shepherd_pid = o.shepherd_pid;
  report.rows = monitor.Finish();
  report.job_id = monitor.job_id();
  if (why.ok()) {
    report.end_reason = *why;
  } else {
    report.error = why.status().ToString();
    report.end_reason = "failed";
  }
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    report.parameters = ctx.parameters;
  }
  if (std::shared_ptr<const SyntheticDelta> d = deltas.latest(); d != nullptr) report.delta_bytes = d->data_bytes();
  timers.Stop();
  bool all_done = true;
  for (auto& w : workers) all_done = all_done && w->finished();
  if (!all_done) {
    // A reactor gRPC has not finished with must outlive this function: keep the workers.
    spdlog::warn("some simulated workers' streams did not end within 15 s");
    for (auto& w : workers) (void)w.release();
  }
  if (submitted && o.cancel_at_end && !monitor.job_ended()) {
    // (The job may have ended by itself meanwhile: its last round was the one awaited.)
    absl::StatusOr<v1::Job> job = admin->Get(job_id);
    const bool ended = job.ok() && JobEnded(job->state());
    if (absl::Status s = ended ? absl::OkStatus() : admin->Cancel(job_id, "pcp-loadgen finished"); !s.ok()) {
      spdlog::warn("cancelling job {}: {}", job_id, s.message());
    }
  }
  return report;
}

}  // namespace pcp::loadgen
