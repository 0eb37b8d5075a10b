#include "pcp/pcpctl/pcpctl.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/auth/tls_failures.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/history/round_record_format.h"
#include "pcp/pcpctl/format.h"
#include "pcp/pcpctl/loss_plot.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/v1/admin.grpc.pb.h"

namespace pcp::pcpctl {
namespace {

constexpr char kUsage[] =
    "the PCP admin CLI (talks to the shepherd's Admin service)\n"
    "\n"
    "usage: pcpctl [--shepherd=HOST:PORT] COMMAND [ARGS] [FLAGS]\n"
    "\n"
    "commands:\n"
    "  submit JOB.yaml        queue a job (the shepherd validates it); --quiet prints only its id\n"
    "  jobs                   list jobs, newest first (--limit=N)\n"
    "  status JOB_ID          one job in detail (--yaml: with its effective configuration; --json: as JSON)\n"
    "  cancel JOB_ID          cancel a queued or running job (--reason=TEXT)\n"
    "  watch JOB_ID           follow a job to its end; exit 0 completed, 3 failed, 4 cancelled\n"
    "  workers                list worker slots (by supervisor id; --json: as JSON)\n"
    "  restart SUPERVISOR_ID  restart that supervisor's worker (--reason, --grace_ms)\n"
    "  drain SUPERVISOR_ID    stop that supervisor's worker and keep it stopped\n"
    "  sample [JOB_ID]        generate text from a job's parameters (--prompt, --max_new_tokens,\n"
    "                         --temperature, --top_k, --seed)\n"
    "  cluster                the shepherd and cluster at a glance\n"
    "  history JOB_ID         the job's record of every round (--csv or --json for CSV / JSON lines)\n"
    "  plot JOB_ID            train and val loss vs rounds and vs tokens, as a PNG (--out=FILE,\n"
    "                         default loss.png); needs no Prometheus\n"
    "\n"
    "The shepherd's address: --shepherd, else $PCP_SHEPHERD, else 127.0.0.1:7070.\n"
    "TLS: --ca (else $PCP_CA) verifies the shepherd; --cert/--key (else $PCP_CERT/$PCP_KEY) for mTLS.\n"
    "Token: --token_file (else $PCP_TOKEN_FILE): a file, or env:NAME / credential:NAME; the token is\n"
    "sent as 'authorization: Bearer ...' and never read from the command line.\n"
    "Every call has a deadline (--timeout=SECONDS, default 30).\n";

std::chrono::system_clock::time_point DeadlineAfter(absl::Duration d) { return absl::ToChronoTime(absl::Now() + d); }

class Cli {
 public:
  Cli(const PcpctlOptions& options, std::shared_ptr<grpc::Channel> channel, std::FILE* out, std::FILE* err)
      : options_(options), out_(out), err_(err), channel_(std::move(channel)) {
    stub_ = v1::Admin::NewStub(channel_);
  }

  int Run(const std::string& command, const std::vector<std::string>& operands) {
    command_ = command;
    struct Entry {
      const char* name;
      size_t min_operands, max_operands;
      int (Cli::*run)(const std::vector<std::string>&);
    };
    static constexpr Entry kCommands[] = {
        {"submit", 1, 1, &Cli::Submit},       {"jobs", 0, 0, &Cli::Jobs},       {"status", 1, 1, &Cli::Status},
        {"cancel", 1, 1, &Cli::Cancel},       {"watch", 1, 1, &Cli::Watch},     {"workers", 0, 0, &Cli::Workers},
        {"restart", 1, 1, &Cli::Restart},     {"drain", 1, 1, &Cli::Drain},     {"sample", 0, 1, &Cli::Sample},
        {"cluster", 0, 0, &Cli::ClusterInfo}, {"history", 1, 1, &Cli::History}, {"plot", 1, 1, &Cli::Plot},
    };
    for (const Entry& entry : kCommands) {
      if (command != entry.name) continue;
      if (operands.size() < entry.min_operands || operands.size() > entry.max_operands) {
        std::fprintf(err_, "pcpctl %s: expected %s, got %zu argument(s); see pcpctl --help\n", command.c_str(),
                     entry.max_operands == 0   ? "no arguments"
                     : entry.min_operands == 0 ? "at most one argument"
                                               : "one argument",
                     operands.size());
        return kExitUsage;
      }
      return (this->*entry.run)(operands);
    }
    std::fprintf(err_, "pcpctl: unknown command '%s'; see pcpctl --help\n", command.c_str());
    return kExitUsage;
  }

