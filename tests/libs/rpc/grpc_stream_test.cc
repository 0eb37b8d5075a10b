// Chunked tensor lists over a real gRPC stream: a real grpc::Server on 127.0.0.1 (port 0,
// the kernel picks one) runs a test-only implementation of the generated Training service
// that assembles a worker's result list and streams it back as parameter chunks (typed sync
// API, or the raw callback API with the zero-copy helpers of chunk_wire.h).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/status_macros.h"
#include "pcp/rpc/chunk_wire.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/testing/tensor_testing.h"
#include "pcp/v1/training.grpc.pb.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

Tensor RandomF32(Shape shape, uint32_t seed) { return testing::RandomTensor({DType::kF32, std::move(shape)}, seed); }

// Receives one tensor list as ResultChunks, then sends it back as ParameterChunks of the
// next round. Records the largest message it saw each way.
class EchoTraining final : public v1::Training::Service {
 public:
  explicit EchoTraining(std::optional<std::vector<TensorSpec>> expected) : expected_(std::move(expected)) {}

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::ShepherdMessage, v1::WorkerMessage>* stream) override {
    return ToGrpcStatus(Echo(stream));
  }

  size_t max_received() const { return max_received_; }
  size_t max_sent() const { return max_sent_; }

 private:
  absl::Status Echo(grpc::ServerReaderWriter<v1::ShepherdMessage, v1::WorkerMessage>* stream) {
    max_received_ = 0;
    max_sent_ = 0;
    TensorListAssembler assembler;
    if (expected_) assembler.ExpectSpecs(*expected_);
    v1::WorkerMessage in;
    uint64_t round = 0;
    while (!assembler.complete() && stream->Read(&in)) {
      max_received_ = std::max(max_received_.load(), in.ByteSizeLong());
      if (in.kind_case() != v1::WorkerMessage::kResultChunk) {
        return absl::InvalidArgumentError("expected a result_chunk");
      }
      round = in.result_chunk().round();
      PCP_RETURN_IF_ERROR(assembler.Add(in.result_chunk().chunk()), _ << "result of round " << round);
    }
    PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> list, assembler.Take(), _ << "stream ended early");
    PCP_ASSIGN_OR_RETURN(TensorListChunker chunker, TensorListChunker::Create(std::move(list)));
    v1::ShepherdMessage out;
    while (!chunker.done()) {
      v1::ParameterChunk* p = out.mutable_parameter_chunk();
      p->set_round(round + 1);
      chunker.Next(p->mutable_chunk());
      max_sent_ = std::max(max_sent_.load(), out.ByteSizeLong());
      if (!stream->Write(out)) return absl::UnavailableError("client went away");
    }
    return absl::OkStatus();
  }

  std::optional<std::vector<TensorSpec>> expected_;
  std::atomic<size_t> max_received_{0}, max_sent_{0};
};

// The same echo on the raw ByteBuffer API with a callback reactor and the zero-copy helpers
// of chunk_wire.h, for the interop test: its peer is the ordinary typed client.
class RawEchoTraining final : public v1::Training::WithRawCallbackMethod_Connect<v1::Training::Service> {
 public:
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(grpc::CallbackServerContext*) override {
    return new Reactor();
  }

 private:
  class Reactor : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    Reactor() { StartRead(&in_); }
    void OnReadDone(bool ok) override {
      if (!ok) return Finish(ToGrpcStatus(absl::InvalidArgumentError("stream ended early")));
      v1::WorkerMessage msg;
      absl::Status s = parser_.Parse(&in_, kResultChunkDataPath, &msg);
      if (s.ok()) s = assembler_.AddPieces(msg.result_chunk().chunk(), parser_.payload());
      if (!s.ok()) return Finish(ToGrpcStatus(s));
      round_ = msg.result_chunk().round();
      if (!assembler_.complete()) return StartRead(&in_);
      auto chunker = TensorListChunker::Create(*assembler_.Take());
      if (!chunker.ok()) return Finish(ToGrpcStatus(chunker.status()));
      chunker_.emplace(*std::move(chunker));
      WriteNext();
    }
    void OnWriteDone(bool ok) override {
      if (!ok) return Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "client gone"));
      if (chunker_->done()) return Finish(grpc::Status::OK);
      WriteNext();
    }
    void OnDone() override { delete this; }

   private:
    void WriteNext() {
      v1::ShepherdMessage head;
      ChunkPayload payload;
      head.mutable_parameter_chunk()->set_round(round_ + 1);
      chunker_->Next(head.mutable_parameter_chunk()->mutable_chunk(), &payload);
      out_ = SerializeWithPayload(head, kParameterChunkDataPath, payload);
      StartWrite(&out_);
    }

    grpc::ByteBuffer in_, out_;
    ChunkMessageParser parser_;
    TensorListAssembler assembler_;
    std::optional<TensorListChunker> chunker_;
    uint64_t round_ = 0;
  };
};

