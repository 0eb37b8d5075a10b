// RaiseAttention (attention.h): finds softmax(mask(scale · q kᵀ)) v written out in StableHLO,
// as PCP's GPT builds it and as exporters print it (torch-mlir: the products on [B·H, T, D]
// reshapes, k transposed before its product, the mask negated), and replaces the final product
// by one pcp.attention on the [B..., T, D] operands.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"

namespace pcp {
namespace {

// The function with, for each value, its defining instruction and its readers.
class Graph {
 public:
  explicit Graph(const Function& f) : f_(f), def_(static_cast<size_t>(f.num_values()), -1) {
    users_.resize(def_.size());
    for (size_t i = 0; i < f.instructions.size(); ++i) {
      const Instruction& inst = f.instructions[i];
      def_[static_cast<size_t>(inst.result)] = static_cast<int>(i);
      for (ValueId o : inst.operands) users_[static_cast<size_t>(o)].push_back(static_cast<int>(i));
    }
    for (ValueId r : f.results) users_[static_cast<size_t>(r)].push_back(-1);  // read outside
  }

  // The instruction defining v if it is `op`, else nullptr.
  const Instruction* Def(ValueId v, Op op) const {
    const int d = def_[static_cast<size_t>(v)];
    if (d < 0 || f_.instructions[static_cast<size_t>(d)].op != op) return nullptr;
    return &f_.instructions[static_cast<size_t>(d)];
  }
  const std::vector<int>& Users(ValueId v) const { return users_[static_cast<size_t>(v)]; }
  int IndexOf(const Instruction& inst) const { return static_cast<int>(&inst - f_.instructions.data()); }
  ValueId ResultOf(int index) const { return f_.instructions[static_cast<size_t>(index)].result; }
  const TensorType& type(ValueId v) const { return f_.type(v); }

  // The value of a splat f32 constant, or of a broadcast or an f32 convert of one.
  bool SplatValue(ValueId v, double* value) const {
    if (const Instruction* b = Def(v, Op::kBroadcastInDim)) v = b->operands[0];
    if (const Instruction* c = Def(v, Op::kConvert); c != nullptr && type(v).dtype == DType::kF32) {
      v = c->operands[0];
    }
    const Instruction* c = Def(v, Op::kConstant);
    const std::optional<Tensor> splat = c == nullptr ? std::nullopt : pcp::SplatValue(c->attrs.literal);
    if (!splat.has_value() || (splat->dtype() != DType::kF32 && splat->dtype() != DType::kF64)) return false;
    // The f32 the program computes with (an f64 constant is converted first).
    *value = splat->dtype() == DType::kF32 ? splat->data<float>()[0] : static_cast<float>(splat->data<double>()[0]);
    return true;
  }

 private:
  const Function& f_;
  std::vector<int> def_;
  std::vector<std::vector<int>> users_;
};

std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// An additive mask's masked entries: -inf, or at most this (exp of any score plus it is 0 in f32).
constexpr float kMaskedBelow = -1e30f;

Shape Leading(const Shape& s) { return Shape(s.begin(), s.end() - 2); }
Shape Trailing(const Shape& s) { return Shape(s.end() - 2, s.end()); }

// One decomposed attention found from its final product P v.
struct Match {
  ValueId q = kNoValue, k = kNoValue, v = kNoValue;  // of the softmax's rank: [B..., T|S, D|E]
  bool k_transposed = false;                         // k holds kᵀ [B..., D, S]
  double scale = 1.0;
  bool causal = false;
  std::vector<int> inner;  // instructions between q kᵀ and P v, whose values must stay inside
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g) {}

