#include "stream_bench_server.h"

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pcp/diloco/delta_sum.h"
#include "pcp/diloco/screening.h"  // SumOfSquares
#include "pcp/rpc/channel_options.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/rpc/chunked_list.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/v1/training.grpc.pb.h"

namespace pcp::bench {

bool SameTensors(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].name != want[i].name || !BitwiseEqual(got[i].tensor, want[i].tensor)) return false;
  }
  return true;
}

namespace {

// What a Connect call is asked to do, from the client's metadata.
struct CallSpec {
  int64_t chunk_bytes = kDefaultChunkBytes;
  bool verify = false;  // compare the received Δ with what was sent
  // The round whose θ is asked for (fan-out rows): the streaming server chunks θ once per
  // round, for every stream. 0: chunked once for the whole run.
  int64_t round = 0;
};
CallSpec SpecFrom(const grpc::ServerContextBase* context) {
  CallSpec spec;
  const auto& md = context->client_metadata();
  if (auto it = md.find(kChunkBytesKey); it != md.end()) {
    (void)absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &spec.chunk_bytes);
  }
  if (auto it = md.find(kRoundKey); it != md.end()) {
    (void)absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &spec.round);
  }
  spec.verify = md.find(kVerifyKey) != md.end();
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
    if (spec.verify && !SameTensors(*list, *params_)) return Mismatch();
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
//   zero-copy  θ chunked (CRC per chunk) by each stream; Δ assembled into last call's tensors
//   streaming  θ sent from a ChunkedList built once (per round with x-round) and shared by
//              every stream, as services/shepherd/src/worker_session.cc sends it; Δ streamed
//              by the assembler (StreamTo) into a DeltaSum, weight 1, checked against its
//              norm, added from gRPC's slices as worker_session.cc adds it (the sums are kept across calls; a round's
//              zero-fill and Finish are not in the timed passes, only in the verifying one)
class RawTraining final : public v1::Training::WithRawCallbackMethod_Connect<v1::Training::Service> {
 public:
  RawTraining(const std::vector<NamedTensor>* params, bool streaming) : params_(params), streaming_(streaming) {
    if (!streaming_) return;
    double squares = 0;
    for (const NamedTensor& p : *params_) {
      Tensor sum(DType::kF32, p.tensor.shape());  // zeroed
      AdviseHugePages(sum);                       // as the shepherd's RoundSum
      sum_spans_.emplace_back(sum.data<float>(), static_cast<size_t>(sum.num_elements()));
      sums_.push_back(std::move(sum));
      squares += diloco::SumOfSquares(
          absl::MakeConstSpan(p.tensor.data<float>(), static_cast<size_t>(p.tensor.num_elements())));
    }
    norm_ = std::sqrt(squares);  // what the worker declares in its ResultHeader
  }

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(grpc::CallbackServerContext* context) override {
    return new Reactor(this, SpecFrom(context));
  }

 private:
  // θ chunked once for (chunk size, round), shared by the streams that ask for it. The first
  // stream builds it on its reactor thread (the shepherd builds it off the reactors, in its
  // round engine); the others wait for it.
  absl::StatusOr<std::shared_ptr<const ChunkedList>> Theta(const CallSpec& spec) {
    std::lock_guard<std::mutex> lock(theta_mu_);
    auto& slot = theta_[spec.chunk_bytes];
    if (slot.list == nullptr || slot.round != spec.round) {
      auto list = ChunkedList::Create(*params_, ChunkOptions{spec.chunk_bytes});
      if (!list.ok()) return list.status();
      slot = {spec.round, *std::move(list)};
    }
    return slot.list;
  }
  // The Δ in the sums equals θ (weight 1, added once onto zeros, averaged over one Δ).
  bool SumIsParams(const diloco::DeltaSum& sum) const {
    int64_t elements = 0;
    for (size_t i = 0; i < sums_.size(); ++i) {
      if (!BitwiseEqual(sums_[i], (*params_)[i].tensor)) return false;
      elements += sums_[i].num_elements();
    }
    return sum.covered_elements() == elements;
  }
  void ZeroSums() {
    for (absl::Span<float> s : sum_spans_) std::fill(s.begin(), s.end(), 0.0f);
  }

