// The reverse-mode driver: finds the instructions between the differentiated values and the
// output, walks them in reverse, calls each op's rule from the table (vjp_rules.cc) and sums
// the gradients that reach a value from several uses. Only floating-point values carry
// gradients: an integer or boolean result cuts the path (indices, masks, compare).
//
// The max subtracted inside a softmax or log-softmax is cut from the reverse pass: the output
// provably does not depend on it (shift_invariance.h), as in JAX and PyTorch; a softmax's
// backward is one closed-form rule (softmax_vjp.h), as PyTorch's.
//
// The rules emit IR unconditionally, including for operands that turn out to be constants;
// such dead gradient code is left for EliminateDeadCode (passes.h) to remove.
#include "pcp/autodiff/vjp.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"
#include "shift_invariance.h"
#include "softmax_vjp.h"

namespace pcp {
namespace {

// `value` as a tensor of floating-point `type` (f16/bf16 through an f32 scalar). `type` is
// taken by value: callers pass b.type(v), which emitting may reallocate.
ValueId FloatFill(FunctionBuilder& b, double value, TensorType type) {
  ValueId s = type.dtype == DType::kF32 ? b.ScalarConstant(value) : b.Convert(b.ScalarConstant(value), type.dtype);
  return type.rank() == 0 ? s : b.BroadcastInDim(s, type.shape, {});
}

// The op's name, or its number for a value outside the op list (a corrupt function).
std::string NameOf(Op op) {
  int i = static_cast<int>(op);
  return i < kNumOps ? std::string(OpName(op)) : absl::StrCat("op #", i);
}

}  // namespace

absl::StatusOr<std::vector<ValueId>> AppendGradients(FunctionBuilder& builder, ValueId output,
                                                     absl::Span<const ValueId> wrt, ValueId seed) {
  PCP_RETURN_IF_ERROR(builder.status(), _ << "AppendGradients: builder already failed");
  const int64_t num_values = builder.function().num_values();
  auto valid = [&](ValueId v) { return v >= 0 && v < num_values; };
  if (!valid(output)) {
    return absl::InvalidArgumentError(absl::StrCat("AppendGradients: output %", output, " is not a value"));
  }
  const TensorType output_type = builder.type(output);
  if (!IsFloat(output_type.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("AppendGradients: output %", output, " has type ",
                                                   output_type.ToString(),
                                                   "; only floating-point values have gradients"));
  }
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (!valid(wrt[i])) {
      return absl::InvalidArgumentError(absl::StrCat("AppendGradients: wrt[", i, "] = %", wrt[i], " is not a value"));
    }
    if (!IsFloat(builder.type(wrt[i]).dtype)) {
      return absl::InvalidArgumentError(absl::StrCat("AppendGradients: wrt[", i, "] = %", wrt[i], " has type ",
                                                     builder.type(wrt[i]).ToString(),
                                                     "; integer and boolean values are not differentiable"));
    }
  }
  if (seed != kNoValue) {
    if (!valid(seed))
      return absl::InvalidArgumentError(absl::StrCat("AppendGradients: seed %", seed, " is not a value"));
    if (builder.type(seed) != output_type) {
      return absl::InvalidArgumentError(absl::StrCat("AppendGradients: seed has type ", builder.type(seed).ToString(),
                                                     " but the output has type ", output_type.ToString()));
    }
  }

