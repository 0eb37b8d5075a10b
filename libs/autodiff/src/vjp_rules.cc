// The VJP table: one rule per differentiable op. Each rule emits IR through the builder
// (never computes numbers) and returns one gradient per operand, kNoValue where the operand
// gets none. The driver (vjp.cc) only calls a rule for an instruction whose result is
// floating point and on a path from a differentiated value to the output, and drops
// contributions to operands that are not on such a path, so rules stay unconditional.
//
// Choices, in one place:
//  - Non-differentiable ops: constant, iota, compare, ceil, and the predicates and / or / not.
//  - Non-differentiable operands: integer indices (gather, scatter), predicates (select),
//    integer sides of convert, and the init value of reduce, which is treated as a constant
//    (the builder always makes it a literal 0 or -inf).
//  - maximum/minimum: the gradient goes to the selected operand; on ties to the first
//    (select(compare(a, b, GE|LE), g, 0)), so exactly one operand gets g.
//  - reduce max: the gradient is shared equally among the positions equal to the maximum
//    (a valid subgradient, as JAX does); if no position equals it (the init value won),
//    the input gets zero. The driver skips this rule for a softmax's max, whose gradient is
//    exactly zero (shift_invariance.h), and differentiates a softmax as a whole (softmax_vjp.h).
//  - power: d/da = b * a^(b-1); d/db = log(a) * a^b where a > 0 and 0 elsewhere (a <= 0 has
//    no real logarithm; log is taken of a base guarded by select, so this path adds no NaN).
//  - abs: the gradient at 0 is +g (sign(0) taken as +1).
//  - ceil: marked non-differentiable like compare: its derivative is 0 wherever it exists (it
//    does not at integers), so no gradient flows through it (JAX and PyTorch give zeros too).
//  - slice: padded back with zero concatenations per dimension; a stride s > 1 first
//    interleaves s-1 zero columns (concat along a new axis + reshape).
//  - pcp.attention: FlashAttention's backward (attention.h); its lse and grad ops have no
//    rule (no second derivatives through fused attention).
//  - gather / scatter: indices out of range are clamped by gather and skipped by scatter;
//    the rules clamp and mask the same way, so gradients match the forward semantics.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pcp/autodiff/vjp.h"

namespace pcp {
namespace {

using Grads = absl::StatusOr<std::vector<ValueId>>;

// Types are copied: the builder's value table may reallocate while a rule emits.
TensorType TypeOf(const FunctionBuilder& b, ValueId v) { return b.type(v); }

// `value` as a tensor of `type`; f16/bf16 go through an f32 scalar and a convert.
ValueId Fill(FunctionBuilder& b, double value, TensorType type) {
  ValueId s = (type.dtype == DType::kF32 || type.dtype == DType::kF64 || IsInteger(type.dtype))
                  ? b.ScalarConstant(value, type.dtype)
                  : b.Convert(b.ScalarConstant(value), type.dtype);
  return type.rank() == 0 ? s : b.BroadcastInDim(s, type.shape, {});
}

// ---- elementwise ------------------------------------------------------------------------

Grads AddVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) { return std::vector<ValueId>{g, g}; }

Grads SubtractVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) { return std::vector<ValueId>{g, b.Neg(g)}; }

Grads MultiplyVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId x = inst.operands[0], y = inst.operands[1];
  return std::vector<ValueId>{b.Mul(g, y), b.Mul(g, x)};
}

Grads DivideVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId y = inst.operands[1];
  // d(x/y)/dy = -x/y^2 = -(x/y)/y.
  return std::vector<ValueId>{b.Div(g, y), b.Neg(b.Div(b.Mul(g, inst.result), y))};
}

