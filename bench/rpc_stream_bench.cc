// Parameter / Δ streaming throughput over loopback gRPC vs a raw TCP copy of the same bytes,
// measured in one run, plus DiLoCo's bytes on the wire per inner step.
//
//   build/bench/pcp_rpc_stream_bench [--mb=64] [--reps=9] [--chunk_kib=256,512,1024]
//                                    [--only=zero-copy]   (rows to run, for profiling)
//                                    [--malloc_defaults]  (without the services' heap settings)
//   PCP_BENCH_ARGS="grpc.http2.max_frame_size=1048576,..." adds integer channel arguments to
//   every variant (for experiments).
//
// As in a cluster, the two ends are separate processes: every server (the shepherd's end)
// runs in a child process of its own, forked before gRPC starts, and this process is the
// worker's end. Every gRPC variant is the real path: the generated Training service, a bidi
// Connect stream, tensors cut by TensorListChunker (CRC-32C per chunk) and rebuilt by a
// TensorListAssembler that checks names, shapes, offsets and CRCs. Both directions:
//   up    worker -> shepherd  ResultChunk messages (Δ), assembled by the service
//   down  shepherd -> worker  ParameterChunk messages (θ), assembled by the client
// Variants:
//   proto      typed sync API with gRPC's default settings; the data is copied into the
//              message, then by gRPC into its buffer; the receiver parses into a message and
//              assembles into fresh tensors
//   tuned      as proto, with PCP's stream settings (pcp/rpc/channel_options.h: fixed 16 MiB
//              flow-control window) and the receiver assembling into last round's tensors
//   zero-copy  what PCP runs (pcp/rpc/chunk_wire.h): raw ByteBuffers on both ends, the
//              shepherd's callback reactor (Training::WithRawCallbackMethod_Connect) and the
//              worker's sync stream; chunk data is referenced, not copied, on the way out,
//              and copied once (fused with the CRC) from gRPC's receive buffer into the
//              tensor on the way in
// Raw TCP = one send() loop into one recv() loop over a 127.0.0.1 socket between the same two
// processes (no framing, no checksums): the ceiling of what loopback does on this machine.
//
// Machines shared with other work are noisy, so each repetition measures raw TCP and every
// variant back to back, and the ratio is taken per repetition; medians are printed. CPU
// time (user + sys of both processes; the server's in 10 ms clock ticks, summed over all
// repetitions, so keep --mb * --reps in the hundreds) per 100 MB is printed too, as it is far
// less sensitive to other load, and so is the CPU steal of the host during the timed passes. Both processes
// use the heap settings the shepherd and the worker use (pcp/rpc/stream_memory.h) unless
// --malloc_defaults is given.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "pcp/rpc/channel_options.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/rpc/stream_memory.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/v1/training.grpc.pb.h"

namespace pcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMB = 1e6;

void Die(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(1);
}

// ---------------------------------------------------------------- measuring

// User + system CPU seconds of this process (µs resolution) and of a child (clock ticks).
double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
double ChildCpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) Die("cannot read /proc/<child>/stat");
  std::vector<std::string> f = absl::StrSplit(text.substr(close + 2), ' ');
  // Fields 14 and 15 of stat(5) (utime, stime), counted from the state field (3).
  double utime = 0, stime = 0;
  if (f.size() < 13 || !absl::SimpleAtod(f[11], &utime) || !absl::SimpleAtod(f[12], &stime)) {
    Die("cannot parse /proc/<child>/stat");
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The host's CPU steal (time taken by other virtual machines) as a fraction of all CPU time.
struct StealClock {
  double steal = 0, total = 0;
  static StealClock Now() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    StealClock c;
    in >> cpu;
    for (int i = 0; i < 8; ++i) {  // user nice system idle iowait irq softirq steal
      double v = 0;
      in >> v;
      c.total += v;
      if (i == 7) c.steal = v;
    }
    return c;
  }
};

