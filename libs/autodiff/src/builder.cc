#include "pcp/autodiff/builder.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/type_inference.h"

namespace pcp {

FunctionBuilder::FunctionBuilder(std::string name) { fn_.name = std::move(name); }
FunctionBuilder::FunctionBuilder(Function function) : fn_(std::move(function)) {}

void FunctionBuilder::SetError(absl::Status status) {
  if (status_.ok() && !status.ok())
    status_ = absl::Status(status.code(), absl::StrCat(fn_.name, ": ", status.message()));
}

ValueId FunctionBuilder::Parameter(TensorType type, std::string name) {
  if (!status_.ok()) return kNoValue;
  if (!fn_.instructions.empty()) {
    SetError(absl::FailedPreconditionError("parameters must be added before instructions"));
    return kNoValue;
  }
  return fn_.AddParameter(std::move(type), std::move(name));
}

ValueId FunctionBuilder::Emit(Op op, std::vector<ValueId> operands, Attributes attrs, const TensorType* declared) {
  if (!status_.ok()) return kNoValue;
  std::vector<TensorType> types;
  types.reserve(operands.size());
  for (ValueId v : operands) {
    if (!Valid(v)) {
      SetError(absl::InvalidArgumentError(absl::StrCat(OpName(op), ": operand is not a value of this function")));
      return kNoValue;
    }
    types.push_back(fn_.type(v));
  }
  absl::StatusOr<TensorType> t = InferResultType(op, types, attrs, declared);
  if (!t.ok()) {
    SetError(t.status());
    return kNoValue;
  }
  return fn_.AddInstruction(op, std::move(operands), *std::move(t), std::move(attrs));
}

ValueId FunctionBuilder::Constant(Tensor literal) {
  TensorType t{literal.dtype(), literal.shape()};
  Attributes a;
  a.literal = std::move(literal);
  return Emit(Op::kConstant, {}, std::move(a), &t);
}

ValueId FunctionBuilder::ScalarConstant(double value, DType dtype) {
  switch (dtype) {
    case DType::kF32: return Constant(Tensor::Scalar<float>(static_cast<float>(value)));
    case DType::kF64: return Constant(Tensor::Scalar<double>(value));
    case DType::kI32: return Constant(Tensor::Scalar<int32_t>(static_cast<int32_t>(value)));
    case DType::kI64: return Constant(Tensor::Scalar<int64_t>(static_cast<int64_t>(value)));
    default:
      SetError(absl::InvalidArgumentError(absl::StrCat("ScalarConstant: unsupported dtype ", MlirName(dtype))));
      return kNoValue;
  }
}

ValueId FunctionBuilder::Full(double value, TensorType type) {
  ValueId s = ScalarConstant(value, type.dtype);
  if (type.rank() == 0) return s;
  return BroadcastInDim(s, type.shape, {});
}

ValueId FunctionBuilder::Iota(TensorType type, int64_t dimension) {
  Attributes a;
  a.dimension = dimension;
  return Emit(Op::kIota, {}, std::move(a), &type);
}

ValueId FunctionBuilder::Compare(ValueId x, ValueId y, ComparisonDirection direction) {
  Attributes a;
  a.comparison = direction;
  return Emit(Op::kCompare, {x, y}, std::move(a));
}

ValueId FunctionBuilder::Convert(ValueId x, DType dtype) {
  if (!status_.ok() || !Valid(x)) return Emit(Op::kConvert, {x});
  TensorType t{dtype, fn_.type(x).shape};
  return Emit(Op::kConvert, {x}, {}, &t);
}

ValueId FunctionBuilder::BroadcastInDim(ValueId x, Shape shape, std::vector<int64_t> dims) {
  if (!status_.ok() || !Valid(x)) return Emit(Op::kBroadcastInDim, {x});
  TensorType t{fn_.type(x).dtype, std::move(shape)};
  Attributes a;
  a.dims = std::move(dims);
  return Emit(Op::kBroadcastInDim, {x}, std::move(a), &t);
}

ValueId FunctionBuilder::Reshape(ValueId x, Shape shape) {
  if (!status_.ok() || !Valid(x)) return Emit(Op::kReshape, {x});
  if (fn_.type(x).shape == shape) return x;
  TensorType t{fn_.type(x).dtype, std::move(shape)};
  return Emit(Op::kReshape, {x}, {}, &t);
}

ValueId FunctionBuilder::Transpose(ValueId x, std::vector<int64_t> permutation) {
  Attributes a;
  a.dims = std::move(permutation);
  return Emit(Op::kTranspose, {x}, std::move(a));
}

ValueId FunctionBuilder::Slice(ValueId x, std::vector<int64_t> start, std::vector<int64_t> limit,
                               std::vector<int64_t> stride) {
  if (stride.empty()) stride.assign(start.size(), 1);
  Attributes a;
  a.start = std::move(start);
  a.limit = std::move(limit);
  a.stride = std::move(stride);
  return Emit(Op::kSlice, {x}, std::move(a));
}

ValueId FunctionBuilder::Concatenate(std::vector<ValueId> values, int64_t dimension) {
  Attributes a;
  a.dimension = dimension;
  return Emit(Op::kConcatenate, std::move(values), std::move(a));
}

ValueId FunctionBuilder::Reduce(ValueId x, std::vector<int64_t> dims, ReduceKind kind) {
  if (!status_.ok() || !Valid(x)) return Emit(Op::kReduce, {x, x});
  DType d = fn_.type(x).dtype;
  double init = 0.0;
  if (kind == ReduceKind::kMax) {
    init = IsFloat(d) ? -std::numeric_limits<double>::infinity()
                      : static_cast<double>(d == DType::kI32 ? std::numeric_limits<int32_t>::min()
                                                             : std::numeric_limits<int64_t>::min());
  }
  ValueId init_value = ScalarConstant(init, d);
  Attributes a;
  a.dims = std::move(dims);
  a.reduce_kind = kind;
  return Emit(Op::kReduce, {x, init_value}, std::move(a));
}

ValueId FunctionBuilder::DotGeneral(ValueId lhs, ValueId rhs, DotDims dims) {
  Attributes a;
  a.dot = std::move(dims);
  return Emit(Op::kDotGeneral, {lhs, rhs}, std::move(a));
}

ValueId FunctionBuilder::MatMul(ValueId lhs, ValueId rhs) {
  if (!status_.ok() || !Valid(lhs) || !Valid(rhs)) return Emit(Op::kDotGeneral, {lhs, rhs});
  int64_t lr = fn_.type(lhs).rank(), rr = fn_.type(rhs).rank();
  if (lr < 2 || rr < 2 || (rr > 2 && rr != lr)) {
    SetError(absl::InvalidArgumentError(absl::StrCat("MatMul: unsupported ranks ", lr, " x ", rr)));
    return kNoValue;
  }
  DotDims d;
  if (rr == 2) {
    d.lhs_contract = {lr - 1};
    d.rhs_contract = {0};
    return DotGeneral(lhs, rhs, std::move(d));
  }
  for (int64_t i = 0; i < lr - 2; ++i) {
    d.lhs_batch.push_back(i);
    d.rhs_batch.push_back(i);
  }
  d.lhs_contract = {lr - 1};
  d.rhs_contract = {rr - 2};
  return DotGeneral(lhs, rhs, std::move(d));
}

ValueId FunctionBuilder::BroadcastTo(ValueId x, Shape shape) {
  if (!status_.ok() || !Valid(x)) return kNoValue;
  const Shape& from = fn_.type(x).shape;
  if (from == shape) return x;
  int64_t offset = static_cast<int64_t>(shape.size()) - static_cast<int64_t>(from.size());
  if (offset < 0) {
    SetError(absl::InvalidArgumentError(
        absl::StrCat("cannot broadcast ", ShapeToString(from), " to ", ShapeToString(shape))));
    return kNoValue;
  }
  // Drop size-1 dimensions that stretch, so broadcast_in_dim sees only exact matches.
  Shape kept;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t target = shape[offset + i];
    if (from[i] == target) {
      kept.push_back(from[i]);
      dims.push_back(offset + static_cast<int64_t>(i));
    } else if (from[i] != 1) {
      SetError(absl::InvalidArgumentError(
          absl::StrCat("cannot broadcast ", ShapeToString(from), " to ", ShapeToString(shape))));
      return kNoValue;
    }
  }
  return BroadcastInDim(Reshape(x, kept), shape, std::move(dims));
}

ValueId FunctionBuilder::Broadcasting(Op op, ValueId x, ValueId y) {
  if (!status_.ok() || !Valid(x) || !Valid(y)) return kNoValue;
  const Shape& a = fn_.type(x).shape;
  const Shape& b = fn_.type(y).shape;
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) {
      SetError(absl::InvalidArgumentError(
          absl::StrCat(OpName(op), ": shapes ", ShapeToString(a), " and ", ShapeToString(b), " do not broadcast")));
      return kNoValue;
    }
    out[i] = std::max(da, db);
  }
  return Emit(op, {BroadcastTo(x, out), BroadcastTo(y, out)});
}

void FunctionBuilder::Return(std::vector<ValueId> values, std::vector<std::string> names) {
  if (!status_.ok()) return;
  for (ValueId v : values) {
    if (!Valid(v)) {
      SetError(absl::InvalidArgumentError("Return: not a value of this function"));
      return;
    }
  }
  names.resize(values.size());
  fn_.results = std::move(values);
  fn_.result_names = std::move(names);
}

absl::StatusOr<Function> FunctionBuilder::Build() {
  if (!status_.ok()) return status_;
  return fn_;
}

}  // namespace pcp
