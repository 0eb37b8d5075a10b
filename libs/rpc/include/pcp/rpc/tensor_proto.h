// Conversions between PCP's tensor types / statuses and their pcp.v1 wire messages.
//
//   v1::DType wire = DTypeToProto(DType::kBF16);                 // v1::DTYPE_BF16
//   PCP_ASSIGN_OR_RETURN(DType d, DTypeFromProto(chunk.dtype()));
//   PCP_ASSIGN_OR_RETURN(Shape s, ShapeFromProto(chunk.shape()));  // dims >= 0, no overflow
//   v1::Codec c = CodecToProto(codec::Codec::kInt8);            // v1::CODEC_INT8
//   PCP_ASSIGN_OR_RETURN(codec::Codec back, CodecFromProto(chunk.codec()));
//   TensorSpec spec{"lm_head.weight", DType::kF32, {65, 128}};
//   v1::TensorSpec msg = TensorSpecToProto(spec);
//   PCP_ASSIGN_OR_RETURN(TensorSpec back, TensorSpecFromProto(msg));
//   PCP_ASSIGN_OR_RETURN(InitRecipe r, InitRecipeFromProto(InitRecipeToProto(recipe)));
//   v1::Error e = ErrorToProto(absl::InvalidArgumentError("bad"), /*round=*/7);
//   absl::Status s2 = ErrorFromProto(e);                          // InvalidArgument "bad"
//
// Everything that reads a message from a peer validates it and returns InvalidArgument
// naming the field; nothing here aborts on input.
#ifndef PCP_RPC_TENSOR_PROTO_H_
#define PCP_RPC_TENSOR_PROTO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/repeated_field.h"
#include "pcp/codec/codec.h"
#include "pcp/tensor/dtype.h"
#include "pcp/tensor/init_recipe.h"
#include "pcp/tensor/shape.h"
#include "pcp/v1/common.pb.h"
#include "pcp/v1/tensor.pb.h"

namespace pcp {

// Wire shapes are refused above this rank.
inline constexpr int kMaxWireRank = 16;

// The name, dtype and shape of a tensor, without data.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;

  int64_t byte_size() const { return NumElements(shape) * SizeOf(dtype); }
  bool operator==(const TensorSpec&) const = default;
};

// "f32[65x128]" (as Tensor::TypeString), "f32[]" for a scalar.
std::string TypeString(DType dtype, const Shape& shape);

v1::DType DTypeToProto(DType dtype);
// InvalidArgument for DTYPE_UNSPECIFIED and values this build does not know.
absl::StatusOr<DType> DTypeFromProto(v1::DType dtype);
// Checks rank <= kMaxWireRank, every dim >= 0 and that the element count (and its size in
// bytes at 8 bytes per element) fits in int64.
absl::StatusOr<Shape> ShapeFromProto(const google::protobuf::RepeatedField<int64_t>& dims);
void ShapeToProto(const Shape& shape, google::protobuf::RepeatedField<int64_t>* dims);

// v1::Codec values are the codecs' wire ids (static_asserted in tensor_proto.cc).
v1::Codec CodecToProto(codec::Codec codec);
// InvalidArgument naming the id for a value this build does not know ("unknown codec id 7
// (this build knows 0..3: ...)").
absl::StatusOr<codec::Codec> CodecFromProto(int codec);

v1::TensorSpec TensorSpecToProto(const TensorSpec& spec);
// Also requires a non-empty name.
absl::StatusOr<TensorSpec> TensorSpecFromProto(const v1::TensorSpec& spec);
std::vector<v1::TensorSpec> TensorSpecsToProto(const std::vector<TensorSpec>& specs);

v1::InitRecipe InitRecipeToProto(const InitRecipe& recipe);
// InvalidArgument naming the rule for an unknown kind or a normal std negative or not finite.
absl::StatusOr<InitRecipe> InitRecipeFromProto(const v1::InitRecipe& msg);

// A non-OK status as an in-stream Error message (code numbers are shared by absl and gRPC).
v1::Error ErrorToProto(const absl::Status& status, uint64_t round = 0);
// The status an Error message carries. A code outside 1..16 (or 0, which is not an error)
// becomes UNKNOWN with the original code in the message.
absl::Status ErrorFromProto(const v1::Error& error);

}  // namespace pcp

#endif  // PCP_RPC_TENSOR_PROTO_H_
