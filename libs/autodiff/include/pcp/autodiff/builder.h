// Checked construction of IR functions. Every method infers and checks the result type
// (type_inference.h). The first error is remembered and returned by Build(); after an error
// the methods return kNoValue and do nothing, so model code can build without checking each
// call (the XlaBuilder pattern).
//
//   FunctionBuilder b("mlp");
//   ValueId x = b.Parameter({DType::kF32, {8, 4}}, "x");
//   ValueId w = b.Parameter({DType::kF32, {4, 3}}, "w");
//   ValueId y = b.MatMul(x, w);                        // dot_general contracting x:1, w:0
//   ValueId loss = b.ReduceSum(b.Mul(y, y), {0, 1});
//   b.Return({loss}, {"loss"});
//   absl::StatusOr<Function> f = b.Build();
//
// A builder can also extend an existing function (autodiff appends the backward pass):
//   FunctionBuilder g(std::move(forward));
#ifndef PCP_AUTODIFF_BUILDER_H_
#define PCP_AUTODIFF_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

class FunctionBuilder {
 public:
  explicit FunctionBuilder(std::string name);
  // Continues building `function` (its results are kept until Return is called again).
  explicit FunctionBuilder(Function function);

  ValueId Parameter(TensorType type, std::string name = "");

  // Generic, checked emission: `declared` is needed for ops listed by ResultTypeIsDeclared.
  ValueId Emit(Op op, std::vector<ValueId> operands, Attributes attrs = {}, const TensorType* declared = nullptr);

  // Sources.
  ValueId Constant(Tensor literal);
  // A scalar constant of `dtype` (f32, f64, i32, i64) holding `value`.
  ValueId ScalarConstant(double value, DType dtype = DType::kF32);
  // `value` broadcast to `type` (a scalar constant + broadcast_in_dim). Types and shapes are
  // taken by value throughout: callers often pass b.type(v), a reference into the function's
  // value list, which emitting an instruction may reallocate.
  ValueId Full(double value, TensorType type);
  ValueId Iota(TensorType type, int64_t dimension);

  // Elementwise (operands of equal type; see BroadcastTo for numpy-style helpers).
  ValueId Add(ValueId a, ValueId b) { return Emit(Op::kAdd, {a, b}); }
  ValueId Sub(ValueId a, ValueId b) { return Emit(Op::kSubtract, {a, b}); }
  ValueId Mul(ValueId a, ValueId b) { return Emit(Op::kMultiply, {a, b}); }
  ValueId Div(ValueId a, ValueId b) { return Emit(Op::kDivide, {a, b}); }
  ValueId Max(ValueId a, ValueId b) { return Emit(Op::kMaximum, {a, b}); }
  ValueId Min(ValueId a, ValueId b) { return Emit(Op::kMinimum, {a, b}); }
  ValueId Pow(ValueId a, ValueId b) { return Emit(Op::kPower, {a, b}); }
  ValueId Neg(ValueId a) { return Emit(Op::kNegate, {a}); }
  ValueId Exp(ValueId a) { return Emit(Op::kExponential, {a}); }
  ValueId Log(ValueId a) { return Emit(Op::kLog, {a}); }
  ValueId Sqrt(ValueId a) { return Emit(Op::kSqrt, {a}); }
  ValueId Rsqrt(ValueId a) { return Emit(Op::kRsqrt, {a}); }
  ValueId Tanh(ValueId a) { return Emit(Op::kTanh, {a}); }
  ValueId Logistic(ValueId a) { return Emit(Op::kLogistic, {a}); }
  ValueId Abs(ValueId a) { return Emit(Op::kAbs, {a}); }
  ValueId Erf(ValueId a) { return Emit(Op::kErf, {a}); }
  ValueId Ceil(ValueId a) { return Emit(Op::kCeil, {a}); }
  // Logical on i1, bitwise on i32 / i64.
  ValueId And(ValueId a, ValueId b) { return Emit(Op::kAnd, {a, b}); }
  ValueId Or(ValueId a, ValueId b) { return Emit(Op::kOr, {a, b}); }
  ValueId Not(ValueId a) { return Emit(Op::kNot, {a}); }
  // min(max(x, lo), hi); all three of one type.
  ValueId Clamp(ValueId lo, ValueId x, ValueId hi) { return Emit(Op::kClamp, {lo, x, hi}); }
  ValueId Compare(ValueId a, ValueId b, ComparisonDirection direction);
  ValueId Select(ValueId pred, ValueId on_true, ValueId on_false) {
    return Emit(Op::kSelect, {pred, on_true, on_false});
  }
  ValueId Convert(ValueId a, DType dtype);

