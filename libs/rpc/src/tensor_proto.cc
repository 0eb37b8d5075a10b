#include "pcp/rpc/tensor_proto.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace pcp {
namespace {

// One row per PCP dtype, in PCP_DTYPE_LIST order. Adding a dtype to the list without a wire
// value fails the static_asserts below.
struct DTypeWire {
  DType dtype;
  v1::DType wire;
};
constexpr DTypeWire kDTypeWire[] = {
    {DType::kF32, v1::DTYPE_F32}, {DType::kF16, v1::DTYPE_F16}, {DType::kBF16, v1::DTYPE_BF16},
    {DType::kI32, v1::DTYPE_I32}, {DType::kI64, v1::DTYPE_I64}, {DType::kBool, v1::DTYPE_BOOL},
    {DType::kF64, v1::DTYPE_F64},
};
#define PCP_COUNT_DTYPE_(e, mlir, st, size, is_float) +1
constexpr int kNumDTypes = 0 PCP_DTYPE_LIST(PCP_COUNT_DTYPE_);
#undef PCP_COUNT_DTYPE_
static_assert(sizeof(kDTypeWire) / sizeof(kDTypeWire[0]) == kNumDTypes,
              "every DType in PCP_DTYPE_LIST needs a pcp.v1.DType (protos/pcp/v1/tensor.proto)");
static_assert(v1::DType_MAX == kNumDTypes, "pcp.v1.DType and PCP_DTYPE_LIST have different lengths");
constexpr bool WireTableInListOrder() {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (static_cast<int>(kDTypeWire[i].dtype) != i) return false;
  }
  return true;
}
static_assert(WireTableInListOrder(), "kDTypeWire must follow PCP_DTYPE_LIST order");

// pcp.v1.Codec values are the wire ids of PCP_CODEC_LIST (the ids written in encoded
// buffers' headers), so a codec converts by value. A codec added to one list and not the
// other fails here; rpc_tensor_codec_test also checks each v1 name against the codec's name.
static_assert(v1::Codec_MIN == 0 && v1::Codec_MAX + 1 == codec::kNumCodecs,
              "pcp.v1.Codec and PCP_CODEC_LIST have different lengths");
static_assert(v1::CODEC_F32 == static_cast<int>(codec::Codec::kF32) &&
                  v1::CODEC_BF16 == static_cast<int>(codec::Codec::kBf16) &&
                  v1::CODEC_INT8 == static_cast<int>(codec::Codec::kInt8) &&
                  v1::CODEC_INT4 == static_cast<int>(codec::Codec::kInt4),
              "pcp.v1.Codec values must be the wire ids of PCP_CODEC_LIST");

}  // namespace

std::string TypeString(DType dtype, const Shape& shape) {
  return absl::StrCat(MlirName(dtype), "[", ShapeToString(shape), "]");
}

v1::DType DTypeToProto(DType dtype) { return kDTypeWire[static_cast<int>(dtype)].wire; }

v1::Codec CodecToProto(codec::Codec codec) { return static_cast<v1::Codec>(codec); }

absl::StatusOr<codec::Codec> CodecFromProto(int codec) { return codec::CodecFromWireId(codec); }

absl::StatusOr<DType> DTypeFromProto(v1::DType dtype) {
  for (const DTypeWire& row : kDTypeWire) {
    if (row.wire == dtype) return row.dtype;
  }
  if (dtype == v1::DTYPE_UNSPECIFIED) return absl::InvalidArgumentError("dtype is unspecified");
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype ", static_cast<int>(dtype)));
}

absl::StatusOr<Shape> ShapeFromProto(const google::protobuf::RepeatedField<int64_t>& dims) {
  if (dims.size() > kMaxWireRank) {
    return absl::InvalidArgumentError(absl::StrCat("shape has rank ", dims.size(), ", more than ", kMaxWireRank));
  }
  Shape shape(dims.begin(), dims.end());
  // Elements * 8 bytes must fit in int64, so no later size computation overflows.
  constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 8;
  int64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("shape dimension ", i, " is negative (", shape[i], ")"));
    }
    if (shape[i] != 0 && elements > kMaxElements / shape[i]) {
      return absl::InvalidArgumentError(absl::StrCat("shape [", ShapeToString(shape), "] has too many elements"));
    }
    elements *= shape[i];
  }
  return shape;
}

