// pcp-loadgen: M simulated workers against a real shepherd, and what each round cost it
// (see pcp/loadgen/loadgen.h for what a simulated worker does, and round_table.h for the
// columns).
//
//   pcp-loadgen --shepherd=127.0.0.1:7070 --workers=32 --job=job.yaml --shepherd_pid=$(pidof pcp-shepherd)
//               [--compute_s=2] [--rounds=N] [--max_seconds=600] [--json=FILE]
//               [--drop_rate=p] [--slow_senders=k --slow_mbit=x] [--stall_rounds=2,4 --stall_s=5 [--stall_workers=1]]
//               [--tls_ca=ca.pem [--tls_cert=node.pem --tls_key=node.key]] [--token_source=env:PCP_TOKEN]
//   pcp-loadgen --shepherd=... --workers=8 [--job_id=job-0003]     attach: serve whatever job
//                                                                   the shepherd assigns
// Exit status: 0 when the run ended by itself (rounds done, job ended, --max_seconds) or by
// SIGTERM / SIGINT (the report is printed either way), 1 when it failed, 2 for bad flags.
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "pcp/auth/secret.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/file.h"
#include "pcp/base/termination_signal.h"
#include "pcp/loadgen/loadgen.h"
#include "pcp/rpc/stream_memory.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, shepherd, "127.0.0.1:7070", "the shepherd's HOST:PORT");
ABSL_FLAG(int64_t, workers, 4, "simulated workers (Training.Connect streams)");
ABSL_FLAG(std::string, id_prefix, "loadgen", "supervisor ids are PREFIX-0001, PREFIX-0002, ...");
ABSL_FLAG(double, compute_s, 2.0, "simulated compute time per round, in s");
ABSL_FLAG(int64_t, rounds, 0, "stop after this many rounds (0 = when the job ends)");
ABSL_FLAG(double, max_seconds, 600, "stop after this many seconds in any case");
ABSL_FLAG(std::string, job, "", "submit this job file (Admin.SubmitJob); empty = attach to the job assigned");
ABSL_FLAG(std::string, job_id, "", "attach: report this job (default: the one the workers are assigned)");
ABSL_FLAG(bool, cancel_at_end, true, "cancel a job submitted here that is still running at the end");
ABSL_FLAG(int64_t, shepherd_pid, 0, "the shepherd's process id, for RSS and CPU from /proc (0 = none)");
ABSL_FLAG(double, max_shepherd_rss_gib, 0, "stop once the shepherd's VmRSS passes this many GiB (0 = no limit)");
ABSL_FLAG(std::string, json, "", "also write the report as JSON to this file");
ABSL_FLAG(uint64_t, seed, 1, "seed of the synthetic delta and of every fault's choices");
ABSL_FLAG(double, delta_scale, 1e-4, "synthetic delta values are uniform in [-scale, scale]");
ABSL_FLAG(double, drop_rate, 0, "per worker and round: probability of dropping the stream at a random point");
ABSL_FLAG(int64_t, reconnect_ms, 500, "a dropped worker reconnects (incarnation + 1) after this many ms");
ABSL_FLAG(int64_t, slow_senders, 0, "the first k workers send their delta at --slow_mbit");
ABSL_FLAG(double, slow_mbit, 0, "send rate of the slow senders, Mbit/s");
ABSL_FLAG(std::vector<std::string>, stall_rounds, {}, "rounds in which the stalling workers stall (comma-separated)");
ABSL_FLAG(double, stall_s, 0, "how long a stall lasts: no reads, writes or heartbeats, in s");
ABSL_FLAG(int64_t, stall_workers, 1, "how many workers (the last ones) stall in --stall_rounds");
ABSL_FLAG(std::string, tls_ca, "", "CA certificate (PEM) that signed the shepherd's certificate; set = TLS");
ABSL_FLAG(std::string, tls_cert, "", "client certificate (PEM) for mTLS; may be credential:NAME");
ABSL_FLAG(std::string, tls_key, "", "client private key (PEM) for mTLS; may be credential:NAME");
ABSL_FLAG(std::string, token_source, "",
          "where the bearer token is (env:NAME, file:PATH or credential:NAME; never the token itself)");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn or error");