 private:
  // Runs one unary Admin call with the configured deadline.
  template <typename Request, typename Response>
  absl::Status Call(grpc::Status (v1::Admin::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                    const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(DeadlineAfter(options_.timeout));
    return FromGrpcStatus((stub_.get()->*method)(&context, request, response));
  }

  // One line on `err`: the shepherd's message as is, plus a hint where one helps.
  int Fail(const absl::Status& status) {
    std::string message(status.message());
    if (status.code() == absl::StatusCode::kUnavailable && channel_->GetState(false) != GRPC_CHANNEL_READY) {
      // A refused connection or TLS handshake says which; anything else keeps the old hint.
      const std::string why =
          auth::DescribeConnectFailure(message, options_.credentials.tls.enabled(), options_.shepherd);
      message = why.empty() ? absl::StrCat("cannot reach the shepherd at ", options_.shepherd, " (", message,
                                           "); is it running? Set --shepherd or $", kShepherdEnv)
                            : absl::StrCat("cannot connect: ", why, " (gRPC: ", message, ")");
    } else if (status.code() == absl::StatusCode::kDeadlineExceeded) {
      message =
          absl::StrCat(message, " (no answer within ", absl::FormatDuration(options_.timeout), "; see --timeout)");
    } else if (message.empty()) {
      message = absl::StatusCodeToString(status.code());
    }
    std::fprintf(err_, "pcpctl %s: %s\n", command_.c_str(), message.c_str());
    return kExitError;
  }

  void Print(const std::string& text) {
    std::fputs(text.c_str(), out_);
    std::fflush(out_);
  }

  int Submit(const std::vector<std::string>& operands) {
    const std::string& path = operands[0];
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return Fail(text.status());
    v1::SubmitJobRequest request;
    request.set_yaml(*std::move(text));
    request.set_file_name(path);
    std::error_code ec;
    std::filesystem::path absolute = std::filesystem::absolute(path, ec);
    if (!ec) request.set_base_dir(absolute.lexically_normal().parent_path().string());
    v1::SubmitJobResponse response;
    if (absl::Status s = Call(&v1::Admin::Stub::SubmitJob, request, &response); !s.ok()) return Fail(s);
    if (options_.quiet) {
      Print(response.job_id() + "\n");
    } else {
      Print(absl::StrCat("submitted ", response.job_id(), " (", response.name(), "), ",
                         response.queue_position() == 0
                             ? std::string("starts now")
                             : absl::StrCat(response.queue_position(), " ahead in the queue"),
                         "\nfollow it with: pcpctl watch ", response.job_id(), "\n"));
    }
    return kExitOk;
  }

  int Jobs(const std::vector<std::string>&) {
    v1::ListJobsRequest request;
    request.set_limit(options_.limit);
    v1::ListJobsResponse response;
    if (absl::Status s = Call(&v1::Admin::Stub::ListJobs, request, &response); !s.ok()) return Fail(s);
    Print(FormatJobsTable(response));
    return kExitOk;
  }

  int Status(const std::vector<std::string>& operands) {
    v1::GetJobRequest request;
    request.set_job_id(operands[0]);
    v1::Job job;
    if (absl::Status s = Call(&v1::Admin::Stub::GetJob, request, &job); !s.ok()) return Fail(s);
    Print(options_.json ? FormatJson(job) : FormatJobDetails(job, options_.show_yaml));
    return kExitOk;
  }

  int Cancel(const std::vector<std::string>& operands) {
    v1::CancelJobRequest request;
    request.set_job_id(operands[0]);
    request.set_reason(options_.reason);
    v1::Job job;
    if (absl::Status s = Call(&v1::Admin::Stub::CancelJob, request, &job); !s.ok()) return Fail(s);
    std::string line = absl::StrCat(job.job_id(), ": ", JobStateName(job.state()));
    if (!job.reason().empty()) absl::StrAppend(&line, " (", job.reason(), ")");
    if (!job.checkpoint_path().empty()) absl::StrAppend(&line, "; last checkpoint ", job.checkpoint_path());
    Print(line + "\n");
    return kExitOk;
  }

  // Follows the job to its end. If the stream breaks with UNAVAILABLE after it had worked
  // (the shepherd restarting), reconnects with backoff for up to reconnect_timeout: the
  // new stream starts with a fresh snapshot, so nothing is missed that matters.
  int Watch(const std::vector<std::string>& operands) {
    v1::WatchJobRequest request;
    request.set_job_id(operands[0]);
    bool tty = options_.tty.has_value() ? *options_.tty : isatty(fileno(out_)) != 0;
    WatchPrinter printer(out_, tty);
    const absl::Time deadline = absl::Now() + options_.watch_timeout;
    bool connected_once = false;
    absl::Time unavailable_since = absl::InfiniteFuture();
    absl::Duration backoff = absl::Milliseconds(200);
    while (true) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(deadline));
      std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader = stub_->WatchJob(&context, request);
      v1::JobEvent event;
      while (reader->Read(&event)) {
        connected_once = true;
        unavailable_since = absl::InfiniteFuture();
        backoff = absl::Milliseconds(200);
        printer.OnEvent(event);
      }
      absl::Status status = FromGrpcStatus(reader->Finish());
      if (printer.has_result()) break;
      if (status.ok()) {
        printer.Finish();
        return Fail(absl::InternalError(absl::StrCat("the watch stream of ", operands[0], " ended without a result")));
      }
      if (!IsRetryable(status) || !connected_once || absl::Now() >= deadline) {
        printer.Finish();
        return Fail(status);
      }
      if (unavailable_since == absl::InfiniteFuture()) {
        unavailable_since = absl::Now();
        printer.Note(absl::StrCat("shepherd unavailable (", status.message(), "); reconnecting for up to ",
                                  absl::FormatDuration(options_.reconnect_timeout)));
      } else if (absl::Now() - unavailable_since > options_.reconnect_timeout) {
        return Fail(status);
      }
      absl::SleepFor(backoff);
      backoff = std::min(backoff * 2, absl::Seconds(2));
    }
    switch (printer.result().state()) {
      case v1::JOB_STATE_COMPLETED: return kExitOk;
      case v1::JOB_STATE_CANCELLED: return kExitJobCancelled;
      default: return kExitJobFailed;
    }
  }