  // Whether the product `pv` is the end of a decomposed attention.
  bool Find(const Instruction& pv, Match* m) {
    if (pv.op != Op::kDotGeneral || g_.type(pv.result).dtype != DType::kF32) return false;
    const int64_t r3 = g_.type(pv.operands[0]).rank();
    if (r3 < 2 || g_.type(pv.operands[1]).rank() != r3 || !Dims(pv, r3, r3 - 1, r3 - 2)) return false;
    // P = e / broadcast(reduce_sum(e)), e = exp(z - broadcast(reduce_max(z))), in the rank r
    // of the softmax (the products may work on reshapes merging its leading dimensions).
    const ValueId p = Unreshaped(pv.operands[0], m);
    const int64_t r = g_.type(p).rank();
    if (r < 2) return false;
    batch_ = Leading(g_.type(p).shape);
    const Instruction* div = Take(p, Op::kDivide, m);
    if (div == nullptr) return false;
    const ValueId e = div->operands[0];
    if (!RowReduction(div->operands[1], e, ReduceKind::kSum, r, m)) return false;
    const Instruction* exp = Take(e, Op::kExponential, m);
    const Instruction* sub = exp == nullptr ? nullptr : Take(exp->operands[0], Op::kSubtract, m);
    if (sub == nullptr) return false;
    ValueId z = sub->operands[0];
    if (!RowReduction(sub->operands[1], z, ReduceKind::kMax, r, m)) return false;
    // z = select(j <= i, s, -inf), select(j > i, -inf, s) or s.
    if (const Instruction* sel = Take(z, Op::kSelect, m)) {
      bool negated = false;
      if (!Causal(sel->operands[0], r, &negated)) return false;
      const ValueId scores = sel->operands[negated ? 2 : 1];
      double fill = 0;
      if (!g_.SplatValue(sel->operands[negated ? 1 : 2], &fill) || fill != -std::numeric_limits<double>::infinity()) {
        return false;
      }
      m->causal = true;
      z = scores;
    } else if (const Instruction* add = Take(z, Op::kAdd, m)) {
      // z = s + mask, the mask 0 where j <= i and -inf (or below kMaskedBelow) elsewhere.
      const bool first = AdditiveCausal(add->operands[0], r);
      if (!first && !AdditiveCausal(add->operands[1], r)) return false;
      m->causal = true;
      z = add->operands[first ? 1 : 0];
    }
    // s = scale * (q kᵀ), (q kᵀ) / c or q kᵀ.
    if (const Instruction* mul = Take(z, Op::kMultiply, m)) {
      const bool first = g_.SplatValue(mul->operands[0], &m->scale);
      if (!first && !g_.SplatValue(mul->operands[1], &m->scale)) return false;
      z = mul->operands[first ? 1 : 0];
    } else if (const Instruction* d = Take(z, Op::kDivide, m)) {
      double c = 0;
      if (!g_.SplatValue(d->operands[1], &c) || c == 0) return false;
      m->scale = 1.0 / c;
      z = d->operands[0];
    }
    const Instruction* qk = Take(Unreshaped(z, m), Op::kDotGeneral, m);
    if (qk == nullptr) return false;
    const int64_t rq = g_.type(qk->operands[0]).rank();
    if (rq < 2 || g_.type(qk->operands[1]).rank() != rq) return false;
    if (Dims(*qk, rq, rq - 1, rq - 2)) {
      m->k_transposed = true;
    } else if (!Dims(*qk, rq, rq - 1, rq - 1)) {
      return false;
    }
    m->q = Batched(qk->operands[0]);
    m->k = Batched(qk->operands[1]);
    m->v = Batched(pv.operands[1]);
    if (m->q == kNoValue || m->k == kNoValue || m->v == kNoValue) return false;
    if (m->k_transposed) {
      // kᵀ = transpose(k) swapping the last two dimensions: k itself.
      std::vector<int64_t> swap = Range(r);
      std::swap(swap[static_cast<size_t>(r - 2)], swap[static_cast<size_t>(r - 1)]);
      if (const Instruction* t = g_.Def(m->k, Op::kTranspose); t != nullptr && t->attrs.dims == swap) {
        m->k = t->operands[0];
        m->k_transposed = false;
      }
    }
    return Shapes(*m, p) && Contained(*m, pv);
  }

 private:
  // The definition of v if it is `op`, recorded as part of the match.
  const Instruction* Take(ValueId v, Op op, Match* m) {
    const Instruction* inst = g_.Def(v, op);
    if (inst != nullptr) m->inner.push_back(g_.IndexOf(*inst));
    return inst;
  }

  // v, or what v reshapes where the reshape only merges (or splits) leading dimensions.
  const Instruction* LeadingReshape(ValueId v) const {
    const Instruction* re = g_.Def(v, Op::kReshape);
    if (re == nullptr) return nullptr;
    const Shape& from = g_.type(re->operands[0]).shape;
    const Shape& to = g_.type(v).shape;
    if (from.size() < 2 || to.size() < 2 || Trailing(from) != Trailing(to)) return nullptr;
    return re;
  }
  ValueId Unreshaped(ValueId v, Match* m) {
    const Instruction* re = LeadingReshape(v);
    if (re == nullptr) return v;
    m->inner.push_back(g_.IndexOf(*re));
    return re->operands[0];
  }
  // An operand of a product as a value with the softmax's leading dimensions, or kNoValue.
  ValueId Batched(ValueId v) const {
    if (Leading(g_.type(v).shape) == batch_) return v;
    const Instruction* re = LeadingReshape(v);
    if (re != nullptr && Leading(g_.type(re->operands[0]).shape) == batch_) return re->operands[0];
    return kNoValue;
  }

