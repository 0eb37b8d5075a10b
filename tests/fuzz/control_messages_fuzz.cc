// The shepherd's side of a supervisor's Control.Supervise stream, driven through the real
// handler (services/shepherd/src/control_stream.h) and a real ControlRegistry from bytes,
// without a network: the input is a mode byte, then SupervisorMessages, each a 2-byte
// little-endian length and the serialized message. Writes complete after each message (as
// gRPC's OnWriteDone would, on its own thread), then the supervisor half-closes.
//
// Mode bits: 0 the caller is node credential "node-1" (its hello must be for that id);
// 1 a RestartWorker command is sent to "node-1" after the first message (command id 1);
// 2 a heartbeat tick after every message; 3 a silent-stream tick (timeout) at the end;
// 4 a second stream reads every message too (one id, two streams: ALREADY_EXISTS);
// 5 the service is shutting down (hellos refused); 6 writes fail; 7 the service ends every
// stream (EndAllStreams) before the supervisor half-closes.
//
// Whatever the bytes: the first write of a stream is its welcome (or rejection), nothing is
// written after the stream finished, each stream finishes exactly once, a finished stream's
// supervisor is no longer connected, and every command's callback runs exactly once.
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "control_stream.h"
#include "fuzz_chunks.h"
#include "fuzz_target.h"
#include "pcp/shepherd/control_registry.h"
#include "pcp/v1/control.pb.h"
#include "spdlog/spdlog.h"

namespace {

using pcp::shepherd::SupervisorStream;

// Records what the stream does with its RPC; writes complete when Drain says so.
class Transport final : public pcp::shepherd::ControlTransport {
 public:
  void WriteCommand(const pcp::v1::ControlCommand* command) override {
    PCP_FUZZ_CHECK(finished_ == 0);
    PCP_FUZZ_CHECK(pending_ == 0);  // one write at a time
    if (writes_ == 0) PCP_FUZZ_CHECK(command->has_welcome());
    ++writes_;
    ++pending_;
  }
  void FinishStream(const absl::Status&) override {
    PCP_FUZZ_CHECK(pending_ == 0);
    ++finished_;
  }
  void CancelStream() override { ++cancelled_; }

  // Delivers the completions the stream is waiting for.
  void Drain(SupervisorStream& stream, bool ok) {
    for (int guard = 0; pending_ > 0 && guard < 10000; ++guard) {
      --pending_;
      stream.OnWriteDone(ok && cancelled_ == 0);  // a cancelled RPC fails its writes
    }
  }
  int finished() const { return finished_; }

 private:
  int writes_ = 0, pending_ = 0, finished_ = 0, cancelled_ = 0;
};

struct Stream {
  Stream(pcp::shepherd::ControlRegistry* registry, const pcp::shepherd::ControlServiceOptions* options, bool closed,
         pcp::auth::Principal caller)
      : stream(
            registry, options,
            [closed] { return closed ? absl::UnavailableError("the shepherd is shutting down") : absl::OkStatus(); },
            std::move(caller), "ipv4:127.0.0.1:1", &transport) {}
  Transport transport;
  SupervisorStream stream;
  bool reading = true;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pcp::fuzz::QuietProtobuf();
  spdlog::set_level(spdlog::level::off);  // every refusal and disconnect is logged
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::vector<pcp::v1::SupervisorMessage> messages =
      pcp::fuzz::SplitMessages<pcp::v1::SupervisorMessage>(data + 1, size - 1, 256);

  pcp::auth::Principal caller;
  if (mode & 1) {
    caller.name = "node-1";
    caller.via = pcp::auth::Principal::Via::kCertificate;
  }
  const pcp::shepherd::ControlServiceOptions options{.heartbeat_interval_ms = 1000,
                                                     .heartbeat_timeout_ms = 3000,
                                                     .version = "0.1.0"};
  std::atomic<int> commands_sent{0}, commands_done{0};
  {
    pcp::shepherd::ControlRegistry registry;
    std::vector<std::unique_ptr<Stream>> streams;
    streams.push_back(std::make_unique<Stream>(&registry, &options, (mode & 32) != 0, caller));
    if (mode & 16) streams.push_back(std::make_unique<Stream>(&registry, &options, (mode & 32) != 0, caller));
    const bool writes_ok = (mode & 64) == 0;

    for (size_t i = 0; i < messages.size(); ++i) {
      for (auto& s : streams) {
        if (!s->reading) continue;
        s->reading = s->stream.OnRead(messages[i]);
        s->transport.Drain(s->stream, writes_ok);
        if (mode & 4) {
          s->stream.Tick(SupervisorStream::Clock::now());
          s->transport.Drain(s->stream, writes_ok);
        }
      }
      if (i == 0 && (mode & 2)) {
        ++commands_sent;
        registry.SendCommand("node-1", pcp::shepherd::MakeRestartWorker("fuzz", 0), absl::Hours(1),
                             [&commands_done](absl::StatusOr<pcp::v1::CommandAck>) { ++commands_done; });
        for (auto& s : streams) s->transport.Drain(s->stream, writes_ok);
      }
    }
    for (auto& s : streams) {
      if (mode & 8) s->stream.Tick(SupervisorStream::Clock::now() + std::chrono::hours(1));
      if (mode & 128) s->stream.End(absl::UnavailableError("the shepherd is shutting down"), false, false);
      if (s->reading) s->stream.OnReadsDone();
      s->transport.Drain(s->stream, writes_ok);
      PCP_FUZZ_CHECK(s->transport.finished() == 1);
      s->stream.OnDone();
    }
    for (const pcp::shepherd::SupervisorInfo& info : registry.ListSupervisors()) PCP_FUZZ_CHECK(!info.connected);
    // Resolved by the ack, the refusal or the disconnect, before the registry goes.
    PCP_FUZZ_CHECK(commands_done.load() == commands_sent.load());
  }
  PCP_FUZZ_CHECK(commands_done.load() == commands_sent.load());
  return 0;
}