// ---------------------------------------------------------------- data

// `mb` MB of f32 parameters in tensors of 4 MB (1M floats) plus a remainder.
std::vector<NamedTensor> MakeParams(int64_t mb) {
  std::vector<NamedTensor> params;
  int64_t floats = mb * 1000000 / 4;
  for (int i = 0; floats > 0; ++i) {
    const int64_t n = std::min<int64_t>(floats, 1000000);
    Tensor t(DType::kF32, {n});
    float* p = t.data<float>();
    for (int64_t j = 0; j < n; ++j) p[j] = static_cast<float>((j * 2654435761u + i) % 1000) * 1e-3f;
    params.push_back({absl::StrCat("p", i), t});
    floats -= n;
  }
  return params;
}

// Whether `got` equals `want`, tensor by tensor. Received data is compared only in the
// warm-up pass, so the comparison does not count against gRPC in the timed passes.
bool Same(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].name != want[i].name || !BitwiseEqual(got[i].tensor, want[i].tensor)) return false;
  }
  return true;
}

// ---------------------------------------------------------------- child processes

// A server process of this benchmark (the shepherd's end of one variant).
struct Child {
  pid_t pid = 0;
  int port = 0;
};

// Forks a child that runs `serve(write_port)` (which calls write_port once it listens, then
// serves until killed). Must run before this process starts gRPC.
Child Spawn(const std::function<void(const std::function<void(int)>&)>& serve) {
  int fds[2];
  if (pipe(fds) != 0) Die("pipe failed");
  const pid_t parent = getpid();
  Child child;
  child.pid = fork();
  if (child.pid < 0) Die("fork failed");
  if (child.pid == 0) {
    close(fds[0]);
    // The child never outlives this process (a Die here ends it with a plain exit()).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    serve([&](int port) {
      if (write(fds[1], &port, sizeof(port)) != sizeof(port)) _exit(1);
      close(fds[1]);
    });
    _exit(0);
  }
  close(fds[1]);
  if (read(fds[0], &child.port, sizeof(child.port)) != sizeof(child.port)) {
    Die("a server process failed to start");
  }
  close(fds[0]);
  return child;
}

void Stop(const Child& child) {
  if (child.pid <= 0) return;
  kill(child.pid, SIGKILL);
  waitpid(child.pid, nullptr, 0);
}

// ---------------------------------------------------------------- raw TCP

// The request that opens a raw connection: `size` bytes, up (client sends, server answers
// one byte once all arrived) or down (server sends).
struct RawRequest {
  uint64_t size;
  uint8_t up;
};

bool SendAll(int fd, const char* p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = send(fd, p + done, std::min<size_t>(n - done, size_t{1} << 20), 0);
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}
bool RecvAll(int fd, char* p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t r = recv(fd, p + done, n - done, 0);
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

// The raw TCP server (child): one connection at a time, the data in `buffer`.
void ServeRawTcp(std::vector<char>& buffer, const std::function<void(int)>& write_port) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener, 4) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die("raw tcp: cannot listen");
  }
  write_port(ntohs(addr.sin_port));
  for (;;) {
    int fd = accept(listener, nullptr, nullptr);
    RawRequest req{};
    if (fd < 0 || !RecvAll(fd, reinterpret_cast<char*>(&req), sizeof(req)) || req.size > buffer.size()) {
      Die("raw tcp: bad request");
    }
    const char ack = 1;
    const bool ok = req.up ? RecvAll(fd, buffer.data(), req.size) && SendAll(fd, &ack, 1)
                           : SendAll(fd, buffer.data(), req.size);
    if (!ok) Die("raw tcp: transfer failed");
    close(fd);
  }
}

