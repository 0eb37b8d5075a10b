#include "logits_functions.h"

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"
#include "pcp/models/cross_entropy.h"

namespace pcp::models_internal {
namespace {

// g's first result as logits f32[batch, block, V] (a [batch * block, V] result is reshaped).
absl::StatusOr<ValueId> LogitsOf(FunctionBuilder& b, const Function& g, ValueId v, int64_t batch, int64_t block,
                                 absl::string_view place) {
  const TensorType t = b.type(v);
  const bool btv = t.rank() == 3 && t.shape[0] == batch && t.shape[1] == block;
  const bool flat = t.rank() == 2 && t.shape[0] == batch * block;
  if (t.dtype != DType::kF32 || !(btv || flat)) {
    return absl::InvalidArgumentError(absl::StrCat(place, "function '", g.name, "' returns ", t.ToString(),
                                                   " first; logits must be f32 [B, T, V] or [B*T, V] for tokens [",
                                                   batch, ", ", block, "]"));
  }
  return btv ? v : b.Reshape(v, {batch, block, t.shape[1]});
}

}  // namespace

void CopyInstructions(const Function& from, std::vector<ValueId>& map, Function* to) {
  for (const Instruction& ins : from.instructions) {
    std::vector<ValueId> operands;
    for (ValueId v : ins.operands) operands.push_back(map[static_cast<size_t>(v)]);
    map[static_cast<size_t>(ins.result)] =
        to->AddInstruction(ins.op, std::move(operands), from.type(ins.result), ins.attrs);
  }
}

absl::StatusOr<Function> FormLossFromLogits(const Function& g, absl::string_view place) {
  const TensorType tokens = g.params.empty() ? TensorType{} : g.type(g.params.back());
  if (g.results.empty() || (tokens.dtype != DType::kI32 && tokens.dtype != DType::kI64) || tokens.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(place, "function '", g.name, "' must take the tokens (i32 or i64 ",
                                                   "[B, T]) as its last argument and return logits to form the loss "
                                                   "from (model.function is empty)"));
  }
  Function h;
  h.name = g.name;
  std::vector<ValueId> map(static_cast<size_t>(g.num_values()), kNoValue);
  for (size_t i = 0; i < g.params.size(); ++i) {
    map[static_cast<size_t>(g.params[i])] = h.AddParameter(g.type(g.params[i]), g.param_names[i]);
  }
  const ValueId targets = h.AddParameter(tokens, "targets");
  CopyInstructions(g, map, &h);
  FunctionBuilder b(std::move(h));
  PCP_ASSIGN_OR_RETURN(ValueId logits,
                       LogitsOf(b, g, map[static_cast<size_t>(g.results[0])], tokens.shape[0], tokens.shape[1], place));
  b.Return({MeanCrossEntropy(b, logits, targets)}, {"loss"});
  return b.Build();
}

absl::StatusOr<Function> BuildImportedSampleLogits(const Function& g, const Function& loss,
                                                   const std::vector<int>& trainable,
                                                   const std::vector<std::string>& names,
                                                   const std::map<int, Tensor>& frozen, const int data[2],
                                                   int64_t batch, int64_t block) {
  // Argument i of the loss function is argument gi(i) of g, which lacks the targets.
  auto gi = [&](int i) { return static_cast<size_t>(i < data[1] ? i : i - 1); };
  const size_t n = loss.params.size();
  if (g.params.size() + 1 != n) {
    return absl::InvalidArgumentError(absl::StrCat("model.logits: function '", g.name, "' takes ", g.params.size(),
                                                   " arguments; it must take the loss function's ", n,
                                                   " arguments without the targets, in order"));
  }
  for (int i = 0; i < static_cast<int>(n); ++i) {
    if (i == data[1]) continue;
    const TensorType& want = loss.type(loss.params[static_cast<size_t>(i)]);
    const TensorType& have = g.type(g.params[gi(i)]);
    if (have != want) {
      return absl::InvalidArgumentError(absl::StrCat("model.logits: argument %arg", gi(i), " of '", g.name, "' is ",
                                                     have.ToString(), " where the loss function's argument %arg", i,
                                                     " is ", want.ToString(),
                                                     " (the logits function takes the loss function's arguments "
                                                     "without the targets, in order)"));
    }
  }
  Function s;
  s.name = "logits";
  std::vector<ValueId> map(static_cast<size_t>(g.num_values()), kNoValue);
  for (size_t k = 0; k < trainable.size(); ++k) {
    const ValueId p = g.params[gi(trainable[k])];
    map[static_cast<size_t>(p)] = s.AddParameter(g.type(p), names[k]);
  }
  const ValueId one = s.AddParameter(TensorType{DType::kI32, {1, block}}, "tokens");
  for (const auto& [i, value] : frozen) {
    Attributes attrs;
    attrs.literal = value;
    const ValueId p = g.params[gi(i)];
    map[static_cast<size_t>(p)] = s.AddInstruction(Op::kConstant, {}, g.type(p), std::move(attrs));
  }
  // The sequence in every row of the export's batch (causal models give each row the same logits).
  const ValueId tokens_arg = g.params[gi(data[0])];
  Attributes rows;
  rows.dims = {0, 1};
  ValueId tokens = s.AddInstruction(Op::kBroadcastInDim, {one}, TensorType{DType::kI32, {batch, block}}, rows);
  if (g.type(tokens_arg).dtype != DType::kI32) {
    tokens = s.AddInstruction(Op::kConvert, {tokens}, g.type(tokens_arg));
  }
  map[static_cast<size_t>(tokens_arg)] = tokens;
  CopyInstructions(g, map, &s);
  FunctionBuilder b(std::move(s));
  PCP_ASSIGN_OR_RETURN(ValueId logits,
                       LogitsOf(b, g, map[static_cast<size_t>(g.results[0])], batch, block, "model.logits: "));
  const int64_t vocab = b.type(logits).shape[2];
  b.Return({b.Slice(logits, {0, 0, 0}, {1, block, vocab})}, {"logits"});
  PCP_ASSIGN_OR_RETURN(Function out, b.Build(), _ << "model.logits");
  PCP_RETURN_IF_ERROR(Verify(out), _ << "model.logits: the sampling function");
  PCP_RETURN_IF_ERROR(RunStandardPasses(out), _ << "model.logits: optimizing the sampling function");
  return out;
}

}  // namespace pcp::models_internal
