// ExpandAttention (attention.h): each pcp.attention* op as the StableHLO that computes its
// definition, materialising the scores s and the probabilities P.
#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"

namespace pcp {
namespace {

// Emits one attention op's expansion on the mapped operands `in`; returns its value.
class AttentionExpander {
 public:
  AttentionExpander(FunctionBuilder& b, const Instruction& inst, const std::vector<ValueId>& in)
      : b_(b), inst_(inst), in_(in), rank_(b.type(in[0]).rank()) {
    batch_.resize(static_cast<size_t>(rank_ - 2));
    std::iota(batch_.begin(), batch_.end(), 0);
  }

  ValueId Expand() {
    const ValueId q = in_[0], k = in_[1];
    const ValueId s = Scores(q, k);
    switch (inst_.op) {
      case Op::kAttention:
      case Op::kAttentionLse: {
        const ValueId max = b_.ReduceMax(s, {rank_ - 1});
        const ValueId e = b_.Exp(b_.Sub(s, Rows(max, s)));
        const ValueId sum = b_.ReduceSum(e, {rank_ - 1});
        if (inst_.op == Op::kAttentionLse) return b_.Add(max, b_.Log(sum));
        return Dot(b_.Div(e, Rows(sum, s)), in_[2], rank_ - 1, rank_ - 2);  // P v
      }
      case Op::kAttentionGradV: {
        const ValueId p = Probabilities(s, in_[2]);
        return Dot(p, in_[3], rank_ - 2, rank_ - 2);  // Pᵀ do
      }
      default: {  // grad_q, grad_k: (q, k, v, lse, delta, do)
        const ValueId p = Probabilities(s, in_[3]);
        const ValueId dp = Dot(in_[5], in_[2], rank_ - 1, rank_ - 1);  // do vᵀ
        const ValueId ds = b_.BMul(b_.Mul(p, b_.Sub(dp, Rows(in_[4], s))), b_.ScalarConstant(inst_.attrs.scale));
        return inst_.op == Op::kAttentionGradQ ? Dot(ds, k, rank_ - 1, rank_ - 2)   // ds k
                                               : Dot(ds, q, rank_ - 2, rank_ - 2);  // dsᵀ q
      }
    }
  }

 private:
  // dot_general over the shared batch dimensions, contracting lhs dimension `lc` with rhs `rc`.
  ValueId Dot(ValueId lhs, ValueId rhs, int64_t lc, int64_t rc) {
    DotDims d;
    d.lhs_batch = d.rhs_batch = batch_;
    d.lhs_contract = {lc};
    d.rhs_contract = {rc};
    return b_.DotGeneral(lhs, rhs, std::move(d));
  }

  // A per-row value [B..., T] broadcast over the keys of `like` [B..., T, S].
  ValueId Rows(ValueId row, ValueId like) {
    std::vector<int64_t> dims(static_cast<size_t>(rank_ - 1));
    std::iota(dims.begin(), dims.end(), 0);
    return b_.BroadcastInDim(row, b_.type(like).shape, dims);
  }

  // s = scale q kᵀ, -inf where causal masks key j > query i.
  ValueId Scores(ValueId q, ValueId k) {
    ValueId s = b_.BMul(Dot(q, k, rank_ - 1, rank_ - 1), b_.ScalarConstant(inst_.attrs.scale));
    if (!inst_.attrs.causal) return s;
    const Shape shape = b_.type(s).shape;
    const TensorType grid{DType::kI32, {shape[static_cast<size_t>(rank_ - 2)], shape[static_cast<size_t>(rank_ - 1)]}};
    const ValueId allowed = b_.Compare(b_.Iota(grid, 1), b_.Iota(grid, 0), ComparisonDirection::kLE);
    const ValueId masked = b_.Full(-std::numeric_limits<double>::infinity(), TensorType{DType::kF32, shape});
    return b_.Select(b_.BroadcastInDim(allowed, shape, {rank_ - 2, rank_ - 1}), s, masked);
  }

  ValueId Probabilities(ValueId s, ValueId lse) { return b_.Exp(b_.Sub(s, Rows(lse, s))); }

  FunctionBuilder& b_;
  const Instruction& inst_;
  const std::vector<ValueId>& in_;
  const int64_t rank_;
  std::vector<int64_t> batch_;
};

}  // namespace

bool HasAttentionOps(const Function& function) {
  return std::any_of(function.instructions.begin(), function.instructions.end(),
                     [](const Instruction& i) { return GetOpCategory(i.op) == OpCategory::kAttention; });
}

absl::StatusOr<int> ExpandAttention(Function& function) {
  PCP_RETURN_IF_ERROR(Verify(function), _ << "ExpandAttention: input");
  const Function& f = function;
  if (!HasAttentionOps(f)) return 0;
  int expanded = 0;
  auto expand = [&](FunctionBuilder& b, const Instruction& inst, const std::vector<ValueId>& map) -> ValueId {
    if (GetOpCategory(inst.op) != OpCategory::kAttention) return kNoValue;
    std::vector<ValueId> operands;
    for (ValueId o : inst.operands) operands.push_back(map[static_cast<size_t>(o)]);
    ++expanded;
    return AttentionExpander(b, inst, operands).Expand();
  };
  PCP_ASSIGN_OR_RETURN(Function g, RebuildFunction(f, expand), _ << "ExpandAttention");
  PCP_RETURN_IF_ERROR(Verify(g), _ << "ExpandAttention: output");
  function = std::move(g);
  return expanded;
}

}  // namespace pcp
