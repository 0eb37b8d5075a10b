#include "pcp/models/cross_entropy.h"

#include "absl/strings/str_cat.h"

namespace pcp {

ValueId MeanCrossEntropy(FunctionBuilder& b, ValueId logits, ValueId targets) {
  if (!b.status().ok()) return kNoValue;
  const TensorType lt = b.type(logits), tt = b.type(targets);
  if (lt.rank() != 3 || tt.rank() != 2 || tt.shape[0] != lt.shape[0] || tt.shape[1] != lt.shape[1]) {
    b.SetError(absl::InvalidArgumentError(absl::StrCat("cross-entropy of logits ", lt.ToString(), " against targets ",
                                                       tt.ToString(), ": expected f32[B, T, V] and [B, T]")));
    return kNoValue;
  }
  const Shape full = lt.shape;
  auto expand = [&](ValueId x) { return b.BroadcastInDim(x, full, {0, 1}); };  // [B, T] -> [B, T, V]
  ValueId shifted = b.Sub(logits, expand(b.ReduceMax(logits, {2})));
  ValueId lse = b.Log(b.ReduceSum(b.Exp(shifted), {2}));  // [B, T]
  ValueId log_probs = b.Sub(shifted, expand(lse));
  ValueId classes = b.Iota(TensorType{tt.dtype, full}, 2);
  ValueId hit = b.Compare(classes, expand(targets), ComparisonDirection::kEQ);
  ValueId picked = b.Select(hit, log_probs, b.Full(0.0, TensorType{DType::kF32, full}));
  ValueId total = b.ReduceSum(picked, {0, 1, 2});
  return b.Mul(total, b.ScalarConstant(-1.0 / static_cast<double>(full[0] * full[1])));
}

}  // namespace pcp
