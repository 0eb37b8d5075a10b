// The worker's side of a Training.Connect stream, driven through the real handler
// (services/worker/src/message_handler.h) from bytes, without a network: the input is a mode
// byte, then ShepherdMessages, each a 2-byte little-endian length and the serialized message.
// Mode bit 0 recomputes the CRCs of θ chunks and of program / shard blobs; bit 1 hands θ chunk
// data to the handler as two payload pieces (as received from gRPC) instead of in the message.
//
// The compute is stubbed behind the Backend interface: the real ProgramCache parses and
// "compiles" a program whose text hashes to its Assignment's program_hash (the seeds carry a
// tiny train_step), and the real InnerLoop and RunRound run τ steps on a backend whose
// train_step subtracts lr from every parameter and reports lr as the loss. Shared-file shards
// are refused (no data roots); inline shards load for real.
//
// Whatever the bytes: no crash, a refused message is an error Status with a code that means
// something (not UNKNOWN or INTERNAL), and a Δ the worker sends reassembles into tensors of
// exactly the shapes of the Assignment's parameters, with a RoundResult of τ steps after it.
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_chunks.h"
#include "fuzz_target.h"
#include "message_handler.h"
#include "pcp/kernels/backend.h"
#include "pcp/rpc/crc32c.h"
#include "pcp/v1/training.pb.h"
#include "spdlog/spdlog.h"

namespace {

using pcp::Buffer;
using pcp::Tensor;
using pcp::TensorType;

class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(const TensorType& type) : type_(type), tensor_(type.dtype, type.shape) {}
  const TensorType& type() const override { return type_; }
  Tensor& tensor() { return tensor_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  TensorType type_;
  Tensor tensor_;
};

// train_step(params, m, v, step, lr, tokens, targets) -> (params - lr, m, v, loss = lr).
class FakeStep final : public pcp::Executable {
 public:
  explicit FakeStep(const pcp::Function& fn) : fn_(fn) {}
  const pcp::Function& function() const override { return fn_; }
  absl::Status Run(absl::Span<Buffer* const> args, absl::Span<Buffer* const> results) override {
    const size_t p = (args.size() - 4) / 3;
    const float lr = static_cast<HostBuffer*>(args[3 * p + 1])->tensor().data<float>()[0];
    for (size_t i = 0; i < p; ++i) {
      Tensor& t = static_cast<HostBuffer*>(results[i])->tensor();
      if (t.dtype() != pcp::DType::kF32) continue;
      float* x = t.data<float>();
      for (int64_t k = 0; k < t.num_elements(); ++k) x[k] -= lr;
    }
    Tensor& loss = static_cast<HostBuffer*>(results.back())->tensor();
    if (loss.dtype() == pcp::DType::kF32 && loss.num_elements() > 0) loss.data<float>()[0] = lr;
    return absl::OkStatus();
  }

