#include "pcp/worker/worker.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "connection.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/progress_report.h"
#include "pcp/base/status_macros.h"
#include "pcp/kernels/backend_factory.h"
#include "pcp/metrics/registry.h"
#include "pcp/netem/relay.h"
#include "pcp/rpc/channel_options.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/worker/delta_fault.h"
#include "pcp/worker/program_cache.h"
#include "pcp/worker/round_runner.h"
#include "pcp/worker/shard_loader.h"
#include "spdlog/spdlog.h"

namespace pcp::worker {
namespace {

using Clock = std::chrono::steady_clock;

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Join refusals after which reconnecting cannot help: the worker exits (its supervisor
// decides). A stream that ends for any reason after a successful Join is reconnected.
bool Permanent(const absl::Status& s) {
  return absl::IsFailedPrecondition(s) || absl::IsUnauthenticated(s) || absl::IsInvalidArgument(s) ||
         absl::IsPermissionDenied(s) || absl::IsUnimplemented(s);
}

// The current assignment and what has arrived for it.
struct Assignment {
  v1::Assignment msg;
  std::vector<TensorSpec> specs;
  std::optional<BlobAssembler> program;  // while the program text is arriving
  std::optional<BlobAssembler> shard;    // while an inline shard is arriving
  std::string shard_bytes;
  bool ready = false;
  ProgramCache::Entry* entry = nullptr;
  TokenSequence tokens;
  bool reset_optimizer = false;
  // θ for a round.
  uint64_t theta_round = 0;
  std::optional<TensorListAssembler> theta_assembler;
  std::vector<Tensor> theta;
};

}  // namespace

struct Worker::Impl {
  WorkerOptions options;
  DataRoots data_roots;
  DeltaFault fault;  // testing only
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ProgramCache> cache;
  std::unique_ptr<netem::Relay> relay;  // the emulated link, if any; outlives the channel
  std::shared_ptr<grpc::Channel> channel;
  v1::Backend backend_enum = v1::BACKEND_CPU;

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  Connection* conn = nullptr;  // the current connection, for Stop()
  bool joined = false;         // conn has its JoinAck

  // Cancels as the reader thread sees them, before the main thread gets to the message:
  // the round (0 = the whole assignment) of the `epoch`-th Assignment of the stream. A round
  // checks them between steps.
  struct Cancels {
    std::mutex mu;
    uint64_t epoch = 0;  // Assignments seen by the reader
    uint64_t cancelled_epoch = 0, cancelled_round = 0;
    uint64_t dropped_epoch = 0;  // Cancel(0)
    void Peek(const v1::ShepherdMessage& m) {
      std::lock_guard<std::mutex> lock(mu);
      if (m.has_assignment()) ++epoch;
      if (m.has_cancel()) {
        if (m.cancel().round() == 0) {
          dropped_epoch = epoch;
        } else {
          cancelled_epoch = epoch;
          cancelled_round = m.cancel().round();
        }
      }
    }
    bool Cancelled(uint64_t my_epoch, uint64_t round) {
      std::lock_guard<std::mutex> lock(mu);
      return dropped_epoch == my_epoch || (cancelled_epoch == my_epoch && cancelled_round == round);
    }
    void Reset() {
      std::lock_guard<std::mutex> lock(mu);
      epoch = cancelled_epoch = cancelled_round = dropped_epoch = 0;
    }
  };
  Cancels cancels;
  uint64_t epoch = 0;  // Assignments the main thread has taken on this stream

  std::optional<Assignment> assignment;

