// The worker's end of Training.Connect (services/worker/src/connection.h) against a scripted
// shepherd on loopback: θ chunk data arrives in gRPC's receive buffers and assembles from
// there; bytes that are not a ShepherdMessage end the stream with a status saying so.
#include "connection.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/rpc/channel_options.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp::worker {
namespace {

using ::testing::HasSubstr;

grpc::ByteBuffer Bytes(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

grpc::ByteBuffer JoinAckBytes() {
  v1::ShepherdMessage ack;
  ack.mutable_join_ack()->set_session_id("s-1");
  ack.mutable_join_ack()->set_heartbeat_interval_ms(1000);
  ack.mutable_join_ack()->set_heartbeat_timeout_ms(30000);
  return Bytes(ack.SerializeAsString());
}

// A shepherd stand-in: after the worker's first message it sends `script`, one buffer after
// the other, then reads until the worker goes.
class ScriptedShepherd final : public v1::Training::WithRawCallbackMethod_Connect<v1::Training::Service> {
 public:
  explicit ScriptedShepherd(std::vector<grpc::ByteBuffer> script) : script_(std::move(script)) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(grpc::CallbackServerContext*) override {
    return new Reactor(&script_);
  }

 private:
  class Reactor : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    explicit Reactor(const std::vector<grpc::ByteBuffer>* script) : script_(script) { StartRead(&in_); }
    void OnReadDone(bool ok) override {
      if (!ok) return Finish(grpc::Status::OK);
      if (!joined_) {
        joined_ = true;
        WriteNext();
      }
      StartRead(&in_);
    }
    void OnWriteDone(bool ok) override {
      if (ok) WriteNext();
    }
    void OnDone() override { delete this; }

   private:
    void WriteNext() {
      if (next_ < script_->size()) StartWrite(&(*script_)[next_++]);
    }
    const std::vector<grpc::ByteBuffer>* script_;
    grpc::ByteBuffer in_;
    size_t next_ = 0;
    bool joined_ = false;
  };

  std::vector<grpc::ByteBuffer> script_;
};

// The scripted shepherd on a free loopback port, and a channel to it.
struct Loopback {
  explicit Loopback(std::vector<grpc::ByteBuffer> script) : shepherd(std::move(script)) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    ApplyStreamServerOptions(&builder);
    builder.RegisterService(&shepherd);
    server = builder.BuildAndStart();
    grpc::ChannelArguments args;
    ApplyStreamChannelOptions(&args);
    channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args);
  }
  ~Loopback() { server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1)); }

  ScriptedShepherd shepherd;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
};

v1::Join TestJoin() {
  v1::Join join;
  join.set_supervisor_id("node-1");
  return join;
}

// Waits up to 10 s for the next message or the end of the stream.
Connection::Pop NextOrEnd(Connection& conn, Connection::Incoming* in) {
  for (int i = 0; i < 100; ++i) {
    const Connection::Pop pop = conn.Next(in, std::chrono::milliseconds(100));
    if (pop != Connection::Pop::kTimeout) return pop;
  }
  return Connection::Pop::kTimeout;
}

TEST(ConnectionTest, ParameterChunksAssembleFromTheReceiveBuffers) {
  const std::vector<NamedTensor> theta = {{"wte.weight", testing::RandomTensor({DType::kF32, {300000}}, 7)},
                                          {"ln_f.weight", testing::RandomTensor({DType::kF32, {5}}, 8)}};
  auto chunker = TensorListChunker::Create(theta, ChunkOptions{kMinChunkBytes});
  ASSERT_TRUE(chunker.ok());
  std::vector<grpc::ByteBuffer> script = {JoinAckBytes()};
  while (!chunker->done()) {
    v1::ShepherdMessage head;
    ChunkPayload payload;
    head.mutable_parameter_chunk()->set_round(4);
    chunker->Next(head.mutable_parameter_chunk()->mutable_chunk(), &payload);
    script.push_back(SerializeWithPayload(head, kParameterChunkDataPath, payload));
  }
  const size_t chunks = script.size() - 1;
  Loopback loopback(std::move(script));

  Connection conn(loopback.channel);
  ASSERT_TRUE(conn.Open(TestJoin(), std::chrono::seconds(10)).ok());
  EXPECT_EQ(conn.ack().session_id(), "s-1");
  TensorListAssembler assembler;
  assembler.ExpectSpecs(SpecsOf(theta));
  for (size_t i = 0; i < chunks; ++i) {
    Connection::Incoming in;
    ASSERT_EQ(NextOrEnd(conn, &in), Connection::Pop::kMessage) << conn.status();
    ASSERT_TRUE(in.message.has_parameter_chunk());
    EXPECT_EQ(in.message.parameter_chunk().round(), 4u);
    // The data is not in the message but left where gRPC received it.
    EXPECT_TRUE(in.message.parameter_chunk().chunk().data().empty());
    EXPECT_FALSE(in.payload.empty());
    ASSERT_TRUE(assembler.AddPieces(in.message.parameter_chunk().chunk(), in.payload.pieces()).ok());
  }
  ASSERT_TRUE(assembler.complete());
  auto got = assembler.Take();
  ASSERT_TRUE(got.ok());
  for (size_t i = 0; i < theta.size(); ++i) EXPECT_TRUE(BitwiseEqual((*got)[i].tensor, theta[i].tensor));
  EXPECT_TRUE(conn.Close(std::chrono::milliseconds(2000)).ok());
}

TEST(ConnectionTest, BytesThatAreNotAShepherdMessageEndTheStreamSayingSo) {
  // Field 5 (parameter_chunk), length-delimited, with a length far past the end.
  const std::string garbage = "\x2a\xff\xff\xff\xff\x0f\x01";
  Loopback loopback({JoinAckBytes(), Bytes(garbage)});
  Connection conn(loopback.channel);
  ASSERT_TRUE(conn.Open(TestJoin(), std::chrono::seconds(10)).ok());
  Connection::Incoming in;
  ASSERT_EQ(NextOrEnd(conn, &in), Connection::Pop::kEnded);
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kInvalidArgument) << conn.status();
  EXPECT_THAT(conn.status().message(), HasSubstr("malformed pcp.v1.ShepherdMessage (7 bytes)"));
}

TEST(ConnectionTest, AMalformedFirstMessageFailsTheJoin) {
  Loopback loopback({Bytes("\xff")});
  Connection conn(loopback.channel);
  const absl::Status opened = conn.Open(TestJoin(), std::chrono::seconds(10));
  EXPECT_EQ(opened.code(), absl::StatusCode::kInvalidArgument) << opened;
  EXPECT_THAT(opened.message(), HasSubstr("malformed pcp.v1.ShepherdMessage"));
}

}  // namespace
}  // namespace pcp::worker