 private:
  const pcp::Function& fn_;
};

class FakeBackend final : public pcp::Backend {
 public:
  std::string Name() const override { return "fake"; }
  std::string DeviceDescription() const override { return "fuzzing stub"; }
  absl::Status Supports(const pcp::Function&) const override { return absl::OkStatus(); }
  absl::StatusOr<std::unique_ptr<pcp::Executable>> Compile(const pcp::Function& fn) override {
    functions_.push_back(std::make_unique<pcp::Function>(fn));
    return std::make_unique<FakeStep>(*functions_.back());
  }
  absl::StatusOr<std::unique_ptr<Buffer>> Allocate(const TensorType& type) override {
    return std::make_unique<HostBuffer>(type);
  }
  absl::Status CopyIn(const Tensor& source, Buffer& destination) override {
    Tensor& t = static_cast<HostBuffer&>(destination).tensor();
    if (source.dtype() != t.dtype() || source.shape() != t.shape()) {
      return absl::InvalidArgumentError("CopyIn: type mismatch");
    }
    std::memcpy(t.raw_data(), source.raw_data(), static_cast<size_t>(t.byte_size()));
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> CopyOut(const Buffer& source) override {
    const Tensor& t = static_cast<const HostBuffer&>(source).tensor();
    Tensor out(t.dtype(), t.shape());
    std::memcpy(out.raw_data(), t.raw_data(), static_cast<size_t>(t.byte_size()));
    return out;
  }

 private:
  std::vector<std::unique_ptr<pcp::Function>> functions_;
};

// Collects what the worker sends and reassembles its Δ.
class Link final : public pcp::worker::ShepherdLink {
 public:
  bool Write(const pcp::v1::WorkerMessage& message) override {
    if (message.has_round_result()) {
      // A complete round's Δ came first, whole; an abandoned round sends no Δ.
      if (delta_ && !specs_.empty()) {
        PCP_FUZZ_CHECK(delta_->complete());
        absl::StatusOr<std::vector<pcp::NamedTensor>> delta = delta_->Take();
        PCP_FUZZ_CHECK(delta.ok());
        PCP_FUZZ_CHECK(delta->size() == specs_.size());
        for (size_t i = 0; i < specs_.size(); ++i) {
          PCP_FUZZ_CHECK((*delta)[i].name == specs_[i].name);
          PCP_FUZZ_CHECK((*delta)[i].tensor.shape() == specs_[i].shape);
        }
        PCP_FUZZ_CHECK(message.round_result().steps() == steps_);
        delta_.reset();
        ++rounds_;
      }
    }
    return true;
  }
  bool Write(const pcp::v1::WorkerMessage& head, const pcp::ChunkPayload& payload) override {
    PCP_FUZZ_CHECK(head.has_result_chunk());
    if (specs_.empty()) return true;  // a streaming round's fragment: not checked here
    if (!delta_) {
      delta_.emplace();
      delta_->ExpectSpecs(specs_);
    }
    const absl::string_view piece(payload.data, payload.size);
    PCP_FUZZ_CHECK(delta_->AddPieces(head.result_chunk().chunk(), absl::MakeConstSpan(&piece, 1)).ok());
    return true;
  }
  void SetPhase(pcp::v1::WorkerPhase, uint64_t, uint32_t) override {}
  bool ended() const override { return drained_; }
  absl::Status status() const override { return absl::OkStatus(); }
  bool Pump(const std::function<void(const pcp::v1::ShepherdMessage&, pcp::DataPieces)>&,
            std::chrono::milliseconds) override {
    drained_ = true;  // a streaming round waiting for more: the input's messages come through Handle
    return false;
  }

  // A round starts: a Δ left incomplete by a cancelled round is forgotten.
  void StartRound() { delta_.reset(); }
  // What the next Δ must look like (the last Assignment's parameters; none: not checked) and
  // its steps (τ).
  void Expect(std::vector<pcp::TensorSpec> specs, uint32_t steps) {
    specs_ = std::move(specs);
    steps_ = steps;
    delta_.reset();
  }
  int rounds() const { return rounds_; }