// max (direction GE) / min (LE): the first operand wins ties.
Grads ChooserVjp(FunctionBuilder& b, const Instruction& inst, ValueId g, ComparisonDirection dir) {
  ValueId first = b.Compare(inst.operands[0], inst.operands[1], dir);
  ValueId zero = Fill(b, 0.0, TypeOf(b, inst.result));
  return std::vector<ValueId>{b.Select(first, g, zero), b.Select(first, zero, g)};
}
Grads MaximumVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  return ChooserVjp(b, inst, g, ComparisonDirection::kGE);
}
Grads MinimumVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  return ChooserVjp(b, inst, g, ComparisonDirection::kLE);
}

Grads PowerVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId x = inst.operands[0], y = inst.operands[1];
  TensorType t = TypeOf(b, inst.result);
  ValueId one = Fill(b, 1.0, t);
  ValueId zero = Fill(b, 0.0, t);
  ValueId gx = b.Mul(g, b.Mul(y, b.Pow(x, b.Sub(y, one))));
  ValueId positive = b.Compare(x, zero, ComparisonDirection::kGT);
  ValueId log_x = b.Log(b.Select(positive, x, one));
  ValueId gy = b.Select(positive, b.Mul(b.Mul(g, inst.result), log_x), zero);
  return std::vector<ValueId>{gx, gy};
}

Grads NegateVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) { return std::vector<ValueId>{b.Neg(g)}; }

Grads ExponentialVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  return std::vector<ValueId>{b.Mul(g, inst.result)};
}

Grads LogVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  return std::vector<ValueId>{b.Div(g, inst.operands[0])};
}

Grads SqrtVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  // d sqrt(x) = 1 / (2 sqrt(x)).
  ValueId half = Fill(b, 0.5, TypeOf(b, inst.result));
  return std::vector<ValueId>{b.Div(b.Mul(g, half), inst.result)};
}

Grads RsqrtVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 rsqrt(x)^3.
  ValueId r = inst.result;
  ValueId minus_half = Fill(b, -0.5, TypeOf(b, r));
  return std::vector<ValueId>{b.Mul(b.Mul(g, minus_half), b.Mul(r, b.Mul(r, r)))};
}

Grads TanhVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId r = inst.result;
  ValueId one = Fill(b, 1.0, TypeOf(b, r));
  return std::vector<ValueId>{b.Mul(g, b.Sub(one, b.Mul(r, r)))};
}

Grads LogisticVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId r = inst.result;
  ValueId one = Fill(b, 1.0, TypeOf(b, r));
  return std::vector<ValueId>{b.Mul(g, b.Mul(r, b.Sub(one, r)))};
}

Grads AbsVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId x = inst.operands[0];
  ValueId non_negative = b.Compare(x, Fill(b, 0.0, TypeOf(b, x)), ComparisonDirection::kGE);
  return std::vector<ValueId>{b.Select(non_negative, g, b.Neg(g))};
}

Grads ErfVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  // d erf(x) = 2/sqrt(pi) exp(-x^2).
  ValueId x = inst.operands[0];
  ValueId scale = Fill(b, 2.0 / std::sqrt(M_PI), TypeOf(b, x));
  return std::vector<ValueId>{b.Mul(g, b.Mul(scale, b.Exp(b.Neg(b.Mul(x, x)))))};
}

Grads SelectVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId pred = inst.operands[0];
  ValueId zero = Fill(b, 0.0, TypeOf(b, inst.result));
  return std::vector<ValueId>{kNoValue, b.Select(pred, g, zero), b.Select(pred, zero, g)};
}

Grads ConvertVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  DType from = TypeOf(b, inst.operands[0]).dtype;
  DType to = TypeOf(b, inst.result).dtype;
  if (!IsFloat(from) || !IsFloat(to)) return std::vector<ValueId>{kNoValue};
  return std::vector<ValueId>{from == to ? g : b.Convert(g, from)};
}

// ---- layout -----------------------------------------------------------------------------