  // Layout.
  ValueId BroadcastInDim(ValueId a, Shape shape, std::vector<int64_t> broadcast_dimensions);
  ValueId Reshape(ValueId a, Shape shape);
  ValueId Transpose(ValueId a, std::vector<int64_t> permutation);
  ValueId Slice(ValueId a, std::vector<int64_t> start, std::vector<int64_t> limit,
                std::vector<int64_t> stride = {});  // stride defaults to all ones
  ValueId Concatenate(std::vector<ValueId> values, int64_t dimension);

  // Reductions over `dims` (strictly increasing); the init value is 0 or -inf.
  ValueId Reduce(ValueId a, std::vector<int64_t> dims, ReduceKind kind);
  ValueId ReduceSum(ValueId a, std::vector<int64_t> dims) { return Reduce(a, std::move(dims), ReduceKind::kSum); }
  ValueId ReduceMax(ValueId a, std::vector<int64_t> dims) { return Reduce(a, std::move(dims), ReduceKind::kMax); }

  ValueId DotGeneral(ValueId lhs, ValueId rhs, DotDims dims);
  // [..., m, k] x [k, n] -> [..., m, n] (rhs rank 2), or batched [b..., m, k] x [b..., k, n].
  ValueId MatMul(ValueId lhs, ValueId rhs);

  ValueId Gather(ValueId table, ValueId indices) { return Emit(Op::kGather, {table, indices}); }
  ValueId ScatterAdd(ValueId operand, ValueId indices, ValueId updates) {
    return Emit(Op::kScatter, {operand, indices, updates});
  }

  // Numpy-style helpers: broadcasts `a` to `shape` aligning trailing dimensions (size-1
  // dimensions stretch); returns `a` itself when the shape already matches.
  ValueId BroadcastTo(ValueId a, Shape shape);
  // Broadcasting versions of the binary ops: both operands are broadcast to a common shape.
  ValueId BAdd(ValueId a, ValueId b) { return Broadcasting(Op::kAdd, a, b); }
  ValueId BSub(ValueId a, ValueId b) { return Broadcasting(Op::kSubtract, a, b); }
  ValueId BMul(ValueId a, ValueId b) { return Broadcasting(Op::kMultiply, a, b); }
  ValueId BDiv(ValueId a, ValueId b) { return Broadcasting(Op::kDivide, a, b); }
  ValueId Broadcasting(Op op, ValueId a, ValueId b);

  // Sets the function's results (replacing earlier ones).
  void Return(std::vector<ValueId> values, std::vector<std::string> names = {});

  const TensorType& type(ValueId v) const { return fn_.type(v); }
  // The function built so far (autodiff walks it to emit the backward pass).
  const Function& function() const { return fn_; }
  const absl::Status& status() const { return status_; }
  // Records an error (the first one wins), e.g. from model code validating its inputs.
  void SetError(absl::Status status);
  // The function, or the first error.
  absl::StatusOr<Function> Build();

 private:
  bool Valid(ValueId v) const { return v >= 0 && v < fn_.num_values(); }

  Function fn_;
  absl::Status status_;
};

}  // namespace pcp

#endif  // PCP_AUTODIFF_BUILDER_H_
