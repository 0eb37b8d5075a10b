#include <map>
#include <string>

#include <grpc/grpc.h>
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "pcp/rpc/channel_options.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/rpc/tensor_chunks.h"
#include "pcp/rpc/tensor_proto.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

TEST(GrpcStatusTest, EveryCodeRoundTrips) {
  for (int code = 0; code <= 16; ++code) {
    const absl::Status s(static_cast<absl::StatusCode>(code), code == 0 ? "" : "msg");
    const grpc::Status g = ToGrpcStatus(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    EXPECT_EQ(g.error_message(), code == 0 ? "" : "msg");
    EXPECT_EQ(FromGrpcStatus(g), s) << code;
  }
}

TEST(GrpcStatusTest, MeaningfulCodesMapByName) {
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError("x")).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpcStatus(absl::FailedPreconditionError("x")).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("x")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "job-9")), absl::NotFoundError("job-9"));
  // A code past the last one (16). 20 still fits the enum's range (0..31): 42 would not, and
  // making such a grpc::StatusCode is undefined behaviour (UBSan's invalid-enum-load).
  EXPECT_EQ(FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(20), "odd")), absl::UnknownError("odd"));
}

TEST(GrpcStatusTest, OnlyUnavailableIsRetryable) {
  EXPECT_TRUE(IsRetryable(absl::UnavailableError("down")));
  EXPECT_FALSE(IsRetryable(absl::FailedPreconditionError("x")));
  EXPECT_FALSE(IsRetryable(absl::InvalidArgumentError("x")));
  EXPECT_FALSE(IsRetryable(absl::OkStatus()));
}

// Channels (workers receiving θ) start at 16 MiB and let gRPC probe the bandwidth-delay
// product (channel_options.h says why).
TEST(ChannelOptionsTest, StreamChannelsStartLargeAndProbeTheBandwidthDelayProduct) {
  grpc::ChannelArguments args;
  ApplyStreamChannelOptions(&args);
  const grpc_channel_args c = args.c_channel_args();
  std::map<std::string, int> ints;
  for (size_t i = 0; i < c.num_args; ++i) {
    if (c.args[i].type == GRPC_ARG_INTEGER) ints[c.args[i].key] = c.args[i].value.integer;
  }
  EXPECT_EQ(ints[GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES], 16 << 20);
  EXPECT_EQ(ints[GRPC_ARG_HTTP2_BDP_PROBE], 1);
  EXPECT_EQ(ints[GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH], 4 << 20);
  EXPECT_GT(kMaxReceiveMessageBytes, kMaxChunkMessageBytes * 3);
}

TEST(TensorProtoTest, DTypesRoundTrip) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kBool, DType::kF64}) {
    auto back = DTypeFromProto(DTypeToProto(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(DTypeToProto(DType::kBF16), v1::DTYPE_BF16);
  EXPECT_EQ(DTypeToProto(DType::kF64), v1::DTYPE_F64);
  EXPECT_THAT(DTypeFromProto(v1::DTYPE_UNSPECIFIED).status().message(), HasSubstr("unspecified"));
  EXPECT_THAT(DTypeFromProto(static_cast<v1::DType>(77)).status().message(), HasSubstr("unknown dtype 77"));
}

TEST(TensorProtoTest, TensorSpecRoundTripAndValidation) {
  TensorSpec spec{"lm_head.weight", DType::kF32, {65, 128}};
  auto back = TensorSpecFromProto(TensorSpecToProto(spec));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, spec);
  EXPECT_EQ(spec.byte_size(), 65 * 128 * 4);
  EXPECT_EQ(TypeString(spec.dtype, spec.shape), "f32[65x128]");

  v1::TensorSpec bad = TensorSpecToProto(spec);
  bad.set_name("");
  EXPECT_THAT(TensorSpecFromProto(bad).status().message(), HasSubstr("empty name"));
  bad = TensorSpecToProto(spec);
  bad.mutable_shape()->Set(0, -1);
  EXPECT_THAT(TensorSpecFromProto(bad).status().message(),
              HasSubstr("tensor spec 'lm_head.weight': shape dimension 0 is negative"));
  bad = TensorSpecToProto(spec);
  bad.set_dtype(v1::DTYPE_UNSPECIFIED);
  EXPECT_EQ(TensorSpecFromProto(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorProtoTest, InitRecipeRoundTripAndValidation) {
  const InitRecipe r{.seed = 99, .params = {ParamInit::Normal(0.02), ParamInit::Ones(), ParamInit::Zeros()}};
  absl::StatusOr<InitRecipe> back = InitRecipeFromProto(InitRecipeToProto(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->seed, 99u);
  EXPECT_EQ(back->params, r.params);
  v1::InitRecipe bad = InitRecipeToProto(r);
  bad.mutable_params(2)->set_kind(static_cast<v1::ParamInit::Kind>(7));  // from a newer peer
  EXPECT_EQ(InitRecipeFromProto(bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(InitRecipeFromProto(bad).status().message(), HasSubstr("init.params[2]: unknown kind 7"));
  bad = InitRecipeToProto(r);
  bad.mutable_params(0)->set_std(-0.5);
  EXPECT_THAT(InitRecipeFromProto(bad).status().message(), HasSubstr("init.params[0]: normal std -0.5"));
}

TEST(TensorProtoTest, ErrorMessagesCarryStatuses) {
  const absl::Status s = absl::InvalidArgumentError("tensor 'x': bad");
  const v1::Error e = ErrorToProto(s, 7);
  EXPECT_EQ(e.code(), 3);
  EXPECT_EQ(e.round(), 7u);
  EXPECT_EQ(ErrorFromProto(e), s);
  v1::Error weird;
  weird.set_code(0);
  weird.set_message("hm");
  EXPECT_EQ(ErrorFromProto(weird).code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(ErrorFromProto(weird).message(), HasSubstr("invalid code 0: hm"));
}

}  // namespace
}  // namespace pcp