Grads BroadcastInDimVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  TensorType in = TypeOf(b, inst.operands[0]);
  TensorType out = TypeOf(b, inst.result);
  const std::vector<int64_t>& map = inst.attrs.dims;
  // Sum over result dims that are new, and over operand dims of size 1 that were stretched.
  std::vector<bool> summed(static_cast<size_t>(out.rank()), true);
  for (size_t i = 0; i < map.size(); ++i) {
    summed[map[i]] = in.shape[i] != out.shape[map[i]];
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < out.rank(); ++d) {
    if (summed[d]) dims.push_back(d);
  }
  ValueId reduced = dims.empty() ? g : b.ReduceSum(g, std::move(dims));
  return std::vector<ValueId>{b.Reshape(reduced, in.shape)};
}

Grads ReshapeVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  return std::vector<ValueId>{b.Reshape(g, TypeOf(b, inst.operands[0]).shape)};
}

Grads TransposeVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  const std::vector<int64_t>& perm = inst.attrs.dims;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return std::vector<ValueId>{b.Transpose(g, std::move(inverse))};
}

// Concatenates `zeros_before` zeros, `x` (of `type`), `zeros_after` zeros along `dim`,
// leaving out empty pieces. The zeros are -0.0, the exact identity of addition, so that
// FoldConstants can turn sums of such gradients (fan-out of several slices of one value) into
// one concatenation.
ValueId PadWithZeros(FunctionBuilder& b, ValueId x, TensorType type, int64_t dim, int64_t zeros_before,
                     int64_t zeros_after) {
  std::vector<ValueId> pieces;
  TensorType zeros = type;
  if (zeros_before > 0) {
    zeros.shape[dim] = zeros_before;
    pieces.push_back(Fill(b, -0.0, zeros));
  }
  pieces.push_back(x);
  if (zeros_after > 0) {
    zeros.shape[dim] = zeros_after;
    pieces.push_back(Fill(b, -0.0, zeros));
  }
  return pieces.size() == 1 ? x : b.Concatenate(std::move(pieces), dim);
}

Grads SliceVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  TensorType in = TypeOf(b, inst.operands[0]);
  TensorType cur = TypeOf(b, inst.result);  // the type of `grad` as dimensions are restored
  const Attributes& a = inst.attrs;
  if (cur.num_elements() == 0) return std::vector<ValueId>{Fill(b, 0.0, in)};
  ValueId grad = g;
  for (int64_t d = 0; d < in.rank(); ++d) {
    int64_t n = cur.shape[d], s = a.stride[d], start = a.start[d];
    if (n == in.shape[d]) continue;  // the whole dimension was taken (start 0, stride 1)
    int64_t extent = n;              // elements spanned by `grad` along d, from `start`
    if (s > 1) {
      // [.., n, ..] -> [.., n, 1, ..] ++ zeros [.., n, s-1, ..] -> [.., n*s, ..]: element k
      // lands at k*s. Trailing zeros past the operand's end are sliced off.
      Shape split = cur.shape;
      split.insert(split.begin() + d + 1, 1);
      TensorType zeros{cur.dtype, split};
      zeros.shape[d + 1] = s - 1;
      ValueId spread = b.Concatenate({b.Reshape(grad, split), Fill(b, 0.0, zeros)}, d + 1);
      Shape merged = cur.shape;
      merged[d] = n * s;
      grad = b.Reshape(spread, merged);
      extent = std::min(n * s, in.shape[d] - start);
      if (extent < n * s) {
        std::vector<int64_t> lo(merged.size(), 0), hi = merged;
        hi[d] = extent;
        grad = b.Slice(grad, std::move(lo), std::move(hi));
      }
    }
    cur.shape[d] = extent;
    grad = PadWithZeros(b, grad, cur, d, start, in.shape[d] - start - extent);
    cur.shape[d] = in.shape[d];
  }
  return std::vector<ValueId>{grad};
}

Grads ConcatenateVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  TensorType out = TypeOf(b, inst.result);
  int64_t dim = inst.attrs.dimension;
  std::vector<ValueId> grads;
  int64_t offset = 0;
  for (ValueId operand : inst.operands) {
    int64_t size = TypeOf(b, operand).shape[dim];
    std::vector<int64_t> lo(out.shape.size(), 0), hi = out.shape;
    lo[dim] = offset;
    hi[dim] = offset + size;
    grads.push_back(b.Slice(g, std::move(lo), std::move(hi)));
    offset += size;
  }
  return grads;
}