void ShapeToProto(const Shape& shape, google::protobuf::RepeatedField<int64_t>* dims) {
  dims->Clear();
  dims->Reserve(static_cast<int>(shape.size()));
  for (int64_t d : shape) dims->Add(d);
}

v1::TensorSpec TensorSpecToProto(const TensorSpec& spec) {
  v1::TensorSpec msg;
  msg.set_name(spec.name);
  msg.set_dtype(DTypeToProto(spec.dtype));
  ShapeToProto(spec.shape, msg.mutable_shape());
  return msg;
}

absl::StatusOr<TensorSpec> TensorSpecFromProto(const v1::TensorSpec& msg) {
  if (msg.name().empty()) return absl::InvalidArgumentError("tensor spec has an empty name");
  TensorSpec spec;
  spec.name = msg.name();
  auto dtype = DTypeFromProto(msg.dtype());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor spec '", msg.name(), "': ", dtype.status().message()));
  }
  spec.dtype = *dtype;
  auto shape = ShapeFromProto(msg.shape());
  if (!shape.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor spec '", msg.name(), "': ", shape.status().message()));
  }
  spec.shape = *std::move(shape);
  return spec;
}

std::vector<v1::TensorSpec> TensorSpecsToProto(const std::vector<TensorSpec>& specs) {
  std::vector<v1::TensorSpec> out;
  out.reserve(specs.size());
  for (const TensorSpec& s : specs) out.push_back(TensorSpecToProto(s));
  return out;
}

v1::InitRecipe InitRecipeToProto(const InitRecipe& recipe) {
  v1::InitRecipe msg;
  msg.set_seed(recipe.seed);
  for (const ParamInit& rule : recipe.params) {
    v1::ParamInit* p = msg.add_params();
    switch (rule.kind) {
      case ParamInit::Kind::kZeros: p->set_kind(v1::ParamInit::KIND_ZEROS); break;
      case ParamInit::Kind::kOnes: p->set_kind(v1::ParamInit::KIND_ONES); break;
      case ParamInit::Kind::kNormal:
        p->set_kind(v1::ParamInit::KIND_NORMAL);
        p->set_std(rule.std);
        break;
    }
  }
  return msg;
}

absl::StatusOr<InitRecipe> InitRecipeFromProto(const v1::InitRecipe& msg) {
  InitRecipe recipe{.seed = msg.seed(), .params = {}};
  for (int i = 0; i < msg.params_size(); ++i) {
    const v1::ParamInit& p = msg.params(i);
    switch (p.kind()) {
      case v1::ParamInit::KIND_ZEROS: recipe.params.push_back(ParamInit::Zeros()); break;
      case v1::ParamInit::KIND_ONES: recipe.params.push_back(ParamInit::Ones()); break;
      case v1::ParamInit::KIND_NORMAL:
        if (!std::isfinite(p.std()) || p.std() < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("init.params[", i, "]: normal std ", p.std(), " (finite and >= 0 expected)"));
        }
        recipe.params.push_back(ParamInit::Normal(p.std()));
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("init.params[", i, "]: unknown kind ", static_cast<int>(p.kind())));
    }
  }
  return recipe;
}

v1::Error ErrorToProto(const absl::Status& status, uint64_t round) {
  v1::Error e;
  e.set_code(static_cast<int32_t>(status.code()));
  e.set_message(std::string(status.message()));
  e.set_round(round);
  return e;
}

absl::Status ErrorFromProto(const v1::Error& error) {
  int code = error.code();
  if (code < 1 || code > 16) {
    return absl::UnknownError(absl::StrCat("peer error with invalid code ", code, ": ", error.message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), error.message());
}

}  // namespace pcp
