// Function-to-function rewrites. Each keeps the function's signature and semantics and
// leaves it verified (tests run Verify after every pass).
//
//   PCP_RETURN_IF_ERROR(RunStandardPasses(function));   // fold, CSE, DCE, compact
//   std::string first;
//   PCP_ASSIGN_OR_RETURN(int n, LowerF64ToF32(function, &first));
//   if (n > 0) LOG(WARNING) << n << " f64 values computed in f32 (first: " << first << ")";
#ifndef PCP_AUTODIFF_PASSES_H_
#define PCP_AUTODIFF_PASSES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// Removes instructions whose results no function result depends on.
absl::Status EliminateDeadCode(Function& function);
// Replaces an instruction by an earlier identical one (same op, operands, attributes, type).
absl::Status EliminateCommonSubexpressions(Function& function);
// Evaluates instructions whose operands are all constants (results up to `max_elements`
// elements, so folding never materialises huge tensors) and applies algebraic identities
// that are exact in IEEE arithmetic (x*1, 1*x, x/1, x-(+0), x+(-0), (-0)+x with splat
// constants, literal or broadcast; identity transpose/reshape/broadcast_in_dim; convert to the
// same dtype). Iota and broadcast_in_dim stay as they are (their values still feed folding);
// a folded result that is one repeated value becomes scalar constant + broadcast_in_dim.
// Also add(concatenate(a...), concatenate(b...)) where, at every position, one side is a splat
// -0.0 (or integer 0), or both are +0.0, becomes one concatenate of the other side's pieces
// (the slice VJP pads with -0.0, so summed gradients of slices of one value merge this way).
absl::Status FoldConstants(Function& function, int64_t max_elements = 1 << 16);
// Renumbers values densely in definition order (after passes that remove instructions).
void CompactValues(Function& function);
// FoldConstants, EliminateCommonSubexpressions, EliminateDeadCode, CompactValues, Verify.
absl::Status RunStandardPasses(Function& function);

// A copy of `function` built again instruction by instruction through a FunctionBuilder (for
// passes that replace an instruction by several): `rewrite(builder, inst, map)`, where map[v]
// is the new function's value for each value v of `function` defined before inst, emits what
// stands for inst's result and returns it, or returns kNoValue to have inst copied as it is.
// Signature and names are kept; the first error (the builder's included) is returned.
using InstructionRewrite =
    std::function<ValueId(FunctionBuilder& builder, const Instruction& inst, const std::vector<ValueId>& map)>;
absl::StatusOr<Function> RebuildFunction(const Function& function, const InstructionRewrite& rewrite);

// f64 policy (decided for StableHLO import): f64 is folded exactly (the interpreter computes
// f64 in double), and f64 values that survive folding are computed in f32, with a warning the
// caller logs; never an error, and no backend ever sees f64 (both reject it). Run this after
// RunStandardPasses, so that f64 constant subgraphs (1/sqrt(d) scales, masks) are folded in
// double and rounded to f32 once, by their convert.
// LowerF64ToF32 retypes every f64 value (parameters and results included, so the signature
// changes where it had f64) to f32, converts f64 constants to f32 (nearest even), and removes
// the converts that become f32 -> f32. Returns how many values it retyped (0: the function is
// unchanged) and, if `first` is given and the count is positive, sets it to where the first
// one is defined ("argument 0 'x'" or "instruction 3 (stablehlo.multiply)", numbered before
// the rewrite). Values are renumbered (CompactValues).
absl::StatusOr<int> LowerF64ToF32(Function& function, std::string* first = nullptr);

// Half-precision policy (decided for StableHLO import): bf16 and f16 values are computed in
// f32 — a mixed-precision export trains at f32 precision, the converts between them and f32
// become identities (no rounding to the narrow type), and bf16 / f16 constants are widened
// exactly. LowerHalfToF32 retypes them as LowerF64ToF32 retypes f64, with the same count and
// `first`. Run it before RunStandardPasses (the interpreter that folds constants computes no
// bf16 / f16).
absl::StatusOr<int> LowerHalfToF32(Function& function, std::string* first = nullptr);

}  // namespace pcp

#endif  // PCP_AUTODIFF_PASSES_H_
