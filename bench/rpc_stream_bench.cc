// Parameter / Δ streaming throughput over loopback gRPC vs a raw TCP copy of the same bytes,
// measured in one run, plus DiLoCo's bytes on the wire per inner step.
//
//   build/bench/pcp_rpc_stream_bench [--mb=64] [--reps=7] [--chunk_kib=256,512,1024]
//                                    [--only=zero-copy]   (rows to run, for profiling)
//                                    [--tune_malloc]      (mallopt: no heap trimming)
//   PCP_BENCH_ARGS="grpc.http2.max_frame_size=1048576,..." adds integer channel arguments to
//   every variant (for experiments).
//
// Every gRPC variant is the real path: the generated Training service, a bidi Connect
// stream, tensors cut by TensorListChunker (CRC-32C per chunk) and rebuilt by a
// TensorListAssembler that checks names, shapes, offsets and CRCs. Both directions:
//   up    worker -> shepherd  ResultChunk messages (Δ), assembled by the service
//   down  shepherd -> worker  ParameterChunk messages (θ), assembled by the client
// Variants:
//   proto      typed sync API with gRPC's default settings; the data is copied into the
//              message, then by gRPC into its buffer; the receiver parses into a message and
//              assembles into fresh tensors
//   tuned      as proto, with PCP's stream settings (pcp/rpc/channel_options.h: fixed 16 MiB
//              flow-control window) and the receiver assembling into last round's tensors
//   zero-copy  as tuned, on the raw ByteBuffer API (Training::WithRawCallbackMethod_Connect on
//              the service, grpc::GenericStub on the client, callback reactors) with
//              pcp/rpc/chunk_wire.h: chunk data is referenced, not copied, on the way out,
//              and copied once (fused with the CRC) from gRPC's receive buffer into the
//              tensor on the way in
// Raw TCP = one send() loop into one recv() loop on a 127.0.0.1 socket (no framing, no
// checksums): the ceiling of what loopback does on this machine.
//
// Machines shared with other work are noisy, so each repetition measures raw TCP and every
// variant back to back, and the ratio is taken per repetition; medians are printed. CPU
// time (user + sys of the whole process: sender and receiver) per 100 MB is printed too,
// as it is far less sensitive to other load.
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "pcp/rpc/channel_options.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/v1/training.grpc.pb.h"

namespace pcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMB = 1e6;

// Wall and CPU seconds of one transfer.
struct Cost {
  double wall = 0, cpu = 0;
};
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
Cost Measure(const std::function<void()>& fn) {
  const double cpu0 = CpuSeconds();
  const Clock::time_point t0 = Clock::now();
  fn();
  return {std::chrono::duration<double>(Clock::now() - t0).count(), CpuSeconds() - cpu0};
}

void Die(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(1);
}

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

// Received data is compared with what was sent during the warm-up pass only, so the
// comparison does not count against gRPC in the timed passes.
bool g_verify = true;

void CheckSame(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  if (a.size() != b.size()) Die("received list has the wrong length");
  if (!g_verify) return;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || !BitwiseEqual(a[i].tensor, b[i].tensor)) {
      Die("received tensor " + a[i].name + " differs");
    }
  }
}

// ---------------------------------------------------------------- raw TCP

void RawTcpCopy(const char* src, char* dst, size_t size) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die("raw tcp: cannot listen");
  }
  std::thread receiver([&] {
    int fd = accept(listener, nullptr, nullptr);
    for (size_t got = 0; got < size;) {
      ssize_t r = recv(fd, dst + got, size - got, 0);
      if (r <= 0) Die("raw tcp: recv failed");
      got += static_cast<size_t>(r);
    }
    close(fd);
  });
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("connect");
  for (size_t sent = 0; sent < size;) {
    ssize_t w = send(fd, src + sent, std::min<size_t>(size - sent, size_t{1} << 20), 0);
    if (w <= 0) Die("raw tcp: send failed");
    sent += static_cast<size_t>(w);
  }
  receiver.join();
  close(fd);
  close(listener);
}

// ---------------------------------------------------------------- the shepherd side

// What a Connect call is asked to do, from the client's metadata.
struct CallSpec {
  int64_t chunk_bytes = kDefaultChunkBytes;
};
CallSpec SpecFrom(const grpc::ServerContextBase* context) {
  CallSpec spec;
  auto it = context->client_metadata().find("x-chunk-bytes");
  if (it != context->client_metadata().end()) {
    (void)absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()),
                           &spec.chunk_bytes);
  }
  return spec;
}

