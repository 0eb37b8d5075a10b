// What a server's per-stream receive window costs on a distant link: one client stream
// uploads to a server that announces a given HTTP/2 window (pcp/rpc/channel_options.h),
// through an emulated link (libs/netem relay) of a given RTT, and the achieved rate is
// printed next to window / RTT, the rate flow control allows when the link is not the limit.
// Figures only, no pass/fail (docs/operations.md, "Admission and limits", quotes them).
//
//   build/bench/pcp_window_rtt_bench [--rtt_ms=50] [--link_mbit=1000] [--message_kib=1024]
//                                    [--windows_kib=64,512,4096,16384] [--seconds=3]
//
// --bdp: the server leaves BDP probing on (gRPC's default), for comparison.
// --download: θ's direction instead: the server streams, the client (a worker) receives with
// PCP's client settings (16 MiB window, BDP probing off) or, with --client_bdp, BDP probing on;
// the server's window column is then irrelevant (one row is enough: --windows_kib=16384).
// Each row: a fresh server with that window, one stream of --message_kib messages written
// back to back for about --seconds at the predicted rate (at least 4 messages), timed from
// the first write to the server's Finish (the last byte has arrived).
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "pcp/netem/relay.h"
#include "pcp/rpc/channel_options.h"

ABSL_FLAG(int, rtt_ms, 50, "round-trip time of the emulated link (half each way)");
ABSL_FLAG(double, link_mbit, 1000, "link rate each way, Mbit/s");
ABSL_FLAG(int, message_kib, 1024, "message size (a Δ chunk is 1 MiB)");
ABSL_FLAG(std::vector<std::string>, windows_kib, std::vector<std::string>({"64", "512", "4096", "16384"}),
          "server receive windows to measure, KiB");
ABSL_FLAG(double, seconds, 3, "about how long each row transfers");
ABSL_FLAG(bool, download, false,
          "the server streams to the client instead (θ down); the window is then the client's: its "
          "16 MiB with BDP probing off (PCP's setting), or gRPC's own sizing with --client_bdp");
ABSL_FLAG(bool, client_bdp, false, "--download: the client probes the bandwidth-delay product");
ABSL_FLAG(bool, bdp, false, "the server probes the bandwidth-delay product (gRPC's default) instead of a fixed window");

namespace {

using Clock = std::chrono::steady_clock;

// Reads every message, then finishes OK.
class Sink final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class R final : public grpc::ServerGenericBidiReactor {
     public:
      R() { StartRead(&buf_); }
      void OnReadDone(bool ok) override {
        if (ok) {
          StartRead(&buf_);
        } else {
          Finish(grpc::Status::OK);
        }
      }
      void OnDone() override { delete this; }

     private:
      grpc::ByteBuffer buf_;
    };
    return new R;
  }
};

// Reads one message holding a count and a size ("N S"), writes N messages of S bytes, then
// finishes OK.
class Source final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class R final : public grpc::ServerGenericBidiReactor {
     public:
      R() { StartRead(&in_); }
      void OnReadDone(bool ok) override {
        if (!ok) return Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request"));
        std::vector<grpc::Slice> slices;
        (void)in_.Dump(&slices);
        std::string text;
        for (const grpc::Slice& sl : slices) text.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
        if (std::sscanf(text.c_str(), "%lld %lld", &left_, &size_) != 2 || size_ <= 0) {
          return Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad request"));
        }
        payload_ = grpc::Slice(std::string(static_cast<size_t>(size_), 'x'));
        Next();
      }
      void OnWriteDone(bool ok) override {
        if (!ok) return Finish(grpc::Status(grpc::StatusCode::ABORTED, "write failed"));
        Next();
      }
      void OnDone() override { delete this; }

     private:
      void Next() {
        if (left_-- <= 0) return Finish(grpc::Status::OK);
        grpc::Slice copy = payload_;  // a reference, not a copy of the bytes
        out_ = grpc::ByteBuffer(&copy, 1);
        StartWrite(&out_);
      }
      grpc::ByteBuffer in_, out_;
      grpc::Slice payload_;
      long long left_ = 0, size_ = 0;  // NOLINT(runtime/int): sscanf's type
    };
    return new R;
  }
};

bool Wait(grpc::CompletionQueue* cq) {
  void* tag = nullptr;
  bool ok = false;
  return cq->Next(&tag, &ok) && ok;
}