// The raw TCP client (this process): sends `data` (up) or receives into it (down).
void RawTcp(int port, bool up, std::vector<char>& data) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("raw tcp: connect");
  const RawRequest req{data.size(), static_cast<uint8_t>(up)};
  char ack = 0;
  const bool ok = SendAll(fd, reinterpret_cast<const char*>(&req), sizeof(req)) &&
                  (up ? SendAll(fd, data.data(), data.size()) && RecvAll(fd, &ack, 1)
                      : RecvAll(fd, data.data(), data.size()));
  if (!ok) Die("raw tcp: transfer failed");
  close(fd);
}

// ---------------------------------------------------------------- the shepherd's end

// What a Connect call is asked to do, from the client's metadata.
struct CallSpec {
  int64_t chunk_bytes = kDefaultChunkBytes;
  bool verify = false;  // compare the received Δ with what was sent
};
CallSpec SpecFrom(const grpc::ServerContextBase* context) {
  CallSpec spec;
  const auto& md = context->client_metadata();
  if (auto it = md.find("x-chunk-bytes"); it != md.end()) {
    (void)absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &spec.chunk_bytes);
  }
  spec.verify = md.find("x-verify") != md.end();
  return spec;
}
grpc::Status Mismatch() { return grpc::Status(grpc::StatusCode::DATA_LOSS, "received Δ differs from what was sent"); }

// Typed sync service. A Join asks for θ (download); ResultChunks are a Δ (upload), answered
// with one heartbeat once assembled and checked.
class SyncTraining final : public v1::Training::Service {
 public:
  SyncTraining(const std::vector<NamedTensor>* params, bool reuse) : params_(params), reuse_(reuse) {}

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::ShepherdMessage, v1::WorkerMessage>* stream) override {
    const CallSpec spec = SpecFrom(context);
    v1::WorkerMessage in;
    if (!stream->Read(&in)) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no message");
    if (in.has_join()) {
      auto chunker = TensorListChunker::Create(*params_, ChunkOptions{spec.chunk_bytes});
      if (!chunker.ok()) return ToGrpcStatus(chunker.status());
      v1::ShepherdMessage out;
      while (!chunker->done()) {
        v1::ParameterChunk* p = out.mutable_parameter_chunk();
        p->set_round(1);
        chunker->Next(p->mutable_chunk());
        if (!stream->Write(out)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone");
      }
      return grpc::Status::OK;
    }
    TensorListAssembler assembler;
    assembler.ExpectSpecs(SpecsOf(*params_));
    if (reuse_) assembler.ReuseBuffers(std::move(last_));
    do {
      if (!in.has_result_chunk()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "?");
      if (absl::Status s = assembler.Add(in.result_chunk().chunk()); !s.ok()) return ToGrpcStatus(s);
    } while (!assembler.complete() && stream->Read(&in));
    auto list = assembler.Take();
    if (!list.ok()) return ToGrpcStatus(list.status());
    if (spec.verify && !Same(*list, *params_)) return Mismatch();
    if (reuse_) last_ = *std::move(list);
    v1::ShepherdMessage ack;
    ack.mutable_heartbeat()->set_sequence(1);
    stream->Write(ack);
    return grpc::Status::OK;
  }

 private:
  const std::vector<NamedTensor>* params_;
  const bool reuse_;
  std::vector<NamedTensor> last_;  // one call at a time in this benchmark
};

// The shepherd's path: raw ByteBuffers with a callback reactor, θ sent zero-copy.
class RawTraining final : public v1::Training::WithRawCallbackMethod_Connect<v1::Training::Service> {
 public:
  explicit RawTraining(const std::vector<NamedTensor>* params) : params_(params) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(grpc::CallbackServerContext* context) override {
    return new Reactor(this, SpecFrom(context));
  }

