// The shepherd's side of a worker's Training.Connect stream, driven through the real
// handler (services/shepherd/src/worker_session.h) from bytes, without a network: the input
// is a mode byte, then WorkerMessages, each a 2-byte little-endian length and the serialized
// message. The session is told to expect round 1's Δ (w[4,8], b[8], f32) once the worker
// joined; mode bit 0 recomputes the result chunks' CRCs, bit 1 makes the Δ streamed into a
// RoundSum (streaming aggregation: a ResultHeader announcing 2 steps and 64 tokens, judged
// against a cap of 100). Whatever the bytes, the session ends at most once, a Δ it hands on has
// exactly the expected shapes, a streamed one comes with its verdict, and the sum stays finite
// and within the cap's norm.
#include <cmath>
#include <memory>
#include <vector>

#include "fuzz_chunks.h"
#include "fuzz_target.h"
#include "pcp/v1/training.pb.h"
#include "spdlog/spdlog.h"
#include "worker_session.h"

namespace {

using pcp::shepherd::WorkerSession;

const std::vector<pcp::TensorSpec>& DeltaSpecs() {
  static const auto* specs =
      new std::vector<pcp::TensorSpec>{{"w", pcp::DType::kF32, {4, 8}}, {"b", pcp::DType::kF32, {8}}};
  return *specs;
}

// Completes every write at once (the reactor's OnWriteDone), outside the session's calls.
class Transport final : public pcp::shepherd::SessionTransport {
 public:
  void StartWrite(const pcp::v1::ShepherdMessage*, const pcp::ChunkPayload*) override { ++pending_; }
  void Finish(const absl::Status&) override { ++finished_; }
  void Cancel() override {}
  // Delivers the completions the session is waiting for.
  void Drain(WorkerSession& session) {
    for (int guard = 0; pending_ > 0 && guard < 10000; ++guard) {
      --pending_;
      session.OnWriteDone(true);
    }
  }
  int finished() const { return finished_; }

 private:
  int pending_ = 0;
  int finished_ = 0;
};

class Observer final : public pcp::shepherd::SessionObserver, public pcp::shepherd::WorkerEventSink {
 public:
  absl::Status AdmitJoin(const std::shared_ptr<WorkerSession>& session) override {
    if (session->supervisor_id() == "taken") return absl::AlreadyExistsError("slot taken");
    return absl::OkStatus();
  }
  explicit Observer(std::shared_ptr<pcp::shepherd::RoundSum> sum) : sum_(std::move(sum)) {}
  void OnJoined(const std::shared_ptr<WorkerSession>& session) override {
    session->ExpectResult(1, DeltaSpecs(), pcp::codec::Codec::kF32, sum_);
  }
  void OnHeartbeat(const std::shared_ptr<WorkerSession>&, const pcp::v1::WorkerHeartbeat&) override {}
  // Every other event (worker_event.h): only results are checked.
  void Post(pcp::shepherd::WorkerEvent event) override {
    auto* result = std::get_if<pcp::shepherd::WorkerResult>(&event.body);
    if (result == nullptr) return;
    const pcp::shepherd::ReceivedDelta& received = result->delta;
    PCP_FUZZ_CHECK(result->round == 1);
    PCP_FUZZ_CHECK(received.streamed.has_value() == (sum_ != nullptr && !received.abandoned()));
    if (received.streamed) PCP_FUZZ_CHECK(received.tensors.empty());
    const std::vector<pcp::Tensor>& delta = received.tensors;
    if (delta.empty()) return;
    PCP_FUZZ_CHECK(delta.size() == DeltaSpecs().size());
    for (size_t i = 0; i < delta.size(); ++i) PCP_FUZZ_CHECK(delta[i].shape() == DeltaSpecs()[i].shape);
  }
  void OnEnded(const std::shared_ptr<WorkerSession>&, const absl::Status&) override { ++ended_; }
  int ended() const { return ended_; }

 private:
  std::shared_ptr<pcp::shepherd::RoundSum> sum_;
  int ended_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pcp::fuzz::QuietProtobuf();
  spdlog::set_level(spdlog::level::off);  // every refused message is logged as a warning
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool fix_checksums = (data[0] & 1) != 0;
  std::vector<pcp::v1::WorkerMessage> messages =
      pcp::fuzz::SplitMessages<pcp::v1::WorkerMessage>(data + 1, size - 1, 256);
  if (fix_checksums) {
    std::vector<pcp::v1::TensorChunk*> chunks;
    for (pcp::v1::WorkerMessage& m : messages) {
      if (m.has_result_chunk()) chunks.push_back(m.mutable_result_chunk()->mutable_chunk());
    }
    pcp::fuzz::FixChecksums(chunks);
  }
  std::shared_ptr<pcp::shepherd::RoundSum> sum;
  if (data[0] & 2) {
    pcp::diloco::DeltaScreen screen(pcp::diloco::ScreeningOptions{.max_norm = 100});
    sum = pcp::shepherd::RoundSum::Create(DeltaSpecs(), screen, screen.RoundThreshold({}), /*steps=*/2, /*tokens=*/64);
  }
  Observer observer(sum);
  Transport transport;
  pcp::shepherd::SessionOptions options;
  options.max_chunk_bytes = 1 << 16;
  auto session = std::make_shared<WorkerSession>("s-1", "ipv4:127.0.0.1:1", options, &observer, &observer);
  session->AttachTransport(&transport);
  for (const pcp::v1::WorkerMessage& m : messages) {
    if (!session->reading()) break;
    session->OnRead(m);
    transport.Drain(*session);
  }
  session->Close(absl::OkStatus());
  transport.Drain(*session);
  session->OnTransportDone();
  PCP_FUZZ_CHECK(observer.ended() <= 1);
  PCP_FUZZ_CHECK(transport.finished() <= 1);
  if (sum != nullptr) {
    sum->sum.Finish();
    // One Δ of weight 64 at most began (one stream, one round): every element averages a
    // value that passed the declared-norm check, so it is finite and within the cap's norm.
    double squares = 0;
    for (const pcp::Tensor& t : sum->sums) {
      for (int64_t k = 0; k < t.num_elements(); ++k)
        squares += static_cast<double>(t.data<float>()[k]) * t.data<float>()[k];
    }
    PCP_FUZZ_CHECK(std::isfinite(squares) && squares <= 100.0 * 100.0 * 1.01);
  }
  return 0;
}