// ---- reduction, contraction, indexing ---------------------------------------------------

Grads ReduceVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId x = inst.operands[0];
  TensorType in = TypeOf(b, x);
  const std::vector<int64_t>& dims = inst.attrs.dims;
  std::vector<int64_t> kept;  // input dims that survive, in order: the result's dims
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(d);
  }
  if (inst.attrs.reduce_kind == ReduceKind::kSum) {
    return std::vector<ValueId>{b.BroadcastInDim(g, in.shape, kept), kNoValue};
  }
  // Max: share g equally among the positions that attain the maximum.
  ValueId is_max = b.Compare(x, b.BroadcastInDim(inst.result, in.shape, kept), ComparisonDirection::kEQ);
  ValueId mask = b.Select(is_max, Fill(b, 1.0, in), Fill(b, 0.0, in));
  TensorType out = TypeOf(b, inst.result);
  ValueId count = b.Max(b.ReduceSum(mask, dims), Fill(b, 1.0, out));
  ValueId share = b.BroadcastInDim(b.Div(g, count), in.shape, kept);
  return std::vector<ValueId>{b.Mul(mask, share), kNoValue};
}

// The gradient of one dot_general operand X ("self") given the other, Y: contract the
// result gradient G with Y over Y's free dims (at `other_free_pos` in G), batching over the
// batch dims, then transpose back to X's dimension order.
ValueId DotOperandGrad(FunctionBuilder& b, ValueId g, ValueId other, int64_t self_rank,
                       const std::vector<int64_t>& self_batch, const std::vector<int64_t>& self_contract,
                       const std::vector<int64_t>& other_batch, const std::vector<int64_t>& other_contract,
                       const std::vector<int64_t>& other_free_pos) {
  int64_t other_rank = TypeOf(b, other).rank();
  auto contains = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  std::vector<int64_t> self_free, other_free;
  for (int64_t d = 0; d < self_rank; ++d) {
    if (!contains(self_batch, d) && !contains(self_contract, d)) self_free.push_back(d);
  }
  for (int64_t d = 0; d < other_rank; ++d) {
    if (!contains(other_batch, d) && !contains(other_contract, d)) other_free.push_back(d);
  }
  DotDims dd;
  for (size_t i = 0; i < self_batch.size(); ++i) dd.lhs_batch.push_back(static_cast<int64_t>(i));
  dd.rhs_batch = other_batch;
  dd.lhs_contract = other_free_pos;
  dd.rhs_contract = other_free;
  ValueId prod = b.DotGeneral(g, other, std::move(dd));
  // prod dims: batch (self_batch order), self free (in order), Y's contracting dims in
  // increasing order — each the partner of a self contracting dim.
  std::vector<int64_t> source = self_batch;  // source[pos] = self dim held at prod position pos
  source.insert(source.end(), self_free.begin(), self_free.end());
  for (int64_t d = 0; d < other_rank; ++d) {
    for (size_t k = 0; k < other_contract.size(); ++k) {
      if (other_contract[k] == d) source.push_back(self_contract[k]);
    }
  }
  std::vector<int64_t> perm(static_cast<size_t>(self_rank));
  bool identity = true;
  for (size_t pos = 0; pos < source.size(); ++pos) {
    perm[source[pos]] = static_cast<int64_t>(pos);
    identity = identity && source[pos] == static_cast<int64_t>(pos);
  }
  return identity ? prod : b.Transpose(prod, std::move(perm));
}