 private:
  class Reactor : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    Reactor(RawTraining* service, CallSpec spec) : service_(service), spec_(spec) { StartRead(&in_); }
    void OnReadDone(bool ok) override {
      if (!ok) return Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "short stream"));
      if (absl::Status s = parser_.Parse(&in_, kResultChunkDataPath, &msg_); !s.ok()) return Finish(ToGrpcStatus(s));
      if (msg_.has_join()) {
        auto chunker = TensorListChunker::Create(*service_->params_, ChunkOptions{spec_.chunk_bytes});
        if (!chunker.ok()) return Finish(ToGrpcStatus(chunker.status()));
        chunker_.emplace(*std::move(chunker));
        return WriteNext();
      }
      if (!started_) {
        assembler_.ExpectSpecs(SpecsOf(*service_->params_));
        assembler_.ReuseBuffers(std::move(service_->last_));
        started_ = true;
      }
      if (absl::Status s = assembler_.AddPieces(msg_.result_chunk().chunk(), parser_.payload()); !s.ok()) {
        return Finish(ToGrpcStatus(s));
      }
      if (!assembler_.complete()) return StartRead(&in_);
      auto list = assembler_.Take();
      if (spec_.verify && !Same(*list, *service_->params_)) return Finish(Mismatch());
      service_->last_ = *std::move(list);
      v1::ShepherdMessage ack;
      ack.mutable_heartbeat()->set_sequence(1);
      grpc::Slice slice(ack.SerializeAsString());
      out_ = grpc::ByteBuffer(&slice, 1);
      acking_ = true;
      StartWrite(&out_);
    }
    void OnWriteDone(bool ok) override {
      if (!ok) return Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone"));
      if (acking_ || chunker_->done()) return Finish(grpc::Status::OK);
      WriteNext();
    }
    void OnDone() override { delete this; }

   private:
    void WriteNext() {
      v1::ShepherdMessage head;
      ChunkPayload payload;
      v1::ParameterChunk* p = head.mutable_parameter_chunk();
      p->set_round(1);
      chunker_->Next(p->mutable_chunk(), &payload);
      out_ = SerializeWithPayload(head, kParameterChunkDataPath, payload);
      StartWrite(&out_);
    }

    RawTraining* service_;
    CallSpec spec_;
    grpc::ByteBuffer in_, out_;
    ChunkMessageParser parser_;
    v1::WorkerMessage msg_;
    std::optional<TensorListChunker> chunker_;
    TensorListAssembler assembler_;
    bool started_ = false, acking_ = false;
  };

  const std::vector<NamedTensor>* params_;
  std::vector<NamedTensor> last_;
};

// A server child for one variant: "proto" keeps gRPC's defaults (receive limit: one chunk
// message); the others use PCP's stream settings (pcp/rpc/channel_options.h).
Child SpawnGrpcServer(const std::string& variant, const std::vector<NamedTensor>* params,
                      const std::vector<std::pair<std::string, int>>& extra_args) {
  return Spawn([&](const std::function<void(int)>& write_port) {
    std::unique_ptr<grpc::Service> service;
    if (variant == "zero-copy") service = std::make_unique<RawTraining>(params);
    else service = std::make_unique<SyncTraining>(params, variant == "tuned");
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    if (variant == "proto") builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxChunkMessageBytes));
    else ApplyStreamServerOptions(&builder);
    for (auto& [k, v] : extra_args) builder.AddChannelArgument(k, v);
    builder.RegisterService(service.get());
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr || port == 0) Die(variant + ": cannot start the server");
    write_port(port);
    server->Wait();
  });
}

// ---------------------------------------------------------------- the worker's end

std::unique_ptr<grpc::ClientContext> MakeContext(int64_t chunk_bytes, bool verify) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
  context->AddMetadata("x-chunk-bytes", std::to_string(chunk_bytes));
  if (verify) context->AddMetadata("x-verify", "1");
  return context;
}

