// The PCP tensor IR: a module of functions; a function is a straight-line SSA program over
// tensors of static shape and dtype. Every value is either a function parameter or the single
// result of one instruction; instructions appear in an order where operands come first.
//
//   FunctionBuilder b("f");                               // see builder.h
//   ValueId x = b.Parameter(TensorType{DType::kF32, {4}}, "x");
//   b.Return({b.Exp(x)});
//   absl::StatusOr<Function> f = b.Build();
//
// The text form is MLIR, generic or pretty (custom) syntax (text.h); ops carry
// StableHLO names (op_list.h). Functions own their data; copying a Function deep-copies it
// (constant literals share their immutable storage).
#ifndef PCP_AUTODIFF_IR_H_
#define PCP_AUTODIFF_IR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "pcp/autodiff/op_list.h"
#include "pcp/tensor/tensor.h"

namespace pcp {

// Static type of an SSA value: tensor<2x3xf32>.
struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t num_elements() const { return NumElements(shape); }
  // MLIR spelling: "tensor<2x3xf32>", "tensor<f32>" for a scalar.
  std::string ToString() const;
  friend bool operator==(const TensorType& a, const TensorType& b) { return a.dtype == b.dtype && a.shape == b.shape; }
  friend bool operator!=(const TensorType& a, const TensorType& b) { return !(a == b); }
};

// Index of a value within its function (parameters first, then instruction results).
using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

// StableHLO comparison_direction.
enum class ComparisonDirection : uint8_t { kEQ, kNE, kLT, kLE, kGT, kGE };
absl::string_view ComparisonName(ComparisonDirection d);  // "EQ", ...

// The body of a reduce or scatter region: stablehlo.add or stablehlo.maximum.
enum class ReduceKind : uint8_t { kSum, kMax };

// stablehlo.dot_general dimension numbers. The result shape is
// batch dims, then lhs free dims (in order), then rhs free dims (in order).
struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch;
  std::vector<int64_t> lhs_contract, rhs_contract;
  friend bool operator==(const DotDims&, const DotDims&) = default;
};

// Attributes of an instruction. Each op reads only the fields named for it; the builder and
// the parser leave the rest at their defaults, so CSE can compare whole structs.
struct Attributes {
  Tensor literal;                                             // constant: the value (type = result type)
  int64_t dimension = 0;                                      // iota: iota_dimension; concatenate: dimension
  std::vector<int64_t> dims;                                  // broadcast_in_dim: broadcast_dimensions;
                                                              // transpose: permutation; reduce: dimensions
  std::vector<int64_t> start, limit, stride;                  // slice
  DotDims dot;                                                // dot_general
  ComparisonDirection comparison = ComparisonDirection::kEQ;  // compare
  ReduceKind reduce_kind = ReduceKind::kSum;                  // reduce; scatter is always add
  double scale = 1.0;                                         // pcp.attention*: scores = scale q·k
  bool causal = false;                                        // pcp.attention*: key j <= query i only
};
// Equality of attributes, comparing literals by value.
bool AttributesEqual(const Attributes& a, const Attributes& b);

// gather / scatter in PCP are the row forms used by embeddings (the general StableHLO forms
// are not supported, and the verifier says so):
//   gather(table[V, D...], indices[I...] : i32|i64) -> [I..., D...]   result[i, :] = table[indices[i], :]
//   scatter(operand[V, D...], indices[I...], updates[I..., D...]) -> [V, D...]  operand[indices[i], :] += updates[i, :]
// Out-of-range indices are clamped (gather, as StableHLO) or skipped (scatter).

struct Instruction {
  Op op;
  std::vector<ValueId> operands;
  ValueId result = kNoValue;
  Attributes attrs;
};

struct Function {
  std::string name;
  // Type of every value, indexed by ValueId.
  std::vector<TensorType> value_types;
  std::vector<ValueId> params;
  std::vector<std::string> param_names;   // one per param; may be empty strings
  std::vector<Instruction> instructions;  // operands defined before use
  std::vector<ValueId> results;
  std::vector<std::string> result_names;  // one per result; may be empty strings

  const TensorType& type(ValueId v) const { return value_types[static_cast<size_t>(v)]; }
  int64_t num_values() const { return static_cast<int64_t>(value_types.size()); }
  // Adds a parameter and returns its value. Parameters may only be added before instructions.
  ValueId AddParameter(TensorType type, std::string name = "");
  // Appends an instruction with a new result value of `result_type`; no checking here (see
  // FunctionBuilder for checked construction and Verify for whole-function checks).
  ValueId AddInstruction(Op op, std::vector<ValueId> operands, TensorType result_type, Attributes attrs = {});
  // Index of the parameter named `name`, or -1.
  int FindParam(absl::string_view name) const;
  int FindResult(absl::string_view name) const;
};

struct Module {
  std::vector<Function> functions;
  // nullptr if absent.
  const Function* Find(absl::string_view name) const;
  Function* Find(absl::string_view name);
};

}  // namespace pcp

#endif  // PCP_AUTODIFF_IR_H_