  absl::Status Session(Connection& conn);
  absl::Status Handle(Connection& conn, Connection::Incoming& in);
  absl::Status OnAssignment(Connection& conn, const v1::Assignment& a);
  absl::Status MaybeReady(Connection& conn);
  absl::Status OnStartRound(Connection& conn, const v1::StartRound& start);
  v1::Join MakeJoin() const;
};

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;

absl::StatusOr<std::unique_ptr<Worker>> Worker::Create(WorkerOptions options) {
  if (options.supervisor_id.empty()) return absl::InvalidArgumentError("--supervisor_id is required");
  if (options.shepherd.empty()) return absl::InvalidArgumentError("--shepherd is required (HOST:PORT)");
  auto impl = std::make_unique<Impl>();
  PCP_ASSIGN_OR_RETURN(impl->fault, DeltaFault::Parse(options.fault_delta));
  if (!impl->fault.empty()) {
    spdlog::warn("TESTING ONLY: --fault_delta={}: the Δs this worker sends are corrupted", options.fault_delta);
  }
  impl->options = std::move(options);
  PCP_ASSIGN_OR_RETURN(impl->data_roots,
                       DataRoots::Confined(impl->options.data_roots, impl->options.max_data_file_bytes),
                       _ << "--data_roots");
  PCP_ASSIGN_OR_RETURN(impl->backend, CreateBackend(impl->options.backend, impl->options.threads),
                       _ << "--backend " << impl->options.backend);
  impl->backend_enum = impl->backend->Name() == "vulkan" ? v1::BACKEND_VULKAN : v1::BACKEND_CPU;
  impl->cache = std::make_unique<ProgramCache>(*impl->backend, impl->options.cache_dir);
  grpc::ChannelArguments args;
  ApplyStreamChannelOptions(&args);
  // gRPC's own reconnection follows the worker's backoff, so a shepherd that comes back is
  // found within one backoff step.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(absl::ToInt64Milliseconds(impl->options.backoff.initial)));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(absl::ToInt64Milliseconds(impl->options.backoff.initial)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(absl::ToInt64Milliseconds(impl->options.backoff.max)));
  std::string target = impl->options.shepherd;
  PCP_RETURN_IF_ERROR(netem::ValidateEmulatedLink(impl->options.link, "--link_"));
  if (impl->options.link.enabled()) {
    // The plaintext-token rule must judge the shepherd's address, not the relay's loopback one.
    const auth::ClientCredentials& creds = impl->options.credentials;
    if (!creds.tls.enabled() && !creds.token.empty() && !auth::IsLoopbackAddress(target)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "refusing to send a token in clear text to ", target, ": give a CA (TLS) for a non-loopback shepherd"));
    }
    PCP_ASSIGN_OR_RETURN(impl->relay, netem::Relay::Create(netem::ToRelayOptions(impl->options.link, target)),
                         _ << "--shepherd with --link_*");
    // The channel dials the relay but names the shepherd: in :authority and, with TLS, as the
    // name its certificate must carry (gRPC checks the default authority).
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, target);
    spdlog::info("emulated link: {} (relay {} -> shepherd {})", netem::Describe(impl->options.link),
                 impl->relay->address(), target);
    target = impl->relay->address();
  }
  PCP_ASSIGN_OR_RETURN(impl->channel, auth::MakeChannel(target, impl->options.credentials, args));
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

void Worker::Stop() {
  impl_->stop = true;
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->conn != nullptr) {
    // Joined: the session loop leaves cleanly (abandoning a round). Still joining: give up.
    if (impl_->joined) {
      impl_->conn->Interrupt();
    } else {
      impl_->conn->Abort();
    }
  }
  impl_->cv.notify_all();
}

v1::Join Worker::Impl::MakeJoin() const {
  v1::Join join;
  join.set_protocol_version(v1::PROTOCOL_VERSION_1);
  join.set_supervisor_id(options.supervisor_id);
  join.set_pid(static_cast<int32_t>(getpid()));
  join.set_incarnation(options.incarnation);
  join.set_backend(backend_enum);
  join.set_device(backend->DeviceDescription());
  join.set_threads(static_cast<uint32_t>(options.threads));
  join.set_version(PCP_VERSION);
  for (const std::string& h : cache->Hashes()) join.add_cached_program_hashes(h);
  join.set_host(HostName());
  return join;
}