// Worker -> shepherd over the typed sync API, until the shepherd acknowledges.
void SyncUpload(v1::Training::Stub& stub, const std::vector<NamedTensor>& params, int64_t chunk_bytes, bool verify) {
  auto context = MakeContext(chunk_bytes, verify);
  auto stream = stub.Connect(context.get());
  auto chunker = TensorListChunker::Create(params, ChunkOptions{chunk_bytes});
  v1::WorkerMessage msg;
  while (!chunker->done()) {
    v1::ResultChunk* r = msg.mutable_result_chunk();
    r->set_round(1);
    chunker->Next(r->mutable_chunk());
    if (!stream->Write(msg)) break;
  }
  v1::ShepherdMessage ack;
  const bool acked = stream->Read(&ack);
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!acked || !status.ok()) Die("sync upload failed: " + status.error_message());
}

// Shepherd -> worker over the typed sync API, until the worker has assembled θ.
void SyncDownload(v1::Training::Stub& stub, const std::vector<NamedTensor>& params, int64_t chunk_bytes,
                  std::vector<NamedTensor>* reuse, bool verify) {
  auto context = MakeContext(chunk_bytes, verify);
  auto stream = stub.Connect(context.get());
  v1::WorkerMessage join;
  join.mutable_join()->set_supervisor_id("bench");
  stream->Write(join);
  stream->WritesDone();
  TensorListAssembler assembler;
  assembler.ExpectSpecs(SpecsOf(params));
  if (reuse != nullptr) assembler.ReuseBuffers(std::move(*reuse));
  v1::ShepherdMessage in;
  while (!assembler.complete() && stream->Read(&in)) {
    if (absl::Status s = assembler.Add(in.parameter_chunk().chunk()); !s.ok()) {
      Die("sync download: " + std::string(s.message()));
    }
  }
  auto list = assembler.Take();
  grpc::Status status = stream->Finish();
  if (!list.ok() || !status.ok()) Die("sync download failed: " + status.error_message());
  if (verify && !Same(*list, params)) Die("sync download: received θ differs from what was sent");
  if (reuse != nullptr) *reuse = *std::move(list);
}

// The worker's path (services/worker/src/connection.cc): a sync stream of raw ByteBuffers.
class RawStream {
 public:
  RawStream(const std::shared_ptr<grpc::Channel>& channel, int64_t chunk_bytes, bool verify)
      : context_(MakeContext(chunk_bytes, verify)),
        method_("/pcp.v1.Training/Connect", grpc::internal::RpcMethod::BIDI_STREAMING, channel),
        stream_(grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
            channel.get(), method_, context_.get())) {}
  grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>& operator*() { return *stream_; }
  grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>* operator->() { return stream_.get(); }

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  grpc::internal::RpcMethod method_;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream_;
};

void RawUpload(const std::shared_ptr<grpc::Channel>& channel, const std::vector<NamedTensor>& params,
               int64_t chunk_bytes, bool verify) {
  RawStream stream(channel, chunk_bytes, verify);
  auto chunker = TensorListChunker::Create(params, ChunkOptions{chunk_bytes});
  while (!chunker->done()) {
    v1::WorkerMessage head;
    ChunkPayload payload;
    v1::ResultChunk* r = head.mutable_result_chunk();
    r->set_round(1);
    chunker->Next(r->mutable_chunk(), &payload);
    if (!stream->Write(SerializeWithPayload(head, kResultChunkDataPath, payload))) break;
  }
  grpc::ByteBuffer ack;
  const bool acked = stream->Read(&ack);
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!acked || !status.ok()) Die("raw upload failed: " + status.error_message());
}