  class Reactor : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    Reactor(RawTraining* service, CallSpec spec) : service_(service), spec_(spec) { StartRead(&in_); }
    void OnReadDone(bool ok) override {
      if (!ok) return Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "short stream"));
      if (absl::Status s = parser_.Parse(&in_, kResultChunkDataPath, &msg_); !s.ok()) return Finish(ToGrpcStatus(s));
      if (msg_.has_join()) {
        if (service_->streaming_) {
          auto theta = service_->Theta(spec_);
          if (!theta.ok()) return Finish(ToGrpcStatus(theta.status()));
          theta_ = *std::move(theta);
        } else {
          auto chunker = TensorListChunker::Create(*service_->params_, ChunkOptions{spec_.chunk_bytes});
          if (!chunker.ok()) return Finish(ToGrpcStatus(chunker.status()));
          chunker_.emplace(*std::move(chunker));
        }
        return WriteNext();
      }
      if (!started_) Start();
      if (absl::Status s = assembler_.AddPieces(msg_.result_chunk().chunk(), parser_.payload()); !s.ok()) {
        return Finish(ToGrpcStatus(s));
      }
      if (!assembler_.complete()) return StartRead(&in_);
      auto list = assembler_.Take();
      if (!list.ok()) return Finish(ToGrpcStatus(list.status()));
      if (service_->streaming_) {
        if (spec_.verify) {
          sum_->Finish();
          if (!service_->SumIsParams(*sum_)) return Finish(Mismatch());
        }
      } else {
        if (spec_.verify && !SameTensors(*list, *service_->params_)) return Finish(Mismatch());
        service_->last_ = *std::move(list);
      }
      v1::ShepherdMessage ack;
      ack.mutable_heartbeat()->set_sequence(1);
      grpc::Slice slice(ack.SerializeAsString());
      out_ = grpc::ByteBuffer(&slice, 1);
      acking_ = true;
      StartWrite(&out_);
    }
    void OnWriteDone(bool ok) override {
      if (!ok) return Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone"));
      if (acking_ || (theta_ != nullptr ? next_ >= theta_->size() : chunker_->done())) {
        return Finish(grpc::Status::OK);
      }
      WriteNext();
    }
    void OnDone() override { delete this; }

   private:
    // The first chunk of a Δ (one call at a time in this benchmark).
    void Start() {
      assembler_.ExpectSpecs(SpecsOf(*service_->params_));
      if (service_->streaming_) {
        if (spec_.verify) service_->ZeroSums();
        sum_ = std::make_unique<diloco::DeltaSum>(service_->sum_spans_);
        contribution_ = sum_->Begin("bench", /*weight=*/1, /*scale=*/1, service_->norm_);
        assembler_.StreamTo([this](uint32_t tensor, int64_t offset, const F32Pieces& values, double sum_of_squares) {
          return contribution_->Add(tensor, offset, values, sum_of_squares);
        });
      } else {
        assembler_.ReuseBuffers(std::move(service_->last_));
      }
      started_ = true;
    }
    void WriteNext() {
      v1::ShepherdMessage head;
      v1::ParameterChunk* p = head.mutable_parameter_chunk();
      p->set_round(1);
      if (theta_ != nullptr) {
        *p->mutable_chunk() = theta_->chunk(next_);  // the data stays in the list
        out_ = SerializeWithPayload(head, kParameterChunkDataPath, theta_->payload(next_++));
      } else {
        ChunkPayload payload;
        chunker_->Next(p->mutable_chunk(), &payload);
        out_ = SerializeWithPayload(head, kParameterChunkDataPath, payload);
      }
      StartWrite(&out_);
    }

    RawTraining* service_;
    CallSpec spec_;
    grpc::ByteBuffer in_, out_;
    ChunkMessageParser parser_;
    v1::WorkerMessage msg_;
    std::optional<TensorListChunker> chunker_;
    std::shared_ptr<const ChunkedList> theta_;
    size_t next_ = 0;
    TensorListAssembler assembler_;
    std::unique_ptr<diloco::DeltaSum> sum_;
    std::unique_ptr<diloco::DeltaSum::Contribution> contribution_;
    bool started_ = false, acking_ = false;
  };

  const std::vector<NamedTensor>* params_;
  const bool streaming_;
  std::vector<NamedTensor> last_;  // zero-copy: last Δ's tensors, received into again
  // streaming: the round's sums and the Δ's norm; θ's chunk lists.
  std::vector<Tensor> sums_;
  std::vector<absl::Span<float>> sum_spans_;
  double norm_ = 0;
  struct ThetaSlot {
    int64_t round = 0;
    std::shared_ptr<const ChunkedList> list;
  };
  std::mutex theta_mu_;
  std::map<int64_t, ThetaSlot> theta_;  // by chunk bytes
};

}  // namespace

Child SpawnGrpcServer(const std::string& variant, const std::vector<NamedTensor>* params,
                      const std::vector<std::pair<std::string, int>>& extra_args) {
  return bench::Spawn([&](const std::function<void(int)>& write_port) {
    std::unique_ptr<grpc::Service> service;
    if (variant == "zero-copy" || variant == "streaming") {
      service = std::make_unique<RawTraining>(params, variant == "streaming");
    } else {
      service = std::make_unique<SyncTraining>(params, variant == "tuned");
    }
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    if (variant == "proto")
      builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxChunkMessageBytes));
    else
      ApplyStreamServerOptions(&builder);
    for (auto& [k, v] : extra_args) builder.AddChannelArgument(k, v);
    builder.RegisterService(service.get());
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr || port == 0) Die(variant + ": cannot start the server");
    write_port(port);
    server->Wait();
  });
}

}  // namespace pcp::bench