absl::Status Worker::Run() {
  Impl& w = *impl_;
  Backoff backoff(w.options.backoff);
  metrics::Get(metrics::kWorkerBackendInfo, {w.backend->Name(), w.backend->DeviceDescription()}).Set(1);
  spdlog::info("worker {} (incarnation {}): backend {} ({}), shepherd {}", w.options.supervisor_id,
               w.options.incarnation, w.backend->Name(), w.backend->DeviceDescription(), w.options.shepherd);
  while (!w.stop) {
    Connection conn(w.channel);
    w.cancels.Reset();
    w.epoch = 0;
    w.assignment.reset();  // a new stream starts with a new Assignment
    conn.SetPeekHook([&w](const v1::ShepherdMessage& m) { w.cancels.Peek(m); });
    {
      std::lock_guard<std::mutex> lock(w.mu);
      if (w.stop) break;
      w.conn = &conn;
      w.joined = false;
    }
    absl::Status opened = conn.Open(w.MakeJoin(), std::chrono::milliseconds(w.options.join_timeout_ms));
    {
      std::lock_guard<std::mutex> lock(w.mu);
      w.joined = opened.ok();
      if (!opened.ok()) w.conn = nullptr;
    }
    if (w.stop && !opened.ok()) break;
    absl::Status ended;
    if (opened.ok()) {
      backoff.Reset();
      spdlog::info("joined shepherd {} as {} (session {}, heartbeat {} ms)", w.options.shepherd,
                   w.options.supervisor_id, conn.ack().session_id(), conn.ack().heartbeat_interval_ms());
      ended = w.Session(conn);
      {
        std::lock_guard<std::mutex> lock(w.mu);
        w.conn = nullptr;
      }
      absl::Status closed = conn.Close();
      if (ended.ok()) ended = closed;
      if (w.stop) break;
      spdlog::warn("stream to the shepherd ended: {}", ended.ToString());
      if (!ended.ok()) metrics::Get(metrics::kWorkerErrorsTotal, {"stream"}).Increment();
    } else {
      spdlog::warn("cannot join shepherd {}: {}", w.options.shepherd, opened.ToString());
      metrics::Get(metrics::kWorkerErrorsTotal, {"connect"}).Increment();
      // A refused Join (wrong version, token or id) stays refused; anything else may pass.
      if (Permanent(opened)) return opened;
    }
    const auto wait = backoff.Next();
    spdlog::info("reconnecting in {} ms (attempt {})", absl::ToInt64Milliseconds(wait), backoff.attempt());
    std::unique_lock<std::mutex> lock(w.mu);
    w.cv.wait_for(lock, absl::ToChronoMilliseconds(wait), [&w] { return w.stop.load(); });
  }
  spdlog::info("worker {} stopped", w.options.supervisor_id);
  return absl::OkStatus();
}

