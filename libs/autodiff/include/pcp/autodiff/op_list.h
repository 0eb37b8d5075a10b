// The one list of IR operations. Everything about an op that is not behaviour (its enum,
// StableHLO name, arity and category) derives from PCP_OP_LIST; adding an op means one
// line here, one VJP rule, the kernels and one test case.
//
//   Op op = Op::kAdd;
//   OpName(op) == "stablehlo.add"; OpArity(op) == 2; IsElementwise(op) == true;
//   absl::StatusOr<Op> parsed = ParseOp("stablehlo.dot_general");
#ifndef PCP_AUTODIFF_OP_LIST_H_
#define PCP_AUTODIFF_OP_LIST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp {

// Categories, named once so passes and backends do not re-list ops.
enum class OpCategory : uint8_t {
  kSource,       // no tensor operands: constant, iota
  kElementwise,  // result[i] depends only on operands[i]; all operands have the result's shape
  kLayout,       // moves or copies elements: broadcast, reshape, transpose, slice, concatenate
  kReduction,    // reduce over dimensions with an add or max body
  kContraction,  // dot_general
  kIndexing,     // gather rows / scatter-add rows
};

inline constexpr int kVariadic = -1;

// V(enumerator, MLIR op name, operand count or kVariadic, category)
// and / or / not: logical on i1, bitwise on i32 / i64 (the interpreter and both backends
// compute all three types); not defined on floats.
// Operand order follows StableHLO: reduce(input, init), select(pred, on_true, on_false),
// gather(table, indices), scatter(operand, indices, updates), clamp(min, x, max) = min(max(x,
// min), max) with all three of one type (the parser broadcasts StableHLO's scalar bounds).
#define PCP_OP_LIST(V)                                                   \
  V(kConstant, "stablehlo.constant", 0, kSource)                         \
  V(kIota, "stablehlo.iota", 0, kSource)                                 \
  V(kAdd, "stablehlo.add", 2, kElementwise)                              \
  V(kSubtract, "stablehlo.subtract", 2, kElementwise)                    \
  V(kMultiply, "stablehlo.multiply", 2, kElementwise)                    \
  V(kDivide, "stablehlo.divide", 2, kElementwise)                        \
  V(kMaximum, "stablehlo.maximum", 2, kElementwise)                      \
  V(kMinimum, "stablehlo.minimum", 2, kElementwise)                      \
  V(kPower, "stablehlo.power", 2, kElementwise)                          \
  V(kNegate, "stablehlo.negate", 1, kElementwise)                        \
  V(kExponential, "stablehlo.exponential", 1, kElementwise)              \
  V(kLog, "stablehlo.log", 1, kElementwise)                              \
  V(kSqrt, "stablehlo.sqrt", 1, kElementwise)                            \
  V(kRsqrt, "stablehlo.rsqrt", 1, kElementwise)                          \
  V(kTanh, "stablehlo.tanh", 1, kElementwise)                            \
  V(kLogistic, "stablehlo.logistic", 1, kElementwise)                    \
  V(kAbs, "stablehlo.abs", 1, kElementwise)                              \
  V(kCeil, "stablehlo.ceil", 1, kElementwise)                            \
  V(kErf, "chlo.erf", 1, kElementwise)                                   \
  V(kAnd, "stablehlo.and", 2, kElementwise)                              \
  V(kOr, "stablehlo.or", 2, kElementwise)                                \
  V(kNot, "stablehlo.not", 1, kElementwise)                              \
  V(kCompare, "stablehlo.compare", 2, kElementwise)                      \
  V(kSelect, "stablehlo.select", 3, kElementwise)                        \
  V(kClamp, "stablehlo.clamp", 3, kElementwise)                          \
  V(kConvert, "stablehlo.convert", 1, kElementwise)                      \
  V(kBroadcastInDim, "stablehlo.broadcast_in_dim", 1, kLayout)           \
  V(kReshape, "stablehlo.reshape", 1, kLayout)                           \
  V(kTranspose, "stablehlo.transpose", 1, kLayout)                       \
  V(kSlice, "stablehlo.slice", 1, kLayout)                               \
  V(kConcatenate, "stablehlo.concatenate", kVariadic, kLayout)           \
  V(kReduce, "stablehlo.reduce", 2, kReduction)                          \
  V(kDotGeneral, "stablehlo.dot_general", 2, kContraction)               \
  V(kGather, "stablehlo.gather", 2, kIndexing)                           \
  V(kScatter, "stablehlo.scatter", 3, kIndexing)

enum class Op : uint8_t {
#define PCP_OP_ENUM_(e, name, arity, category) e,
  PCP_OP_LIST(PCP_OP_ENUM_)
#undef PCP_OP_ENUM_
};

#define PCP_OP_COUNT_(e, name, arity, category) +1
inline constexpr int kNumOps = 0 PCP_OP_LIST(PCP_OP_COUNT_);
#undef PCP_OP_COUNT_
static_assert(kNumOps == 35, "update kNumOps users (VJP table, kernels, tests) when adding ops");

absl::string_view OpName(Op op);
int OpArity(Op op);  // kVariadic for concatenate
OpCategory GetOpCategory(Op op);
absl::StatusOr<Op> ParseOp(absl::string_view name);

inline bool IsElementwise(Op op) { return GetOpCategory(op) == OpCategory::kElementwise; }
// and, or, not: logical on i1, bitwise on integers.
inline bool IsLogical(Op op) { return op == Op::kAnd || op == Op::kOr || op == Op::kNot; }
// Elementwise ops whose result dtype is not the first operand's (compare → i1, convert).
inline bool ChangesDType(Op op) { return op == Op::kCompare || op == Op::kConvert; }

// All ops, in list order, for tests and tables that must cover every op.
const Op* AllOps();  // kNumOps entries

}  // namespace pcp

#endif  // PCP_AUTODIFF_OP_LIST_H_