class GrpcStreamTest : public ::testing::Test {
 protected:
  void StartRawServer() { StartServer(std::nullopt, /*raw=*/true); }
  void StartServer(std::optional<std::vector<TensorSpec>> expected = std::nullopt, bool raw = false) {
    service_ = std::make_unique<EchoTraining>(std::move(expected));
    raw_service_ = std::make_unique<RawEchoTraining>();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    // The limit every PCP endpoint can afford: one full chunk message. gRPC itself refuses
    // anything bigger, so passing this test proves no message exceeded it.
    builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxChunkMessageBytes));
    if (raw) {
      builder.RegisterService(raw_service_.get());
    } else {
      builder.RegisterService(service_.get());
    }
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(static_cast<int>(kMaxChunkMessageBytes));
    auto channel =
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials(), args);
    stub_ = v1::Training::NewStub(channel);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }

  struct Exchange {
    absl::Status status;
    std::vector<NamedTensor> received;
    size_t max_received = 0;
    uint64_t round = 0;
  };
  // Sends `messages`, half-closes, reads the reply list.
  Exchange Run(const std::vector<v1::WorkerMessage>& messages) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    auto stream = stub_->Connect(&context);
    for (const auto& m : messages) {
      if (!stream->Write(m)) break;  // the server ended the call; Finish says why
    }
    stream->WritesDone();
    Exchange ex;
    TensorListAssembler assembler;
    v1::ShepherdMessage in;
    while (stream->Read(&in)) {
      ex.max_received = std::max(ex.max_received, in.ByteSizeLong());
      ex.round = in.parameter_chunk().round();
      if (absl::Status s = assembler.Add(in.parameter_chunk().chunk()); !s.ok()) {
        context.TryCancel();
        ex.status = s;
        stream->Finish();
        return ex;
      }
    }
    ex.status = FromGrpcStatus(stream->Finish());
    if (ex.status.ok()) {
      auto list = assembler.Take();
      if (list.ok())
        ex.received = *std::move(list);
      else
        ex.status = list.status();
    }
    return ex;
  }

  static std::vector<v1::WorkerMessage> ResultMessages(std::vector<NamedTensor> list, ChunkOptions options,
                                                       uint64_t round) {
    auto chunker = TensorListChunker::Create(std::move(list), options);
    EXPECT_TRUE(chunker.ok()) << chunker.status();
    std::vector<v1::WorkerMessage> messages;
    while (!chunker->done()) {
      v1::ResultChunk* r = messages.emplace_back().mutable_result_chunk();
      r->set_round(round);
      chunker->Next(r->mutable_chunk());
    }
    return messages;
  }

  std::unique_ptr<EchoTraining> service_;
  std::unique_ptr<RawEchoTraining> raw_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Training::Stub> stub_;
  int port_ = 0;
};

TEST_F(GrpcStreamTest, Streams20MBTensorBothWays) {
  // 20 MB of f32 plus a small tensor behind it.
  std::vector<NamedTensor> list = {{"big", RandomF32({5, 1000000}, 1)}, {"bias", RandomF32({128}, 2)}};
  StartServer(SpecsOf(list));
  for (int64_t chunk_bytes : {kMinChunkBytes, kMaxChunkBytes}) {
    SCOPED_TRACE(chunk_bytes);
    const auto messages = ResultMessages(list, ChunkOptions{chunk_bytes}, 3);
    EXPECT_EQ(static_cast<int64_t>(messages.size()), (20000000 + chunk_bytes - 1) / chunk_bytes + 1);
    Exchange ex = Run(messages);
    ASSERT_TRUE(ex.status.ok()) << ex.status;
    EXPECT_EQ(ex.round, 4u);
    ASSERT_EQ(ex.received.size(), 2u);
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_EQ(ex.received[i].name, list[i].name);
      EXPECT_TRUE(BitwiseEqual(ex.received[i].tensor, list[i].tensor)) << list[i].name;
    }
    // Every message, each way, holds one chunk (plus < 1 KiB of fields) and stays far
    // below 4 MiB. The service answers with the default chunk size.
    EXPECT_GT(service_->max_received(), static_cast<size_t>(chunk_bytes));
    EXPECT_LT(service_->max_received(), static_cast<size_t>(chunk_bytes) + 1024);
    EXPECT_EQ(service_->max_sent(), ex.max_received);
    EXPECT_GT(ex.max_received, static_cast<size_t>(kDefaultChunkBytes));
    EXPECT_LT(ex.max_received, static_cast<size_t>(kDefaultChunkBytes) + 1024);
    EXPECT_LE(ex.max_received, static_cast<size_t>(kMaxChunkMessageBytes));
  }
}