// Bytes per second of one stream of `messages` messages of `message_bytes` to `target`.
double Upload(const std::string& target, int64_t message_bytes, int64_t messages) {
  grpc::ChannelArguments args;
  pcp::ApplyStreamChannelOptions(&args);
  grpc::GenericStub stub(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(&ctx, "/pcp.bench.Sink/Put", &cq);
  call->StartCall(nullptr);
  if (!Wait(&cq)) return 0;
  const std::string payload(static_cast<size_t>(message_bytes), 'x');
  const auto start = Clock::now();
  for (int64_t i = 0; i < messages; ++i) {
    grpc::Slice slice(payload);
    grpc::ByteBuffer buffer(&slice, 1);
    call->Write(buffer, nullptr);
    if (!Wait(&cq)) return 0;
  }
  call->WritesDone(nullptr);
  if (!Wait(&cq)) return 0;
  grpc::Status status;
  call->Finish(&status, nullptr);
  if (!Wait(&cq) || !status.ok()) return 0;
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(message_bytes * messages) / s;
}

// Bytes per second of one stream of `messages` messages of `message_bytes` from `target`.
double Download(const std::string& target, int64_t message_bytes, int64_t messages, bool client_bdp) {
  grpc::ChannelArguments args;
  if (client_bdp) {  // PCP's settings but BDP probing (set alone: a repeated argument may not override)
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, pcp::kStreamWindowBytes);
    args.SetMaxReceiveMessageSize(pcp::kMaxReceiveMessageBytes);
  } else {
    pcp::ApplyStreamChannelOptions(&args);
  }
  grpc::GenericStub stub(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(&ctx, "/pcp.bench.Source/Get", &cq);
  call->StartCall(nullptr);
  if (!Wait(&cq)) return 0;
  grpc::Slice request(absl::StrCat(messages, " ", message_bytes));
  grpc::ByteBuffer req(&request, 1);
  const auto start = Clock::now();
  call->Write(req, nullptr);
  if (!Wait(&cq)) return 0;
  grpc::ByteBuffer in;
  int64_t bytes = 0;
  while (true) {
    call->Read(&in, nullptr);
    if (!Wait(&cq)) break;
    bytes += static_cast<int64_t>(in.Length());
  }
  grpc::Status status;
  call->Finish(&status, nullptr);
  if (!Wait(&cq) || !status.ok() || bytes != message_bytes * messages) return 0;
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(bytes) / s;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int rtt_ms = absl::GetFlag(FLAGS_rtt_ms);
  const double link_bytes_per_s = absl::GetFlag(FLAGS_link_mbit) * 1e6 / 8;
  const int64_t message_bytes = int64_t{absl::GetFlag(FLAGS_message_kib)} << 10;
  const bool download = absl::GetFlag(FLAGS_download);
  std::printf("# one stream %s, %d KiB messages, link %.0f Mbit/s each way, RTT %d ms, %s BDP probing %s\n",
              download ? "down (server -> client)" : "up (client -> server)", absl::GetFlag(FLAGS_message_kib),
              absl::GetFlag(FLAGS_link_mbit), rtt_ms, download ? "client" : "server",
              (download ? absl::GetFlag(FLAGS_client_bdp) : absl::GetFlag(FLAGS_bdp)) ? "on" : "off");
  std::printf("%12s %16s %16s %14s\n", "window KiB", "window/RTT MB/s", "achieved MB/s", "achieved Mbit/s");
  for (const std::string& w : absl::GetFlag(FLAGS_windows_kib)) {
    const int window = std::stoi(w) << 10;
    Sink sink;
    Source source;
    grpc::ServerBuilder builder;
    if (absl::GetFlag(FLAGS_bdp)) {
      builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, window);
      builder.SetMaxReceiveMessageSize(pcp::kMaxReceiveMessageBytes);
    } else {
      pcp::ApplyStreamServerOptions(&builder, window);
    }
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    if (download) {
      builder.RegisterCallbackGenericService(&source);
    } else {
      builder.RegisterCallbackGenericService(&sink);
    }
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr) {
      std::fprintf(stderr, "cannot start a server\n");
      return 1;
    }
    const auto half = std::chrono::milliseconds(rtt_ms) / 2;
    absl::StatusOr<std::unique_ptr<pcp::netem::Relay>> relay =
        pcp::netem::Relay::Create({.target = "127.0.0.1:" + std::to_string(port),
                                   .up = {.rate_bytes_per_s = link_bytes_per_s, .delay = half},
                                   .down = {.rate_bytes_per_s = link_bytes_per_s, .delay = half}});
    if (!relay.ok()) {
      std::fprintf(stderr, "relay: %s\n", relay.status().ToString().c_str());
      return 1;
    }
    const double predicted = rtt_ms > 0 ? std::min(link_bytes_per_s, window / (rtt_ms / 1000.0)) : link_bytes_per_s;
    const int64_t messages =
        std::max<int64_t>(4, static_cast<int64_t>(predicted * absl::GetFlag(FLAGS_seconds) / message_bytes));
    const double achieved =
        download ? Download((*relay)->address(), message_bytes, messages, absl::GetFlag(FLAGS_client_bdp))
                 : Upload((*relay)->address(), message_bytes, messages);
    std::printf("%12d %16.1f %16.1f %14.0f\n", window >> 10, window / (rtt_ms / 1000.0) / 1e6, achieved / 1e6,
                achieved * 8 / 1e6);
    std::fflush(stdout);
    relay->reset();
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  return 0;
}