  int Workers(const std::vector<std::string>&) {
    v1::ListWorkersResponse response;
    if (absl::Status s = Call(&v1::Admin::Stub::ListWorkers, v1::ListWorkersRequest(), &response); !s.ok()) {
      return Fail(s);
    }
    Print(options_.json ? FormatJson(response) : FormatWorkersTable(response));
    return kExitOk;
  }

  int WorkerCommand(const std::string& supervisor_id, bool drain) {
    v1::WorkerCommandRequest request;
    request.set_supervisor_id(supervisor_id);
    request.set_reason(options_.reason.empty() ? "pcpctl " + command_ : options_.reason);
    request.set_grace_ms(options_.grace_ms);
    v1::WorkerCommandResponse response;
    auto method = drain ? &v1::Admin::Stub::DrainWorker : &v1::Admin::Stub::RestartWorker;
    if (absl::Status s = Call(method, request, &response); !s.ok()) return Fail(s);
    if (response.code() != 0) {
      return Fail(absl::Status(static_cast<absl::StatusCode>(response.code()),
                               absl::StrCat("supervisor ", supervisor_id, ": ", response.message())));
    }
    Print(absl::StrCat(supervisor_id, ": ", drain ? "drained" : "restarted", " (command ", response.command_id(), ")",
                       response.message().empty() ? "" : ": ", response.message(), "\n"));
    return kExitOk;
  }
  int Restart(const std::vector<std::string>& operands) { return WorkerCommand(operands[0], false); }
  int Drain(const std::vector<std::string>& operands) { return WorkerCommand(operands[0], true); }

  int Sample(const std::vector<std::string>& operands) {
    v1::SampleRequest request;
    if (!operands.empty()) request.set_job_id(operands[0]);
    request.set_prompt(options_.prompt);
    request.set_max_new_tokens(options_.max_new_tokens);
    if (options_.temperature.has_value()) {
      if (!(*options_.temperature > 0)) {
        std::fprintf(err_, "pcpctl sample: --temperature must be > 0, got %g\n", *options_.temperature);
        return kExitUsage;
      }
      request.set_temperature(static_cast<float>(*options_.temperature));
    }
    if (options_.top_k.has_value()) {
      if (*options_.top_k < 0 || *options_.top_k > UINT32_MAX) {
        std::fprintf(err_, "pcpctl sample: --top_k must be >= 0, got %lld\n", static_cast<long long>(*options_.top_k));
        return kExitUsage;
      }
      request.set_top_k(static_cast<uint32_t>(*options_.top_k));
    }
    request.set_seed(options_.seed);
    v1::SampleResponse response;
    if (absl::Status s = Call(&v1::Admin::Stub::Sample, request, &response); !s.ok()) return Fail(s);
    std::string text = options_.prompt + response.text();
    if (text.empty() || text.back() != '\n') text += '\n';
    Print(text);
    if (!options_.quiet) {
      std::fprintf(err_, "(%s, round %llu%s, %u tokens)\n", response.job_id().c_str(),
                   static_cast<unsigned long long>(response.round()),
                   response.final_parameters() ? ", final parameters" : "", response.tokens_generated());
    }
    return kExitOk;
  }