void RawDownload(const std::shared_ptr<grpc::Channel>& channel, const std::vector<NamedTensor>& params,
                 int64_t chunk_bytes, std::vector<NamedTensor>* reuse, bool verify) {
  RawStream stream(channel, chunk_bytes, verify);
  v1::WorkerMessage join;
  join.mutable_join()->set_supervisor_id("bench");
  grpc::Slice slice(join.SerializeAsString());
  stream->Write(grpc::ByteBuffer(&slice, 1));
  stream->WritesDone();
  TensorListAssembler assembler;
  assembler.ExpectSpecs(SpecsOf(params));
  assembler.ReuseBuffers(std::move(*reuse));
  ChunkMessageParser parser;
  grpc::ByteBuffer in;
  v1::ShepherdMessage msg;
  while (!assembler.complete() && stream->Read(&in)) {
    if (absl::Status s = parser.Parse(&in, kParameterChunkDataPath, &msg); !s.ok()) Die("raw download: " + s.ToString());
    if (absl::Status s = assembler.AddPieces(msg.parameter_chunk().chunk(), parser.payload()); !s.ok()) {
      Die("raw download: " + s.ToString());
    }
  }
  auto list = assembler.Take();
  grpc::Status status = stream->Finish();
  if (!list.ok() || !status.ok()) Die("raw download failed: " + status.error_message());
  if (verify && !Same(*list, params)) Die("raw download: received θ differs from what was sent");
  *reuse = *std::move(list);
}

// ---------------------------------------------------------------- reporting

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-repetition samples of one row of the table.
struct Row {
  std::vector<double> mbps, ratio;
};

void PrintDiLoCoTraffic() {
  // nanoGPT "CPU" config (n_layer 4, n_head 4, n_embd 128, block 64, vocab 65, bias off),
  // parameters as PCP trains them (pcp/models/gpt.h: lm_head tied to wte).
  const int64_t C = 128, V = 65, T = 64, L = 4;
  const int64_t per_layer = C /*ln_1*/ + 3 * C * C /*c_attn*/ + C * C /*attn.c_proj*/ +
                            C /*ln_2*/ + 4 * C * C /*c_fc*/ + 4 * C * C /*mlp.c_proj*/;
  const int64_t params = V * C /*wte*/ + T * C /*wpe*/ + L * per_layer + C /*ln_f*/;
  const int64_t tau = 50;
  const double bytes = 4.0 * static_cast<double>(params);
  // DiLoCo: per round a worker receives θ and sends Δ once, then runs τ inner steps.
  const double diloco = 2 * bytes / tau;
  // Data-parallel: every step each worker sends its gradient and receives the average. With
  // a parameter server that is exactly 2 × params × 4 bytes per worker per step; a ring
  // all-reduce sends and receives 2 (N−1)/N × params × 4 bytes per worker, → the same for
  // large N (1× for N = 2).
  const double ddp = 2 * bytes;
  std::printf("\nBytes on the wire per worker per inner step, nanoGPT CPU config "
              "(%lld parameters, f32), tau = %lld:\n",
              static_cast<long long>(params), static_cast<long long>(tau));
  std::printf("  DiLoCo         2 x params x 4 B / tau  = %9.0f B  (%.1f KB)\n", diloco,
              diloco / 1e3);
  std::printf("  data-parallel  2 x params x 4 B        = %9.0f B  (%.2f MB: gradient out, "
              "average in)\n", ddp, ddp / 1e6);
  std::printf("  data-parallel / DiLoCo = %.0fx (= tau; chunk framing adds < 0.01%%)\n",
              ddp / diloco);
}

}  // namespace
}  // namespace pcp