  // dot_general batching the leading rank - 2 dimensions on both sides, contracting lhs `lc`
  // with rhs `rc`.
  static bool Dims(const Instruction& dot, int64_t rank, int64_t lc, int64_t rc) {
    const DotDims& d = dot.attrs.dot;
    const std::vector<int64_t> batch = Range(rank - 2);
    return d.lhs_batch == batch && d.rhs_batch == batch && d.lhs_contract == std::vector<int64_t>{lc} &&
           d.rhs_contract == std::vector<int64_t>{rc};
  }

  // `row` = broadcast(reduce(x, last dimension)) back over x's rows.
  bool RowReduction(ValueId row, ValueId x, ReduceKind kind, int64_t r, Match* m) {
    const Instruction* b = Take(row, Op::kBroadcastInDim, m);
    if (b == nullptr || b->attrs.dims != Range(r - 1)) return false;
    const Instruction* red = Take(b->operands[0], Op::kReduce, m);
    return red != nullptr && red->operands[0] == x && red->attrs.reduce_kind == kind &&
           red->attrs.dims == std::vector<int64_t>{r - 1};
  }

  // pred = broadcast(compare(iota, iota)) over the last two dimensions, true where key j <=
  // query i; or its negation (*negated: true where j > i), as not(compare) or the opposite
  // comparison; or the same as a constant. The mask is not part of the match: other
  // layers may share it (CSE), and it is cheap.
  bool Causal(ValueId pred, int64_t r, bool* negated) const {
    const Instruction* b = g_.Def(pred, Op::kBroadcastInDim);
    if (b == nullptr || b->attrs.dims != std::vector<int64_t>{r - 2, r - 1}) return false;
    ValueId c = b->operands[0];
    *negated = false;
    if (const Instruction* n = g_.Def(c, Op::kNot)) {
      *negated = true;
      c = n->operands[0];
    }
    if (const Instruction* k = g_.Def(c, Op::kConstant)) return CausalConstant(k->attrs.literal, negated);
    const Instruction* cmp = g_.Def(c, Op::kCompare);
    if (cmp == nullptr) return false;
    auto iota_dim = [&](ValueId v) -> int64_t {
      const Instruction* iota = g_.Def(v, Op::kIota);
      return iota == nullptr ? -1 : iota->attrs.dimension;
    };
    // Written as cols ? rows: j <= i is LE, j > i is GT (rows ? cols: GE and LT).
    ComparisonDirection dir = cmp->attrs.comparison;
    const int64_t a = iota_dim(cmp->operands[0]), d = iota_dim(cmp->operands[1]);
    if (a == 0 && d == 1) {
      switch (dir) {
        case ComparisonDirection::kGE: dir = ComparisonDirection::kLE; break;
        case ComparisonDirection::kLT: dir = ComparisonDirection::kGT; break;
        default: return false;
      }
    } else if (a != 1 || d != 0) {
      return false;
    }
    if (dir == ComparisonDirection::kGT) {
      *negated = !*negated;
    } else if (dir != ComparisonDirection::kLE) {
      return false;
    }
    return true;
  }