absl::Status Worker::Impl::Session(Connection& conn) {
  Connection::Incoming in;
  while (!stop) {
    const Connection::Pop pop = conn.Next(&in, std::chrono::milliseconds(500));
    if (pop == Connection::Pop::kEnded) return conn.status();
    if (pop == Connection::Pop::kTimeout) continue;
    absl::Status s = Handle(conn, in);
    if (!s.ok()) {
      // The shepherd broke the protocol (or this worker cannot go on): say why, then drop the
      // stream; a fresh one starts clean.
      v1::WorkerMessage error;
      *error.mutable_error() = ErrorToProto(s);
      conn.Write(error);
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Worker::Impl::Handle(Connection& conn, Connection::Incoming& in) {
  const v1::ShepherdMessage& msg = in.message;
  switch (msg.kind_case()) {
    case v1::ShepherdMessage::kAssignment:
      return OnAssignment(conn, msg.assignment());
    case v1::ShepherdMessage::kProgramChunk: {
      if (!assignment || !assignment->program) return absl::FailedPreconditionError("program chunk without an Assignment that announced one");
      PCP_RETURN_IF_ERROR(assignment->program->Add(msg.program_chunk()), _ << "program");
      if (assignment->program->complete()) {
        PCP_ASSIGN_OR_RETURN(std::string text, assignment->program->Take());
        assignment->program.reset();
        PCP_RETURN_IF_ERROR(cache->AddText(assignment->msg.program_hash(), std::move(text)));
      }
      return MaybeReady(conn);
    }
    case v1::ShepherdMessage::kShardChunk: {
      if (!assignment || !assignment->shard) return absl::FailedPreconditionError("shard chunk without an Assignment with an inline shard");
      PCP_RETURN_IF_ERROR(assignment->shard->Add(msg.shard_chunk()), _ << "shard");
      if (assignment->shard->complete()) {
        PCP_ASSIGN_OR_RETURN(assignment->shard_bytes, assignment->shard->Take());
        assignment->shard.reset();
      }
      return MaybeReady(conn);
    }
    case v1::ShepherdMessage::kParameterChunk: {
      const v1::ParameterChunk& p = msg.parameter_chunk();
      if (!assignment || !assignment->ready) return absl::FailedPreconditionError("parameters before the assignment is ready");
      if (!assignment->theta_assembler || assignment->theta_round != p.round()) {
        assignment->theta_round = p.round();
        assignment->theta_assembler.emplace();
        assignment->theta_assembler->ExpectSpecs(assignment->specs);
        assignment->theta.clear();
      }
      // The data is still in gRPC's receive buffers (or, from a shepherd that sends it
      // inline, in the message): one copy, fused with the CRC check, into θ.
      PCP_RETURN_IF_ERROR(in.payload.empty() ? assignment->theta_assembler->Add(p.chunk())
                                             : assignment->theta_assembler->AddPieces(p.chunk(), in.payload.pieces()),
                          _ << "parameters of round " << p.round());
      if (assignment->theta_assembler->complete()) {
        PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> theta, assignment->theta_assembler->Take());
        for (NamedTensor& t : theta) assignment->theta.push_back(std::move(t.tensor));
      }
      return absl::OkStatus();
    }
    case v1::ShepherdMessage::kStartRound:
      return OnStartRound(conn, msg.start_round());
    case v1::ShepherdMessage::kCancel:
      if (msg.cancel().round() == 0) {
        spdlog::info("assignment dropped: {}", msg.cancel().reason());
        assignment.reset();
        conn.SetPhase(v1::WORKER_PHASE_IDLE, 0, 0);
      }
      return absl::OkStatus();  // a round's Cancel was seen by the peek hook
    case v1::ShepherdMessage::kError:
      spdlog::warn("the shepherd reports an error (code {}, round {}): {}", msg.error().code(), msg.error().round(),
                   msg.error().message());
      return absl::OkStatus();
    case v1::ShepherdMessage::kJoinAck:
      return absl::FailedPreconditionError("a second JoinAck");
    case v1::ShepherdMessage::kHeartbeat:
      return absl::OkStatus();
    case v1::ShepherdMessage::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("ShepherdMessage with no message set (unknown kind?)");
}

absl::Status Worker::Impl::OnAssignment(Connection& conn, const v1::Assignment& a) {
  ++epoch;
  Assignment next;
  next.msg = a;
  for (const v1::TensorSpec& s : a.parameters()) {
    PCP_ASSIGN_OR_RETURN(TensorSpec spec, TensorSpecFromProto(s), _ << "Assignment.parameters");
    next.specs.push_back(std::move(spec));
  }
  const v1::Hyperparameters& h = a.hyperparameters();
  if (h.inner_steps() == 0 || h.batch_size() == 0 || h.block_size() == 0) {
    return absl::InvalidArgumentError("Assignment.hyperparameters: inner_steps, batch_size and block_size must be > 0");
  }
  if (a.program_follows()) {
    next.program.emplace();
    next.program->Expect(a.program_hash(), static_cast<int64_t>(a.program_bytes()));
  } else if (!cache->Has(a.program_hash())) {
    return absl::FailedPreconditionError(absl::StrCat("program ", a.program_hash(), " is not cached here, and not sent"));
  }
  if (a.shard().has_inline_tokens()) {
    next.shard.emplace();
    next.shard->Expect("shard", static_cast<int64_t>(a.shard().inline_tokens().num_tokens() * 2));
  }
  spdlog::info("assignment: job {} ({}), slot {} of {}, program {} ({}), tau {}, batch {}x{}", a.job_id(),
               a.job_name(), a.worker_rank(), a.world_size(), a.program_hash().substr(0, 19),
               a.program_follows() ? "arriving" : "cached", h.inner_steps(), h.batch_size(), h.block_size());
  assignment = std::move(next);
  conn.SetPhase(v1::WORKER_PHASE_PREPARING, 0, 0);
  return MaybeReady(conn);
}

absl::Status Worker::Impl::MaybeReady(Connection& conn) {
  Assignment& a = *assignment;
  if (a.ready || a.program || a.shard) return absl::OkStatus();
  PCP_ASSIGN_OR_RETURN(a.tokens, LoadShard(a.msg.shard(), a.shard_bytes, data_roots), _ << "loading the shard");
  a.shard_bytes.clear();
  const v1::Hyperparameters& h = a.msg.hyperparameters();
  if (a.tokens.size() < static_cast<int64_t>(h.block_size()) + 1) {
    return absl::InvalidArgumentError(absl::StrCat("the shard has ", a.tokens.size(), " tokens, fewer than block_size + 1"));
  }
  absl::StatusOr<ProgramCache::Entry*> entry = cache->Get(a.msg.program_hash());
  if (!entry.ok()) {
    // This worker cannot run the program: tell the shepherd, keep the stream.
    spdlog::error("cannot prepare program {}: {}", a.msg.program_hash(), entry.status().message());
    metrics::Get(metrics::kWorkerErrorsTotal, {"compile"}).Increment();
    v1::WorkerMessage error;
    *error.mutable_error() = ErrorToProto(entry.status());
    conn.Write(error);
    assignment.reset();
    return absl::OkStatus();
  }
  a.entry = *entry;
  // The loop's AdamW state carries over only to the same assignment (a reconnect).
  const std::string owner = absl::StrCat(a.msg.job_id(), "/", a.msg.program_hash(), "/", a.msg.worker_rank(), "/",
                                         a.msg.world_size());
  a.reset_optimizer = a.entry->owner != owner;
  a.entry->owner = owner;
  if (a.entry->loop->num_params() != static_cast<int>(a.specs.size())) {
    return absl::InvalidArgumentError(absl::StrCat("the program takes ", a.entry->loop->num_params(),
                                                   " parameters, the assignment lists ", a.specs.size()));
  }
  a.ready = true;
  metrics::Get(metrics::kWorkerProgramCompileSeconds).Set(static_cast<double>(a.entry->compile_ms) / 1000.0);
  v1::WorkerMessage ready;
  v1::AssignmentReady* r = ready.mutable_ready();
  r->set_job_id(a.msg.job_id());
  r->set_program_hash(a.msg.program_hash());
  r->set_compile_ms(static_cast<uint64_t>(a.entry->compile_ms));
  r->set_shard_tokens(static_cast<uint64_t>(a.tokens.size()));
  conn.Write(ready);
  conn.SetPhase(v1::WORKER_PHASE_READY, 0, 0);
  spdlog::info("ready: program compiled in {} ms, {} shard tokens{}", a.entry->compile_ms, a.tokens.size(),
               a.reset_optimizer ? "" : " (AdamW state kept from before the reconnect)");
  return absl::OkStatus();
}

absl::Status Worker::Impl::OnStartRound(Connection& conn, const v1::StartRound& start) {
  if (!assignment || !assignment->ready) return absl::FailedPreconditionError("StartRound before the assignment is ready");
  Assignment& a = *assignment;
  const uint64_t r = start.round();
  if (a.theta_round != r || a.theta.size() != a.specs.size()) {
    return absl::FailedPreconditionError(absl::StrCat("StartRound ", r, " before its parameters were complete"));
  }
  const v1::Hyperparameters& h = a.msg.hyperparameters();
  if (start.learning_rates_size() != static_cast<int>(h.inner_steps())) {
    return absl::InvalidArgumentError(absl::StrCat("StartRound ", r, ": ", start.learning_rates_size(),
                                                   " learning rates for ", h.inner_steps(), " inner steps"));
  }
  RoundInput in{.round = r,
                .theta = std::move(a.theta),
                .reset_optimizer = a.reset_optimizer,
                .learning_rates = {start.learning_rates().begin(), start.learning_rates().end()},
                .sampler_seed = start.sampler_seed(),
                .sampler_cursor = start.sampler_cursor(),
                .batch_size = h.batch_size(),
                .block_size = h.block_size()};
  a.theta.clear();
  a.theta_assembler.reset();
  conn.SetPhase(v1::WORKER_PHASE_TRAINING, r, 0);
  const auto t0 = Clock::now();
  absl::StatusOr<RoundOutput> out = RunRound(*a.entry->loop, a.tokens, in, [&](uint32_t done) {
    conn.SetPhase(v1::WORKER_PHASE_TRAINING, r, done);
    return !stop && !cancels.Cancelled(epoch, r) && !conn.ended();
  });
  a.reset_optimizer = false;
  if (!out.ok()) {
    spdlog::error("round {} failed: {}", r, out.status().message());
    metrics::Get(metrics::kWorkerErrorsTotal, {"run"}).Increment();
    v1::WorkerMessage error;
    *error.mutable_error() = ErrorToProto(out.status(), r);
    conn.Write(error);
    conn.SetPhase(v1::WORKER_PHASE_READY, 0, 0);
    return absl::OkStatus();
  }
  const v1::RoundResult& res = out->result;
  metrics::Get(metrics::kWorkerTokensPerSecond).Set(res.tokens_per_second());
  if (!out->complete) {
    if (cancels.Cancelled(epoch, r)) {
      spdlog::info("round {} cancelled by the shepherd after {} steps", r, res.steps());
    } else if (!conn.ended()) {
      spdlog::info("round {} abandoned after {} steps (stopping)", r, res.steps());
      v1::WorkerMessage m;
      *m.mutable_round_result() = res;
      conn.Write(m);
    }
    conn.SetPhase(v1::WORKER_PHASE_READY, 0, 0);
    return absl::OkStatus();
  }
  if (std::string corruption = fault.ApplyNext(&out->delta); !corruption.empty()) {
    spdlog::warn("TESTING ONLY: the Δ of round {} is corrupted ({})", r, corruption);
  }
  conn.SetPhase(v1::WORKER_PHASE_SENDING, r, res.steps());
  std::vector<NamedTensor> delta;
  for (size_t i = 0; i < out->delta.size(); ++i) delta.push_back({a.specs[i].name, std::move(out->delta[i])});
  PCP_ASSIGN_OR_RETURN(TensorListChunker chunker, TensorListChunker::Create(std::move(delta)));
  v1::WorkerMessage m;
  while (!chunker.done()) {
    if (cancels.Cancelled(epoch, r)) break;  // the round closed without us
    v1::ResultChunk* chunk = m.mutable_result_chunk();
    chunk->set_round(r);
    ChunkPayload payload;  // sent from Δ itself, not copied into the message
    chunker.Next(chunk->mutable_chunk(), &payload);
    if (!conn.Write(m, payload)) return conn.status();
  }
  if (chunker.done()) {
    m.Clear();
    *m.mutable_round_result() = res;
    // Tells the supervisor this process did useful work: if it dies now, it is no crash loop.
    if (conn.Write(m)) ReportProgress();
  }
  conn.SetPhase(v1::WORKER_PHASE_READY, 0, 0);
  spdlog::info("round {} done: {} steps, loss {:.4f} (last {:.4f}), {:.1f} ms/step, {:.0f} tok/s, {:.2f} s in all", r,
               res.steps(), res.mean_loss(), res.last_loss(), res.step_time_ms(), res.tokens_per_second(),
               std::chrono::duration<double>(Clock::now() - t0).count());
  return absl::OkStatus();
}

}  // namespace pcp::worker