  int ClusterInfo(const std::vector<std::string>&) {
    v1::Cluster cluster;
    if (absl::Status s = Call(&v1::Admin::Stub::GetCluster, v1::GetClusterRequest(), &cluster); !s.ok()) {
      return Fail(s);
    }
    Print(FormatCluster(cluster));
    return kExitOk;
  }

  // Every page of the job's history.
  absl::StatusOr<std::vector<v1::RoundRecord>> FetchHistory(const std::string& job_id) {
    std::vector<v1::RoundRecord> records;
    v1::GetJobHistoryRequest request;
    request.set_job_id(job_id);
    request.set_limit(kHistoryPage);
    while (true) {
      v1::GetJobHistoryResponse page;
      PCP_RETURN_IF_ERROR(Call(&v1::Admin::Stub::GetJobHistory, request, &page));
      for (v1::RoundRecord& r : *page.mutable_records()) records.push_back(std::move(r));
      if (page.next_after_round() == 0 || page.next_after_round() <= request.after_round()) break;
      request.set_after_round(page.next_after_round());
    }
    return records;
  }

  int History(const std::vector<std::string>& operands) {
    if (options_.csv && options_.json) {
      std::fprintf(err_, "pcpctl history: --csv and --json exclude each other\n");
      return kExitUsage;
    }
    absl::StatusOr<std::vector<v1::RoundRecord>> records = FetchHistory(operands[0]);
    if (!records.ok()) return Fail(records.status());
    std::string text;
    if (options_.csv) {
      text = history::RecordsCsvHeader();
      for (const v1::RoundRecord& r : *records) text += history::RecordCsvRow(r);
    } else if (options_.json) {
      for (const v1::RoundRecord& r : *records) text += history::RecordJsonLine(r);
    } else {
      text = FormatHistoryTable(*records);
    }
    Print(text);
    return kExitOk;
  }

  int Plot(const std::vector<std::string>& operands) {
    if (options_.out.empty()) {
      std::fprintf(err_, "pcpctl plot: --out is empty; expected the PNG's path\n");
      return kExitUsage;
    }
    v1::GetJobRequest get;
    get.set_job_id(operands[0]);
    v1::Job job;
    if (absl::Status s = Call(&v1::Admin::Stub::GetJob, get, &job); !s.ok()) return Fail(s);
    absl::StatusOr<std::vector<v1::RoundRecord>> records = FetchHistory(operands[0]);
    if (!records.ok()) return Fail(records.status());
    std::string title = absl::StrCat("PCP ", job.job_id(), " (", job.name(), "): ", records->size(), " rounds");
    if (!records->empty() && records->back().round() != records->size()) {
      absl::StrAppend(&title, " shown of ", records->back().round());
    }
    absl::StatusOr<std::string> png = LossPlotPng(*records, title);
    if (!png.ok()) return Fail(png.status());
    if (absl::Status s = WriteFileAtomic(options_.out, *png); !s.ok()) return Fail(s);
    Print(absl::StrCat(options_.out, "\n"));
    return kExitOk;
  }

  static constexpr uint32_t kHistoryPage = 1000;

  const PcpctlOptions& options_;
  std::FILE* out_;
  std::FILE* err_;
  std::string command_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Admin::Stub> stub_;
};

}  // namespace

std::string DefaultShepherdAddress() {
  const char* env = std::getenv(kShepherdEnv);
  return env != nullptr && env[0] != '\0' ? std::string(env) : std::string(kDefaultShepherd);
}

const char* UsageText() { return kUsage; }

int RunPcpctl(const std::vector<std::string>& args, const PcpctlOptions& options, std::FILE* out, std::FILE* err) {
  if (args.empty()) {
    std::fprintf(err, "pcpctl: %s", kUsage);
    return kExitUsage;
  }
  if (options.shepherd.empty()) {
    std::fprintf(err, "pcpctl: --shepherd is empty; expected HOST:PORT\n");
    return kExitUsage;
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      auth::MakeChannel(options.shepherd, options.credentials, grpc::ChannelArguments());
  if (!channel.ok()) {
    std::fprintf(err, "pcpctl: %s\n", std::string(channel.status().message()).c_str());
    return kExitUsage;
  }
  Cli cli(options, *std::move(channel), out, err);
  return cli.Run(args[0], std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace pcp::pcpctl