// Typed sync service. A Join asks for θ (download); ResultChunks are a Δ (upload), answered
// with one heartbeat once assembled and checked.
class SyncTraining final : public v1::Training::Service {
 public:
  SyncTraining(const std::vector<NamedTensor>* params, bool reuse)
      : params_(params), reuse_(reuse) {}

  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::ShepherdMessage, v1::WorkerMessage>* stream) override {
    v1::WorkerMessage in;
    if (!stream->Read(&in)) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no message");
    if (in.has_join()) {
      auto chunker = TensorListChunker::Create(*params_, ChunkOptions{SpecFrom(context).chunk_bytes});
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
    CheckSame(*list, *params_);
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

// The same service on raw ByteBuffers with a callback reactor, sending θ zero-copy.
class RawTraining final : public v1::Training::WithRawCallbackMethod_Connect<v1::Training::Service> {
 public:
  explicit RawTraining(const std::vector<NamedTensor>* params) : params_(params) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(
      grpc::CallbackServerContext* context) override {
    return new Reactor(this, SpecFrom(context));
  }

 private:
  class Reactor : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    Reactor(RawTraining* service, CallSpec spec) : service_(service), spec_(spec) {
      StartRead(&in_);
    }
    void OnReadDone(bool ok) override {
      if (!ok) return Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "short stream"));
      if (absl::Status s = parser_.Parse(&in_, kResultChunkDataPath, &msg_); !s.ok()) {
        return Finish(ToGrpcStatus(s));
      }
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
      if (absl::Status s = assembler_.AddPieces(msg_.result_chunk().chunk(), parser_.payload());
          !s.ok()) {
        return Finish(ToGrpcStatus(s));
      }
      if (!assembler_.complete()) return StartRead(&in_);
      auto list = assembler_.Take();
      CheckSame(*list, *service_->params_);
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

// ---------------------------------------------------------------- the worker side

std::unique_ptr<grpc::ClientContext> MakeContext(int64_t chunk_bytes) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
  context->AddMetadata("x-chunk-bytes", std::to_string(chunk_bytes));
  return context;
}

// Worker -> shepherd over the typed sync API, until the shepherd acknowledges.
void SyncUpload(v1::Training::Stub& stub, const std::vector<NamedTensor>& params,
                int64_t chunk_bytes) {
  auto context = MakeContext(chunk_bytes);
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
void SyncDownload(v1::Training::Stub& stub, const std::vector<NamedTensor>& params,
                  int64_t chunk_bytes, std::vector<NamedTensor>* reuse) {
  auto context = MakeContext(chunk_bytes);
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
  CheckSame(*list, params);
  if (reuse != nullptr) *reuse = *std::move(list);
}

// The raw-API client: one reactor per call, zero-copy writes, parsed reads.
class RawClientCall : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // Upload when `params` is set (send Δ, wait for the ack); download otherwise (send a Join,
  // assemble θ into `reuse`).
  RawClientCall(grpc::GenericStub& stub, int64_t chunk_bytes, const std::vector<NamedTensor>* params,
                std::vector<NamedTensor>* reuse, const std::vector<NamedTensor>& expected)
      : context_(MakeContext(chunk_bytes)), reuse_(reuse), expected_(expected) {
    stub.PrepareBidiStreamingCall(context_.get(), "/pcp.v1.Training/Connect", grpc::StubOptions(),
                                  this);
    if (params != nullptr) {
      chunker_.emplace(*TensorListChunker::Create(*params, ChunkOptions{chunk_bytes}));
      WriteNextChunk();
    } else {
      v1::WorkerMessage join;
      join.mutable_join()->set_supervisor_id("bench");
      grpc::Slice slice(join.SerializeAsString());
      out_ = grpc::ByteBuffer(&slice, 1);
      StartWriteLast(&out_, grpc::WriteOptions());
      assembler_.ExpectSpecs(SpecsOf(expected_));
      assembler_.ReuseBuffers(std::move(*reuse_));
    }
    StartRead(&in_);
    StartCall();
  }

  void OnWriteDone(bool ok) override {
    if (ok && chunker_ && !chunker_->done()) WriteNextChunk();
    else if (ok && chunker_) StartWritesDone();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    v1::ShepherdMessage msg;
    if (!parser_.Parse(&in_, kParameterChunkDataPath, &msg).ok()) Die("bad message");
    if (msg.has_heartbeat()) return;  // the upload's ack; the call ends next
    if (absl::Status s = assembler_.AddPieces(msg.parameter_chunk().chunk(), parser_.payload());
        !s.ok()) {
      Die("raw download: " + std::string(s.message()));
    }
    if (assembler_.complete()) {
      auto list = assembler_.Take();
      CheckSame(*list, expected_);
      *reuse_ = *std::move(list);
    }
    StartRead(&in_);
  }
  void OnDone(const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    done_ = true;
    cv_.notify_one();
  }
  grpc::Status Await() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return status_;
  }

 private:
  void WriteNextChunk() {
    v1::WorkerMessage head;
    ChunkPayload payload;
    v1::ResultChunk* r = head.mutable_result_chunk();
    r->set_round(1);
    chunker_->Next(r->mutable_chunk(), &payload);
    out_ = SerializeWithPayload(head, kResultChunkDataPath, payload);
    StartWrite(&out_);
  }

  std::unique_ptr<grpc::ClientContext> context_;
  std::optional<TensorListChunker> chunker_;
  TensorListAssembler assembler_;
  std::vector<NamedTensor>* reuse_;
  const std::vector<NamedTensor>& expected_;
  grpc::ByteBuffer in_, out_;
  ChunkMessageParser parser_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  grpc::Status status_;
};