  // The forward instructions, copied: the builder's vector grows while rules emit.
  const std::vector<Instruction> forward = builder.function().instructions;
  // needed[v]: output depends on v.
  std::vector<bool> needed(static_cast<size_t>(num_values), false);
  needed[output] = true;
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    if (!needed[it->result]) continue;
    for (ValueId v : it->operands) needed[v] = true;
  }
  // The maxima of softmax / log-softmax, which output does not depend on (shift_invariance.h),
  // carry no gradient: the path through them is cut.
  const std::vector<bool> cut = ShiftInvariantMaxima(builder.function(), output, needed);
  // active[v]: v is floating point and depends on some wrt value other than through a cut max.
  std::vector<bool> active(static_cast<size_t>(num_values), false);
  for (ValueId v : wrt) active[v] = true;
  for (const Instruction& inst : forward) {
    if (!IsFloat(builder.type(inst.result).dtype) || cut[inst.result]) continue;
    for (ValueId v : inst.operands) {
      if (active[v]) active[inst.result] = true;
    }
  }

  std::vector<int> defining(static_cast<size_t>(num_values), -1);
  for (size_t i = 0; i < forward.size(); ++i) defining[forward[i].result] = static_cast<int>(i);

  std::vector<ValueId> grad(static_cast<size_t>(num_values), kNoValue);
  auto accumulate = [&](ValueId operand, ValueId c) {
    grad[operand] = grad[operand] == kNoValue ? c : builder.Add(grad[operand], c);
  };
  grad[output] = seed != kNoValue ? seed : FloatFill(builder, 1.0, output_type);
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Instruction& inst = *it;
    if (!active[inst.result] || !needed[inst.result] || grad[inst.result] == kNoValue) continue;
    // A softmax's path from its result to its input is one rule (softmax_vjp.h); its exp,
    // row sum and broadcast then get gradients only from other uses, if any.
    if (SoftmaxMatch softmax; MatchSoftmax(builder.function(), defining, inst, &softmax)) {
      if (active[softmax.input])
        accumulate(softmax.input, SoftmaxVjp(builder, inst.result, grad[inst.result], softmax));
      PCP_RETURN_IF_ERROR(builder.status(), _ << "VJP of the softmax ending in %" << inst.result);
      continue;
    }
    VjpEntry entry = GetVjpEntry(inst.op);
    if (entry.non_differentiable) continue;
    if (entry.rule == nullptr) return absl::UnimplementedError(absl::StrCat("no VJP for ", NameOf(inst.op)));
    std::string where = absl::StrCat("VJP of ", NameOf(inst.op), " defining %", inst.result);
    PCP_ASSIGN_OR_RETURN(std::vector<ValueId> contributions, entry.rule(builder, inst, grad[inst.result]), _ << where);
    PCP_RETURN_IF_ERROR(builder.status(), _ << where);
    if (contributions.size() != inst.operands.size()) {
      return absl::InternalError(absl::StrCat(where, ": the rule returned ", contributions.size(), " gradients for ",
                                              inst.operands.size(), " operands"));
    }
    for (size_t j = 0; j < contributions.size(); ++j) {
      ValueId operand = inst.operands[j];
      ValueId c = contributions[j];
      if (c == kNoValue || !active[operand]) continue;
      if (builder.type(c) != builder.type(operand)) {
        return absl::InternalError(absl::StrCat(where, ": gradient of operand ", j, " has type ",
                                                builder.type(c).ToString(), ", expected ",
                                                builder.type(operand).ToString()));
      }
      accumulate(operand, c);
    }
    PCP_RETURN_IF_ERROR(builder.status(), _ << where);
  }

  std::vector<ValueId> result;
  result.reserve(wrt.size());
  for (ValueId v : wrt) {
    // A wrt value the output does not depend on gets zeros, never an error.
    result.push_back(grad[v] != kNoValue ? grad[v] : FloatFill(builder, 0.0, builder.type(v)));
  }
  PCP_RETURN_IF_ERROR(builder.status(), _ << "AppendGradients");
  return result;
}

absl::StatusOr<Function> BuildGradientFunction(const Function& forward, absl::Span<const int> wrt, int loss_result) {
  if (loss_result < 0 || loss_result >= static_cast<int>(forward.results.size())) {
    return absl::InvalidArgumentError(absl::StrCat("BuildGradientFunction(@", forward.name, "): loss result ",
                                                   loss_result, " outside [0, ", forward.results.size(), ")"));
  }
  std::vector<ValueId> wrt_values;
  std::vector<std::string> names = forward.result_names;
  names.resize(forward.results.size());
  for (int p : wrt) {
    if (p < 0 || p >= static_cast<int>(forward.params.size())) {
      return absl::InvalidArgumentError(absl::StrCat("BuildGradientFunction(@", forward.name, "): parameter index ", p,
                                                     " outside [0, ", forward.params.size(), ")"));
    }
    wrt_values.push_back(forward.params[p]);
    const std::string& pname = p < static_cast<int>(forward.param_names.size()) ? forward.param_names[p] : "";
    names.push_back(absl::StrCat("grad.", pname.empty() ? absl::StrCat("arg", p) : pname));
  }
  FunctionBuilder b(forward);
  PCP_ASSIGN_OR_RETURN(std::vector<ValueId> grads, AppendGradients(b, forward.results[loss_result], wrt_values),
                       _ << "differentiating @" << forward.name);
  std::vector<ValueId> results = forward.results;
  results.insert(results.end(), grads.begin(), grads.end());
  b.Return(std::move(results), std::move(names));
  PCP_ASSIGN_OR_RETURN(Function g, b.Build());
  PCP_RETURN_IF_ERROR(Verify(g), _ << "gradient of @" << forward.name);
  return g;
}

}  // namespace pcp