Grads DotGeneralVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId lhs = inst.operands[0], rhs = inst.operands[1];
  const DotDims& d = inst.attrs.dot;
  int64_t lr = TypeOf(b, lhs).rank(), rr = TypeOf(b, rhs).rank();
  int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  int64_t n_lhs_free = lr - nb - static_cast<int64_t>(d.lhs_contract.size());
  int64_t n_rhs_free = rr - nb - static_cast<int64_t>(d.rhs_contract.size());
  std::vector<int64_t> lhs_free_pos(static_cast<size_t>(n_lhs_free)), rhs_free_pos(static_cast<size_t>(n_rhs_free));
  std::iota(lhs_free_pos.begin(), lhs_free_pos.end(), nb);
  std::iota(rhs_free_pos.begin(), rhs_free_pos.end(), nb + n_lhs_free);
  ValueId g_lhs = DotOperandGrad(b, g, rhs, lr, d.lhs_batch, d.lhs_contract, d.rhs_batch, d.rhs_contract, rhs_free_pos);
  ValueId g_rhs = DotOperandGrad(b, g, lhs, rr, d.rhs_batch, d.rhs_contract, d.lhs_batch, d.lhs_contract, lhs_free_pos);
  return std::vector<ValueId>{g_lhs, g_rhs};
}

// Indices clamped to [0, rows - 1], as gather reads them.
ValueId ClampIndices(FunctionBuilder& b, ValueId indices, int64_t rows) {
  TensorType t = TypeOf(b, indices);
  return b.Max(b.Min(indices, Fill(b, static_cast<double>(rows - 1), t)), Fill(b, 0.0, t));
}

Grads GatherVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  TensorType table = TypeOf(b, inst.operands[0]);
  ValueId indices = ClampIndices(b, inst.operands[1], table.shape[0]);
  return std::vector<ValueId>{b.ScatterAdd(Fill(b, 0.0, table), indices, g), kNoValue};
}

Grads ScatterVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId indices = inst.operands[1];
  TensorType table = TypeOf(b, inst.operands[0]);
  TensorType updates = TypeOf(b, inst.operands[2]);
  // Scatter skips out-of-range rows, so their updates get zero (gather would clamp).
  ValueId in_range = b.Compare(ClampIndices(b, indices, table.shape[0]), indices, ComparisonDirection::kEQ);
  std::vector<int64_t> index_dims(static_cast<size_t>(TypeOf(b, indices).rank()));
  std::iota(index_dims.begin(), index_dims.end(), 0);
  ValueId mask = b.BroadcastInDim(in_range, updates.shape, std::move(index_dims));
  ValueId rows = b.Select(mask, b.Gather(g, indices), Fill(b, 0.0, updates));
  return std::vector<ValueId>{g, kNoValue, rows};
}

// clamp(lo, x, hi): the gradient goes to whichever operand the result strictly equals: x where
// lo < x < hi, lo where x < lo < hi, hi where hi < max(x, lo); on ties (x == lo, ...) none.
Grads ClampVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId lo = inst.operands[0], x = inst.operands[1], hi = inst.operands[2];
  ValueId zero = Fill(b, 0.0, TypeOf(b, g));
  auto lt = [&](ValueId a, ValueId c) { return b.Compare(a, c, ComparisonDirection::kLT); };
  ValueId to_x = b.Select(b.And(lt(lo, x), lt(x, hi)), g, zero);
  ValueId to_lo = b.Select(b.And(lt(x, lo), lt(lo, hi)), g, zero);
  ValueId to_hi = b.Select(lt(hi, b.Max(x, lo)), g, zero);
  return std::vector<ValueId>{to_lo, to_x, to_hi};
}

// ---- attention ---------------------------------------------------------------------------

// FlashAttention's backward (attention.h): lse is recomputed from q and k (one pass, no
// T x S tensor), delta = Σ_e do o per query row, and the grad ops recompute P from lse.
Grads AttentionVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  ValueId q = inst.operands[0], k = inst.operands[1], v = inst.operands[2];
  const Attributes& a = inst.attrs;
  ValueId lse = b.Emit(Op::kAttentionLse, {q, k}, a);
  ValueId delta = b.ReduceSum(b.Mul(g, inst.result), {TypeOf(b, g).rank() - 1});
  return std::vector<ValueId>{b.Emit(Op::kAttentionGradQ, {q, k, v, lse, delta, g}, a),
                              b.Emit(Op::kAttentionGradK, {q, k, v, lse, delta, g}, a),
                              b.Emit(Op::kAttentionGradV, {q, k, lse, g}, a)};
}