int main(int argc, char** argv) {
  pcp::KeepStreamBuffersInHeap();  // before gRPC allocates anything
  absl::SetProgramUsageMessage(
      "M simulated workers against a shepherd: pcp-loadgen --shepherd=HOST:PORT --workers=M [--job=FILE.yaml]");
  absl::ParseCommandLine(argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("loadgen"));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%L%$ loadgen] %v");
  spdlog::set_level(spdlog::level::from_str(absl::GetFlag(FLAGS_log_level)));

  pcp::loadgen::LoadgenOptions o;
  o.shepherd = absl::GetFlag(FLAGS_shepherd);
  o.workers = absl::GetFlag(FLAGS_workers);
  o.id_prefix = absl::GetFlag(FLAGS_id_prefix);
  o.compute_s = absl::GetFlag(FLAGS_compute_s);
  o.rounds = absl::GetFlag(FLAGS_rounds);
  o.max_seconds = absl::GetFlag(FLAGS_max_seconds);
  o.job_file = absl::GetFlag(FLAGS_job);
  o.job_id = absl::GetFlag(FLAGS_job_id);
  o.cancel_at_end = absl::GetFlag(FLAGS_cancel_at_end);
  o.shepherd_pid = absl::GetFlag(FLAGS_shepherd_pid);
  o.max_shepherd_rss_gib = absl::GetFlag(FLAGS_max_shepherd_rss_gib);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.delta_scale = static_cast<float>(absl::GetFlag(FLAGS_delta_scale));
  o.drop_rate = absl::GetFlag(FLAGS_drop_rate);
  o.reconnect_ms = absl::GetFlag(FLAGS_reconnect_ms);
  o.slow_senders = absl::GetFlag(FLAGS_slow_senders);
  o.slow_mbit = absl::GetFlag(FLAGS_slow_mbit);
  for (const std::string& r : absl::GetFlag(FLAGS_stall_rounds)) {
    uint64_t round = 0;
    if (!absl::SimpleAtoi(r, &round) || round == 0) {
      std::fprintf(stderr, "pcp-loadgen: --stall_rounds: '%s' is not a round number (>= 1)\n", r.c_str());
      return 2;
    }
    o.stall_rounds.push_back(round);
  }
  o.stall_s = absl::GetFlag(FLAGS_stall_s);
  o.stall_workers = absl::GetFlag(FLAGS_stall_workers);
  o.credentials.tls = {.ca = absl::GetFlag(FLAGS_tls_ca),
                       .cert = absl::GetFlag(FLAGS_tls_cert),
                       .key = absl::GetFlag(FLAGS_tls_key)};
  if (absl::Status s = pcp::auth::ResolveTlsFiles("--tls", /*server=*/false, &o.credentials.tls); !s.ok()) {
    std::fprintf(stderr, "pcp-loadgen: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (const std::string source = absl::GetFlag(FLAGS_token_source); !source.empty()) {
    absl::StatusOr<std::string> token = pcp::auth::LoadSecret(source);
    if (!token.ok()) {
      std::fprintf(stderr, "pcp-loadgen: --token_source: %s\n", std::string(token.status().message()).c_str());
      return 2;
    }
    o.credentials.token = *std::move(token);
  }
  if (absl::Status s = pcp::loadgen::ValidateOptions(o); !s.ok()) {
    std::fprintf(stderr, "pcp-loadgen: %s\n", std::string(s.message()).c_str());
    return 2;
  }

  // SIGTERM / SIGINT end the run as any other end does: streams closed, the report printed.
  if (absl::Status s = pcp::InstallTerminationHandler(); !s.ok()) {
    std::fprintf(stderr, "pcp-loadgen: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  constexpr char kRunEnded[] = "the run ended";
  std::atomic<bool> interrupted{false};
  o.interrupt = &interrupted;
  std::thread signals([&] {
    const std::string why = pcp::WaitForTermination();
    if (why == kRunEnded) return;
    spdlog::warn("received {}: stopping", why);
    interrupted = true;
  });
  absl::StatusOr<pcp::loadgen::LoadgenReport> report = pcp::loadgen::RunLoadgen(o);
  pcp::RequestTermination(kRunEnded);
  signals.join();
  if (!report.ok()) {
    std::fprintf(stderr, "pcp-loadgen: %s\n", report.status().ToString().c_str());
    return 1;
  }
  std::printf("\n%s", pcp::loadgen::FormatTable(*report).c_str());
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    if (absl::Status s = pcp::WriteFileAtomic(path, pcp::loadgen::ReportJson(*report).Serialize() + "\n"); !s.ok()) {
      std::fprintf(stderr, "pcp-loadgen: --json: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  return report->error.empty() ? 0 : 1;
}
