// Mixed precision as a property of the program: a rewrite that rounds what tensor cores read
// and write to a 16-bit type, so every backend (the CPU one included) computes the same
// numbers and a mixed CPU + GPU cluster stays consistent.
//
//   PCP_ASSIGN_OR_RETURN(Precision p, ParsePrecision("bf16"));
//   PCP_ASSIGN_OR_RETURN(int products, ApplyMixedPrecision(train_step, p));
//
// What bf16 / f16 means here (the same as torch.autocast for a GPT): every f32
// stablehlo.dot_general reads its operands rounded to the 16-bit type (round to nearest
// even) and its result is rounded to it too (the "activation" a 16-bit product would store);
// the product itself accumulates in f32; fused attention (attention.h) likewise reads q, k,
// v and the incoming gradient rounded and rounds its outputs, its lse and delta rows and
// everything inside it (scores, softmax) staying f32. Everything else stays f32: parameters (the master
// weights), AdamW's moments, LayerNorm, softmax, the loss and every reduction, and the Δs a
// worker sends. A rounding is the IR pair convert(convert(x, bf16), f32), so the program
// stays plain StableHLO; no pass folds such a pair away (FoldConstants only drops converts to
// the same type). A backend that has 16-bit matrix units may run a product whose operands are
// such pairs on them: the numbers are the same up to the order of the f32 accumulation.
//
// Apply it to a whole train_step (after BuildTrainStep: the backward's products, which read
// the incoming gradients, are rounded as well) and to eval / logits functions alike, before
// RunStandardPasses (CSE then merges the roundings of a value read by several products).
// f16's range is small (largest finite 65504, smallest normal 6.1e-5): gradients need loss
// scaling (TrainStepOptions::loss_scale, train_step.h).
#ifndef PCP_AUTODIFF_MIXED_PRECISION_H_
#define PCP_AUTODIFF_MIXED_PRECISION_H_

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

enum class Precision { kF32, kBF16, kF16 };

// Names as job files spell them (training.precision).
inline constexpr std::pair<Precision, absl::string_view> kPrecisionNames[] = {
    {Precision::kF32, "f32"},
    {Precision::kBF16, "bf16"},
    {Precision::kF16, "f16"},
};
// f16's static loss scale (TrainStepOptions::loss_scale) where a job sets none.
inline constexpr double kF16LossScale = 1024.0;

// "f32", "bf16", "f16".
absl::string_view PrecisionName(Precision precision);
// The inverse of PrecisionName; anything else is INVALID_ARGUMENT naming the accepted values.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);
// kBF16 -> DType::kBF16, kF16 -> DType::kF16, kF32 -> DType::kF32.
DType PrecisionDType(Precision precision);

// Rounds every f32 dot_general's operands and result through `precision`'s 16-bit type (see
// above); an operand that already is such a rounding is not rounded again. kF32 leaves the
// function unchanged. Returns the number of products rewritten. Signature, names and the
// other instructions are kept; the result is verified.
absl::StatusOr<int> ApplyMixedPrecision(Function& function, Precision precision);

// True if `v` is defined by convert(convert(x, bf16 or f16), f32): a value exactly
// representable in that 16-bit type. Sets *dtype (if given) to the 16-bit type.
bool IsRoundedThroughHalf(const Function& function, ValueId v, DType* dtype = nullptr);

}  // namespace pcp

#endif  // PCP_AUTODIFF_MIXED_PRECISION_H_