  // Whether `ok(element, j <= i)` holds for every element of the rank-2 constant `mask` of
  // dtype T (element [i, j]: query row i, key column j).
  template <typename T, typename Ok>
  static bool EveryCell(const Tensor& mask, DType dtype, Ok ok) {
    if (mask.dtype() != dtype || mask.rank() != 2) return false;
    const int64_t rows = mask.shape()[0], cols = mask.shape()[1];
    const T* x = mask.data<T>();
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        if (!ok(x[i * cols + j], j <= i)) return false;
      }
    }
    return true;
  }

  // The same mask folded to a constant (an import's FoldConstants): i1 [T, S] that is j <= i
  // everywhere, or (flipping *negated) j > i.
  static bool CausalConstant(const Tensor& mask, bool* negated) {
    auto keeps = [](uint8_t v, bool allowed) { return (v != 0) == allowed; };
    auto drops = [](uint8_t v, bool allowed) { return (v != 0) != allowed; };
    if (EveryCell<uint8_t>(mask, DType::kBool, keeps)) return true;
    if (!EveryCell<uint8_t>(mask, DType::kBool, drops)) return false;
    *negated = !*negated;
    return true;
  }

  // v = broadcast(M) over the last two dimensions (or M itself), M a constant [T, S] that is 0
  // where key j <= query i and -inf or below kMaskedBelow (Hugging Face's finfo.min) elsewhere:
  // exp of such a score is 0 in f32, as a masked one.
  bool AdditiveCausal(ValueId v, int64_t r) const {
    if (const Instruction* b = g_.Def(v, Op::kBroadcastInDim)) {
      if (b->attrs.dims != std::vector<int64_t>{r - 2, r - 1}) return false;
      v = b->operands[0];
    }
    const Instruction* c = g_.Def(v, Op::kConstant);
    return c != nullptr && EveryCell<float>(c->attrs.literal, DType::kF32, [](float e, bool allowed) {
             return allowed ? e == 0.0f : e <= kMaskedBelow;
           });
  }

  // q [B..., T, D], k [B..., S, D] (or kᵀ), v [B..., S, E] against P [B..., T, S].
  bool Shapes(const Match& m, ValueId p) const {
    const Shape& ps = g_.type(p).shape;
    const int64_t r = static_cast<int64_t>(ps.size());
    const Shape& q = g_.type(m.q).shape;
    const Shape& k = g_.type(m.k).shape;
    const Shape& v = g_.type(m.v).shape;
    if (static_cast<int64_t>(q.size()) != r || static_cast<int64_t>(k.size()) != r ||
        static_cast<int64_t>(v.size()) != r) {
      return false;
    }
    const int64_t T = ps[r - 2], S = ps[r - 1], D = q[r - 1];
    const int64_t k_rows = k[m.k_transposed ? r - 1 : r - 2], k_cols = k[m.k_transposed ? r - 2 : r - 1];
    for (ValueId x : {m.q, m.k, m.v}) {
      if (g_.type(x).dtype != DType::kF32) return false;
    }
    return q[r - 2] == T && k_rows == S && k_cols == D && v[r - 2] == S;
  }

  // Every value the match computes (but P v) is read only inside it.
  bool Contained(const Match& m, const Instruction& pv) const {
    std::vector<int> inside = m.inner;
    inside.push_back(g_.IndexOf(pv));
    for (int i : m.inner) {
      for (int user : g_.Users(g_.ResultOf(i))) {
        if (std::find(inside.begin(), inside.end(), user) == inside.end()) return false;
      }
    }
    return true;
  }

  const Graph& g_;
  Shape batch_;  // the softmax's leading dimensions
};

}  // namespace

absl::StatusOr<int> RaiseAttention(Function& function) {
  PCP_RETURN_IF_ERROR(Verify(function), _ << "RaiseAttention: input");
  const Function& f = function;
  const Graph graph(f);
  std::vector<const Match*> match_at(f.instructions.size(), nullptr);
  std::vector<Match> found;
  found.reserve(f.instructions.size());
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    Match m;
    if (Matcher(graph).Find(f.instructions[i], &m)) {
      found.push_back(std::move(m));
      match_at[i] = &found.back();
    }
  }
  if (found.empty()) return 0;
  // Rebuilt with each final product replaced by the attention (on k transposed back where the
  // model transposed it, reshaped to the product's shape where it worked on a reshape); the
  // softmax's values are then dead.
  auto raise = [&](FunctionBuilder& b, const Instruction& inst, const std::vector<ValueId>& map) -> ValueId {
    const Match* m = match_at[static_cast<size_t>(&inst - f.instructions.data())];
    if (m == nullptr) return kNoValue;
    auto at = [&](ValueId v) { return map[static_cast<size_t>(v)]; };
    ValueId k = at(m->k);
    if (m->k_transposed) {
      std::vector<int64_t> swap = Range(b.type(k).rank());
      std::swap(swap[swap.size() - 2], swap[swap.size() - 1]);
      k = b.Transpose(k, swap);
    }
    Attributes a;
    a.scale = m->scale;
    a.causal = m->causal;
    ValueId r = b.Emit(Op::kAttention, {at(m->q), k, at(m->v)}, a);
    if (b.type(r).shape != f.type(inst.result).shape) r = b.Reshape(r, f.type(inst.result).shape);
    return r;
  };
  PCP_ASSIGN_OR_RETURN(Function g, RebuildFunction(f, raise), _ << "RaiseAttention");
  PCP_RETURN_IF_ERROR(EliminateDeadCode(g), _ << "RaiseAttention");
  PCP_RETURN_IF_ERROR(Verify(g), _ << "RaiseAttention: output");
  function = std::move(g);
  return static_cast<int>(found.size());
}

}  // namespace pcp