 private:
  std::vector<pcp::TensorSpec> specs_;
  uint32_t steps_ = 0;
  std::optional<pcp::TensorListAssembler> delta_;
  int rounds_ = 0;
  bool drained_ = false;  // a streaming round asked for a message the input does not have yet
};

// Each chunk's crc32c, and blob_crc32c of every blob: the chunks of one name in order, a
// chunk at offset 0 starting the next blob of that name (the next Assignment's).
void FixBlobChecksums(const std::vector<pcp::v1::BlobChunk*>& chunks) {
  std::map<std::string, std::vector<pcp::v1::BlobChunk*>> open;  // the current blob per name
  auto close = [](std::vector<pcp::v1::BlobChunk*>& blob) {
    uint32_t crc = 0;
    for (pcp::v1::BlobChunk* c : blob) crc = pcp::Crc32cExtend(crc, c->data().data(), c->data().size());
    for (pcp::v1::BlobChunk* c : blob) c->set_blob_crc32c(crc);
    blob.clear();
  };
  for (pcp::v1::BlobChunk* chunk : chunks) {
    chunk->set_crc32c(pcp::Crc32c(chunk->data().data(), chunk->data().size()));
    std::vector<pcp::v1::BlobChunk*>& blob = open[chunk->name()];
    if (chunk->offset() == 0) close(blob);
    blob.push_back(chunk);
  }
  for (auto& [name, blob] : open) close(blob);
}

bool Meaningful(const absl::Status& s) {
  return !s.ok() && s.code() != absl::StatusCode::kUnknown && s.code() != absl::StatusCode::kInternal;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pcp::fuzz::QuietProtobuf();
  spdlog::set_level(spdlog::level::off);  // every assignment and round is logged
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool fix_checksums = (data[0] & 1) != 0;
  const bool as_pieces = (data[0] & 2) != 0;
  std::vector<pcp::v1::ShepherdMessage> messages =
      pcp::fuzz::SplitMessages<pcp::v1::ShepherdMessage>(data + 1, size - 1, 256);
  if (fix_checksums) {
    std::map<uint64_t, std::vector<pcp::v1::TensorChunk*>> theta;  // by round
    std::vector<pcp::v1::BlobChunk*> blobs;
    for (pcp::v1::ShepherdMessage& m : messages) {
      if (m.has_parameter_chunk()) {
        theta[m.parameter_chunk().round()].push_back(m.mutable_parameter_chunk()->mutable_chunk());
      }
      if (m.has_program_chunk()) blobs.push_back(m.mutable_program_chunk());
      if (m.has_shard_chunk()) blobs.push_back(m.mutable_shard_chunk());
    }
    for (auto& [round, chunks] : theta) pcp::fuzz::FixChecksums(chunks);
    FixBlobChecksums(blobs);
  }

  FakeBackend backend;
  pcp::worker::ProgramCache cache(backend, /*dir=*/"");
  const pcp::DataRoots roots;  // confined to nothing
  pcp::worker::DeltaFault fault;
  std::atomic<bool> stop{false};
  pcp::worker::RoundCancels cancels;
  Link link;
  pcp::worker::MessageHandler handler(
      {.cache = &cache, .data_roots = &roots, .fault = &fault, .stop = &stop, .cancels = &cancels, .send_inline = true},
      &link);

  for (pcp::v1::ShepherdMessage& m : messages) {
    // The Δ the next round sends must have this Assignment's shapes.
    if (m.has_assignment()) {
      std::vector<pcp::TensorSpec> specs;
      for (const pcp::v1::TensorSpec& s : m.assignment().parameters()) {
        absl::StatusOr<pcp::TensorSpec> spec = pcp::TensorSpecFromProto(s);
        if (spec.ok()) specs.push_back(*std::move(spec));
      }
      const bool streaming =
          m.assignment().streaming().fragments() > 1 || m.assignment().streaming().overlap_steps() > 0;
      if (streaming) specs.clear();
      link.Expect(std::move(specs), m.assignment().hyperparameters().inner_steps());
    }
    if (m.has_start_round()) link.StartRound();
    cancels.Peek(m);  // the reader thread's look, before the handler's
    absl::Status s;
    if (as_pieces && m.has_parameter_chunk()) {
      const std::string bytes = std::move(*m.mutable_parameter_chunk()->mutable_chunk()->mutable_data());
      const size_t half = bytes.size() / 2;
      const absl::string_view pieces[2] = {absl::string_view(bytes).substr(0, half),
                                           absl::string_view(bytes).substr(half)};
      s = handler.Handle(m, bytes.empty() ? pcp::DataPieces() : pcp::DataPieces(pieces));
    } else {
      s = handler.Handle(m);
    }
    if (!s.ok()) {
      PCP_FUZZ_CHECK(Meaningful(s));
      break;  // the worker drops the stream
    }
  }
  return 0;
}