// Zero-copy encoding and parsing on the service, ordinary protobuf on the client: the two
// interoperate in both directions over a real stream.
TEST_F(GrpcStreamTest, ZeroCopyServiceInteroperatesWithOrdinaryClient) {
  std::vector<NamedTensor> list = {{"big", RandomF32({5, 1000000}, 1)},
                                   {"empty", RandomF32({0}, 2)},
                                   {"bias", RandomF32({128}, 3)}};
  StartRawServer();
  Exchange ex = Run(ResultMessages(list, ChunkOptions{512 << 10}, 6));
  ASSERT_TRUE(ex.status.ok()) << ex.status;
  EXPECT_EQ(ex.round, 7u);
  ASSERT_EQ(ex.received.size(), list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(ex.received[i].name, list[i].name);
    EXPECT_TRUE(BitwiseEqual(ex.received[i].tensor, list[i].tensor)) << list[i].name;
  }
  EXPECT_LE(ex.max_received, static_cast<size_t>(kMaxChunkMessageBytes));

  // A corrupted chunk is refused by the zero-copy path too.
  auto messages = ResultMessages(list, {}, 6);
  (*messages[1].mutable_result_chunk()->mutable_chunk()->mutable_data())[5] ^= 1;
  Exchange bad = Run(messages);
  EXPECT_EQ(bad.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status.message()),
              HasSubstr("tensor 'big' (index 0) at offset 1048576: crc32c mismatch"));
}

TEST_F(GrpcStreamTest, WrongShapeDeltaGetsInvalidArgumentNamingTheTensor) {
  std::vector<NamedTensor> expected = {{"wte", RandomF32({65, 128}, 1)}, {"lm_head", RandomF32({65, 128}, 2)}};
  StartServer(SpecsOf(expected));
  std::vector<NamedTensor> wrong = {{"wte", RandomF32({65, 128}, 1)}, {"lm_head", RandomF32({64, 128}, 2)}};
  Exchange ex = Run(ResultMessages(wrong, {}, 9));
  EXPECT_EQ(ex.status.code(), absl::StatusCode::kInvalidArgument) << ex.status;
  EXPECT_THAT(std::string(ex.status.message()),
              HasSubstr("result of round 9: tensor 'lm_head' (index 1) at offset 0: expected "
                        "f32[65x128], got f32[64x128]"));
}

TEST_F(GrpcStreamTest, OversizedChunkIsRefused) {
  StartServer();
  // A hand-made chunk of 1 MiB + 1 byte: under gRPC's message limit but over the chunk limit.
  std::vector<NamedTensor> one = {{"x", RandomF32({300000}, 1)}};
  auto messages = ResultMessages(one, {}, 1);
  ASSERT_EQ(messages.size(), 2u);
  v1::TensorChunk* c = messages[0].mutable_result_chunk()->mutable_chunk();
  c->mutable_data()->push_back('\0');
  Exchange ex = Run(messages);
  EXPECT_EQ(ex.status.code(), absl::StatusCode::kInvalidArgument) << ex.status;
  EXPECT_THAT(std::string(ex.status.message()),
              HasSubstr("tensor 'x' (index 0) at offset 0: chunk of 1048577 bytes exceeds the "
                        "limit of 1048576 bytes"));

  // A message far above the limit never reaches the service: gRPC refuses it.
  v1::WorkerMessage huge;
  huge.mutable_result_chunk()->mutable_chunk()->set_data(std::string(3 << 20, 'x'));
  Exchange ex2 = Run({huge});
  EXPECT_EQ(ex2.status.code(), absl::StatusCode::kResourceExhausted) << ex2.status;
}

}  // namespace
}  // namespace pcp