int main(int argc, char** argv) {
  using namespace pcp;
  int64_t mb = 64;
  int reps = 9;
  std::vector<int64_t> chunk_kib = {256, 512, 1024};
  std::string only;  // run only the gRPC rows whose name contains this (for profiling)
  bool malloc_defaults = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (absl::ConsumePrefix(&a, "--mb=")) {
      if (!absl::SimpleAtoi(a, &mb) || mb <= 0) Die("bad --mb");
    } else if (absl::ConsumePrefix(&a, "--reps=")) {
      if (!absl::SimpleAtoi(a, &reps) || reps <= 0) Die("bad --reps");
    } else if (a == "--malloc_defaults") {
      malloc_defaults = true;
    } else if (absl::ConsumePrefix(&a, "--only=")) {
      only = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--chunk_kib=")) {
      chunk_kib.clear();
      for (absl::string_view k : absl::StrSplit(a, ',')) {
        int64_t v;
        if (!absl::SimpleAtoi(k, &v) || v * 1024 < kMinChunkBytes || v * 1024 > kMaxChunkBytes) {
          Die("bad --chunk_kib (256..1024)");
        }
        chunk_kib.push_back(v);
      }
    } else {
      Die(absl::StrCat("usage: ", argv[0],
                       " [--mb=N] [--reps=N] [--chunk_kib=256,512,1024] [--only=zero-copy] [--malloc_defaults]"));
    }
  }
  if (!malloc_defaults && !KeepStreamBuffersInHeap()) Die("cannot apply the heap settings");  // inherited by children

  // Experiments: PCP_BENCH_ARGS="grpc.some_arg=1,..." adds integer channel arguments.
  std::vector<std::pair<std::string, int>> extra_args;
  if (const char* env = std::getenv("PCP_BENCH_ARGS")) {
    for (absl::string_view kv : absl::StrSplit(env, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> p = absl::StrSplit(kv, '=');
      int v = 0;
      if (!absl::SimpleAtoi(p.second, &v)) Die("bad PCP_BENCH_ARGS");
      extra_args.emplace_back(p.first, v);
    }
  }
  const std::vector<NamedTensor> params = MakeParams(mb);
  int64_t total = 0;
  for (const auto& p : params) total += p.tensor.byte_size();
  std::vector<char> src(static_cast<size_t>(total)), dst(static_cast<size_t>(total));
  for (size_t i = 0, off = 0; i < params.size(); off += params[i].tensor.byte_size(), ++i) {
    std::memcpy(src.data() + off, params[i].tensor.raw_data(), params[i].tensor.byte_size());
  }

  // The server processes, forked before this process starts gRPC.
  const std::vector<std::string> variants = {"proto", "tuned", "zero-copy"};
  std::vector<Child> children;
  const Child raw_server = Spawn([&](const std::function<void(int)>& write_port) { ServeRawTcp(src, write_port); });
  children.push_back(raw_server);
  std::vector<Child> servers(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    if (absl::StrContains(variants[v], only) || absl::StrContains(only, variants[v])) {
      servers[v] = SpawnGrpcServer(variants[v], &params, extra_args);
      children.push_back(servers[v]);
    }
  }

  auto channel = [&](size_t v) {
    grpc::ChannelArguments args;
    if (variants[v] == "proto") args.SetMaxReceiveMessageSize(static_cast<int>(kMaxChunkMessageBytes));
    else ApplyStreamChannelOptions(&args);
    for (auto& [k, val] : extra_args) args.SetInt(k, val);
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", servers[v].port), grpc::InsecureChannelCredentials(),
                                     args);
  };
  std::vector<std::shared_ptr<grpc::Channel>> channels(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    if (servers[v].pid != 0) channels[v] = channel(v);
  }
  std::vector<NamedTensor> tuned_buffers, raw_buffers;

  // Rows: raw TCP both ways, then (variant, direction, chunk size). A run gets its chunk size
  // and whether to verify what arrived (the warm-up pass).
  struct RowSpec {
    std::string name;
    const Child* server;
    bool up;
    std::function<void(int64_t chunk, bool verify)> run;
    int64_t chunk = kDefaultChunkBytes;
  };
  std::vector<RowSpec> specs = {
      {"raw TCP    up  ", &raw_server, true, [&](int64_t, bool) { RawTcp(raw_server.port, true, src); }},
      {"raw TCP    down", &raw_server, false, [&](int64_t, bool) { RawTcp(raw_server.port, false, dst); }},
  };
  for (int64_t kib : chunk_kib) {
    auto add = [&](size_t v, bool up, std::function<void(int64_t, bool)> fn) {
      const std::string name = absl::StrCat(variants[v], std::string(11 - variants[v].size(), ' '),
                                            up ? "up  " : "down", " ", kib, " KiB");
      if (servers[v].pid == 0 || !absl::StrContains(name, only)) return;
      specs.push_back({name, &servers[v], up, std::move(fn), kib << 10});
    };
    auto proto = [&] { return v1::Training::NewStub(channels[0]); };
    auto tuned = [&] { return v1::Training::NewStub(channels[1]); };
    add(0, true, [&](int64_t c, bool verify) { SyncUpload(*proto(), params, c, verify); });
    add(0, false, [&](int64_t c, bool verify) { SyncDownload(*proto(), params, c, nullptr, verify); });
    add(1, true, [&](int64_t c, bool verify) { SyncUpload(*tuned(), params, c, verify); });
    add(1, false, [&](int64_t c, bool verify) { SyncDownload(*tuned(), params, c, &tuned_buffers, verify); });
    add(2, true, [&](int64_t c, bool verify) { RawUpload(channels[2], params, c, verify); });
    add(2, false, [&](int64_t c, bool verify) { RawDownload(channels[2], params, c, &raw_buffers, verify); });
  }

  // Warm-up (connections, allocators, reuse buffers), checking every transfer's data.
  for (RowSpec& r : specs) r.run(r.chunk, true);
  if (std::memcmp(src.data(), dst.data(), src.size()) != 0) Die("raw TCP copy corrupted data");

  std::vector<Row> rows(specs.size());
  std::vector<double> cpu(specs.size(), 0.0);
  const StealClock steal0 = StealClock::Now();
  for (int rep = 0; rep < reps; ++rep) {
    double raw_mbps[2] = {0, 0};  // down, up
    for (size_t r = 0; r < specs.size(); ++r) {
      const double cpu0 = SelfCpuSeconds() + ChildCpuSeconds(specs[r].server->pid);
      const Clock::time_point t0 = Clock::now();
      specs[r].run(specs[r].chunk, false);
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      cpu[r] += SelfCpuSeconds() + ChildCpuSeconds(specs[r].server->pid) - cpu0;
      const double mbps = total / kMB / wall;
      if (r < 2) raw_mbps[specs[r].up] = mbps;
      rows[r].mbps.push_back(mbps);
      rows[r].ratio.push_back(mbps / raw_mbps[specs[r].up]);
    }
  }
  const StealClock steal1 = StealClock::Now();
  for (const Child& c : children) Stop(c);

  std::printf("Streaming %.0f MB of f32 parameters (%zu tensors) over loopback between two processes, %d reps%s\n"
              "(medians; ratio = gRPC / raw TCP in the same direction and repetition; CPU = both processes)\n\n",
              total / kMB, params.size(), reps, malloc_defaults ? ", glibc's malloc defaults" : "");
  std::printf("  %-26s %9s %7s %16s\n", "", "MB/s", "ratio", "CPU ms / 100 MB");
  double best = 0;
  std::string best_name;
  for (size_t r = 0; r < rows.size(); ++r) {
    const double ratio = Median(rows[r].ratio);
    std::printf("  %-26s %9.0f %7.2f %16.0f\n", specs[r].name.c_str(), Median(rows[r].mbps), ratio,
                cpu[r] * 1e3 / reps * (100 * kMB / total));
    if (r >= 2 && ratio > best) {
      best = ratio;
      best_name = specs[r].name;
    }
  }
  std::printf("\n  best ratio %.2f (%s); target >= 0.8\n", best, best_name.c_str());
  const double steal = (steal1.steal - steal0.steal) / std::max(1.0, steal1.total - steal0.total);
  std::printf("  CPU steal by other virtual machines during the timed passes: %.0f%%%s\n", 100 * steal,
              steal > 0.05 ? " (high: wall-clock figures are unreliable; CPU per 100 MB much less so)" : "");
  PrintDiLoCoTraffic();
  return 0;
}