// The ops attention's rule emits (its backward) are not differentiated again.
Grads NoSecondDerivativeVjp(FunctionBuilder& b, const Instruction& inst, ValueId g) {
  return absl::UnimplementedError(
      absl::StrCat(OpName(inst.op), " has no VJP: PCP does not differentiate fused attention twice"));
}

VjpEntry Rule(VjpRule rule) { return VjpEntry{rule, false}; }
VjpEntry NonDifferentiable() { return VjpEntry{nullptr, true}; }

// One case per op and no default, so the compiler (-Wswitch) flags an op added to
// PCP_OP_LIST without an entry here; such an op falls through to the empty entry, which the
// driver reports as Unimplemented.
VjpEntry MakeEntry(Op op) {
  switch (op) {
    case Op::kConstant: return NonDifferentiable();
    case Op::kIota: return NonDifferentiable();
    case Op::kCompare: return NonDifferentiable();
    case Op::kCeil: return NonDifferentiable();
    case Op::kAnd: return NonDifferentiable();
    case Op::kOr: return NonDifferentiable();
    case Op::kNot: return NonDifferentiable();
    case Op::kAdd: return Rule(AddVjp);
    case Op::kSubtract: return Rule(SubtractVjp);
    case Op::kMultiply: return Rule(MultiplyVjp);
    case Op::kDivide: return Rule(DivideVjp);
    case Op::kMaximum: return Rule(MaximumVjp);
    case Op::kMinimum: return Rule(MinimumVjp);
    case Op::kPower: return Rule(PowerVjp);
    case Op::kNegate: return Rule(NegateVjp);
    case Op::kExponential: return Rule(ExponentialVjp);
    case Op::kLog: return Rule(LogVjp);
    case Op::kSqrt: return Rule(SqrtVjp);
    case Op::kRsqrt: return Rule(RsqrtVjp);
    case Op::kTanh: return Rule(TanhVjp);
    case Op::kLogistic: return Rule(LogisticVjp);
    case Op::kAbs: return Rule(AbsVjp);
    case Op::kErf: return Rule(ErfVjp);
    case Op::kSelect: return Rule(SelectVjp);
    case Op::kClamp: return Rule(ClampVjp);
    case Op::kConvert: return Rule(ConvertVjp);
    case Op::kBroadcastInDim: return Rule(BroadcastInDimVjp);
    case Op::kReshape: return Rule(ReshapeVjp);
    case Op::kTranspose: return Rule(TransposeVjp);
    case Op::kSlice: return Rule(SliceVjp);
    case Op::kConcatenate: return Rule(ConcatenateVjp);
    case Op::kReduce: return Rule(ReduceVjp);
    case Op::kDotGeneral: return Rule(DotGeneralVjp);
    case Op::kGather: return Rule(GatherVjp);
    case Op::kScatter: return Rule(ScatterVjp);
    case Op::kAttention: return Rule(AttentionVjp);
    case Op::kAttentionLse: return Rule(NoSecondDerivativeVjp);
    case Op::kAttentionGradQ: return Rule(NoSecondDerivativeVjp);
    case Op::kAttentionGradK: return Rule(NoSecondDerivativeVjp);
    case Op::kAttentionGradV: return Rule(NoSecondDerivativeVjp);
  }
  return VjpEntry{};
}

struct VjpTable {
  VjpEntry entries[kNumOps];
  VjpTable() {
    for (int i = 0; i < kNumOps; ++i) entries[i] = MakeEntry(AllOps()[i]);
  }
};

}  // namespace

VjpEntry GetVjpEntry(Op op) {
  static const VjpTable* const table = new VjpTable();
  auto i = static_cast<size_t>(op);
  return i < static_cast<size_t>(kNumOps) ? table->entries[i] : VjpEntry{};
}

}  // namespace pcp