void RawUpload(grpc::GenericStub& stub, const std::vector<NamedTensor>& params,
               int64_t chunk_bytes) {
  RawClientCall call(stub, chunk_bytes, &params, nullptr, params);
  grpc::Status s = call.Await();
  if (!s.ok()) Die("raw upload failed: " + s.error_message());
}

void RawDownload(grpc::GenericStub& stub, const std::vector<NamedTensor>& params,
                 int64_t chunk_bytes, std::vector<NamedTensor>* reuse) {
  RawClientCall call(stub, chunk_bytes, nullptr, reuse, params);
  grpc::Status s = call.Await();
  if (!s.ok()) Die("raw download failed: " + s.error_message());
  if (reuse->size() != params.size()) Die("raw download: incomplete list");
}

// ---------------------------------------------------------------- reporting

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-repetition samples of one row of the table.
struct Row {
  std::vector<double> mbps, ratio, cpu_ms_per_100mb;
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
  int reps = 7;
  std::vector<int64_t> chunk_kib = {256, 512, 1024};
  std::string only;  // run only the gRPC rows whose name contains this (for profiling)
  bool tune_malloc = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (absl::ConsumePrefix(&a, "--mb=")) {
      if (!absl::SimpleAtoi(a, &mb) || mb <= 0) Die("bad --mb");
    } else if (absl::ConsumePrefix(&a, "--reps=")) {
      if (!absl::SimpleAtoi(a, &reps) || reps <= 0) Die("bad --reps");
    } else if (a == "--tune_malloc") {
      // Keep freed buffers in the heap instead of returning them to the kernel, so gRPC's
      // receive buffers do not page-fault afresh on every read (glibc's dynamic thresholds
      // otherwise trim and mmap megabyte blocks).
      tune_malloc = true;
      mallopt(M_MMAP_THRESHOLD, 32 << 20);
      mallopt(M_TRIM_THRESHOLD, 1 << 30);
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
                       " [--mb=N] [--reps=N] [--chunk_kib=256,512,1024] [--only=zero-copy]"
                       " [--tune_malloc]"));
    }
  }

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

  // One server per variant. "proto" keeps gRPC's defaults (receive limit: one chunk
  // message); the others use PCP's stream settings (pcp/rpc/channel_options.h).
  SyncTraining sync_fresh(&params, false), sync_reuse(&params, true);
  RawTraining raw(&params);
  std::map<std::string, int> ports;
  std::vector<std::unique_ptr<grpc::Server>> servers;
  for (auto [name, service] : std::vector<std::pair<std::string, grpc::Service*>>{
           {"proto", &sync_fresh}, {"tuned", &sync_reuse}, {"zero-copy", &raw}}) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &ports[name]);
    if (name == "proto") {
      builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxChunkMessageBytes));
    } else {
      ApplyStreamServerOptions(&builder);
    }
    for (auto& [k, v] : extra_args) builder.AddChannelArgument(k, v);
    builder.RegisterService(service);
    servers.push_back(builder.BuildAndStart());
  }
  auto channel = [&](const std::string& name) {
    grpc::ChannelArguments args;
    if (name == "proto") {
      args.SetMaxReceiveMessageSize(static_cast<int>(kMaxChunkMessageBytes));
    } else {
      ApplyStreamChannelOptions(&args);
    }
    for (auto& [k, v] : extra_args) args.SetInt(k, v);
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", ports[name]),
                                     grpc::InsecureChannelCredentials(), args);
  };
  auto proto_stub = v1::Training::NewStub(channel("proto"));
  auto tuned_stub = v1::Training::NewStub(channel("tuned"));
  grpc::GenericStub raw_stub(channel("zero-copy"));
  std::vector<NamedTensor> tuned_buffers, raw_buffers;

  // Rows: raw TCP, then (variant, direction, chunk size).
  std::vector<std::string> names = {"raw TCP copy"};
  std::vector<std::function<void(int64_t)>> runs = {
      [&](int64_t) { RawTcpCopy(src.data(), dst.data(), src.size()); }};
  std::vector<int64_t> row_chunk = {0};
  for (int64_t kib : chunk_kib) {
    auto add = [&](std::string name, std::function<void(int64_t)> fn) {
      if (!absl::StrContains(name, only)) return;
      names.push_back(absl::StrCat(name, " ", kib, " KiB"));
      runs.push_back(std::move(fn));
      row_chunk.push_back(kib << 10);
    };
    add("proto      up  ", [&](int64_t c) { SyncUpload(*proto_stub, params, c); });
    add("proto      down", [&](int64_t c) { SyncDownload(*proto_stub, params, c, nullptr); });
    add("tuned      up  ", [&](int64_t c) { SyncUpload(*tuned_stub, params, c); });
    add("tuned      down", [&](int64_t c) { SyncDownload(*tuned_stub, params, c, &tuned_buffers); });
    add("zero-copy  up  ", [&](int64_t c) { RawUpload(raw_stub, params, c); });
    add("zero-copy  down", [&](int64_t c) { RawDownload(raw_stub, params, c, &raw_buffers); });
  }
  // Warm-up: connections, allocator, reuse buffers.
  for (size_t r = 0; r < runs.size(); ++r) runs[r](row_chunk[r] == 0 ? kDefaultChunkBytes : row_chunk[r]);
  if (std::memcmp(src.data(), dst.data(), src.size()) != 0) Die("raw TCP copy corrupted data");
  g_verify = false;

  std::vector<Row> rows(runs.size());
  for (int rep = 0; rep < reps; ++rep) {
    double tcp_mbps = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
      const Cost c = Measure([&] { runs[r](row_chunk[r]); });
      const double mbps = total / kMB / c.wall;
      if (r == 0) tcp_mbps = mbps;
      rows[r].mbps.push_back(mbps);
      rows[r].ratio.push_back(mbps / tcp_mbps);
      rows[r].cpu_ms_per_100mb.push_back(c.cpu * 1e3 * (100 * kMB / total));
    }
  }

  std::printf("Streaming %.0f MB of f32 parameters (%zu tensors) over loopback, %d reps%s "
              "(medians; ratio = gRPC / raw TCP of the same repetition)\n\n",
              total / kMB, params.size(), reps, tune_malloc ? ", malloc tuned" : "");
  std::printf("  %-26s %9s %7s %16s\n", "", "MB/s", "ratio", "CPU ms / 100 MB");
  double best = 0;
  std::string best_name;
  for (size_t r = 0; r < rows.size(); ++r) {
    const double ratio = Median(rows[r].ratio);
    std::printf("  %-26s %9.0f %7.2f %16.0f\n", names[r].c_str(), Median(rows[r].mbps), ratio,
                Median(rows[r].cpu_ms_per_100mb));
    if (r > 0 && ratio > best) {
      best = ratio;
      best_name = names[r];
    }
  }
  std::printf("\n  best ratio %.2f (%s); target >= 0.8\n", best, best_name.c_str());
  for (auto& s : servers) s->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  PrintDiLoCoTraffic();
  return 0;
}
