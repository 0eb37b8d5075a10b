#include "pcp/autodiff/type_inference.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace pcp {
namespace {

absl::Status Error(Op op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(OpName(op), ": ", what));
}

std::string Dims(const std::vector<int64_t>& v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }

// Dimensions must be distinct, in [0, rank) and (if `increasing`) strictly increasing.
absl::Status CheckDimList(Op op, absl::string_view what, const std::vector<int64_t>& dims, int64_t rank,
                          bool increasing) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d < 0 || d >= rank) {
      return Error(op, absl::StrCat(what, " ", Dims(dims), " has dimension ", d, " outside [0, ", rank, ")"));
    }
    if (seen[d]) return Error(op, absl::StrCat(what, " ", Dims(dims), " repeats dimension ", d));
    if (increasing && i > 0 && dims[i - 1] >= d) {
      return Error(op, absl::StrCat(what, " ", Dims(dims), " must be strictly increasing"));
    }
    seen[d] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> InferElementwise(Op op, absl::Span<const TensorType> in, const TensorType* declared) {
  if (op == Op::kSelect) {
    if (in[0].dtype != DType::kBool) return Error(op, "predicate must be i1");
    if (in[1] != in[2]) {
      return Error(op, absl::StrCat("branches differ: ", in[1].ToString(), " vs ", in[2].ToString()));
    }
    if (in[0].shape != in[1].shape) {
      return Error(op, absl::StrCat("predicate ", in[0].ToString(), " does not match ", in[1].ToString()));
    }
    return in[1];
  }
  if (op == Op::kConvert) {
    if (declared == nullptr) return Error(op, "needs a declared result type");
    if (declared->shape != in[0].shape) {
      return Error(op, absl::StrCat("cannot change shape ", in[0].ToString(), " -> ", declared->ToString()));
    }
    return *declared;
  }
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i] != in[0]) {
      return Error(op, absl::StrCat("operand types differ: ", in[0].ToString(), " vs ", in[i].ToString()));
    }
  }
  DType d = in[0].dtype;
  if (op == Op::kCompare) return TensorType{DType::kBool, in[0].shape};
  if (IsFloatOnly(op) && !IsFloat(d)) {
    return Error(op, absl::StrCat("needs a floating-point operand, got ", in[0].ToString()));
  }
  if (IsLogical(op)) {
    if (IsFloat(d)) return Error(op, absl::StrCat("needs an i1 or integer operand, got ", in[0].ToString()));
    return in[0];
  }
  if (d == DType::kBool) return Error(op, "is not defined on i1");
  return in[0];
}

absl::StatusOr<TensorType> InferLayout(Op op, absl::Span<const TensorType> in, const Attributes& a,
                                       const TensorType* declared) {
  switch (op) {
    case Op::kBroadcastInDim: {
      if (declared == nullptr) return Error(op, "needs a declared result type");
      if (declared->dtype != in[0].dtype) return Error(op, "cannot change the element type");
      if (static_cast<int64_t>(a.dims.size()) != in[0].rank()) {
        return Error(op, absl::StrCat("broadcast_dimensions ", Dims(a.dims),
                                      " must have one entry per operand dimension (", in[0].rank(), ")"));
      }
      if (auto s = CheckDimList(op, "broadcast_dimensions", a.dims, declared->rank(), true); !s.ok()) return s;
      for (size_t i = 0; i < a.dims.size(); ++i) {
        int64_t from = in[0].shape[i], to = declared->shape[a.dims[i]];
        if (from != 1 && from != to) {
          return Error(op, absl::StrCat("operand dimension ", i, " (", from, ") cannot broadcast to ", to));
        }
      }
      return *declared;
    }
    case Op::kReshape:
      if (declared == nullptr) return Error(op, "needs a declared result type");
      if (declared->dtype != in[0].dtype || declared->num_elements() != in[0].num_elements()) {
        return Error(op, absl::StrCat("cannot reshape ", in[0].ToString(), " to ", declared->ToString()));
      }
      return *declared;
    case Op::kTranspose: {
      if (static_cast<int64_t>(a.dims.size()) != in[0].rank()) {
        return Error(op, absl::StrCat("permutation ", Dims(a.dims), " does not match rank ", in[0].rank()));
      }
      if (auto s = CheckDimList(op, "permutation", a.dims, in[0].rank(), false); !s.ok()) return s;
      TensorType t{in[0].dtype, {}};
      for (int64_t p : a.dims) t.shape.push_back(in[0].shape[p]);
      return t;
    }
    case Op::kSlice: {
      int64_t r = in[0].rank();
      if (static_cast<int64_t>(a.start.size()) != r || static_cast<int64_t>(a.limit.size()) != r ||
          static_cast<int64_t>(a.stride.size()) != r) {
        return Error(op, absl::StrCat("start/limit/stride need ", r, " entries each"));
      }
      TensorType t{in[0].dtype, {}};
      for (int64_t i = 0; i < r; ++i) {
        if (a.start[i] < 0 || a.start[i] > a.limit[i] || a.limit[i] > in[0].shape[i] || a.stride[i] < 1) {
          return Error(op, absl::StrCat("bad range in dimension ", i, ": start ", a.start[i], ", limit ", a.limit[i],
                                        ", stride ", a.stride[i], ", size ", in[0].shape[i]));
        }
        t.shape.push_back((a.limit[i] - a.start[i] + a.stride[i] - 1) / a.stride[i]);
      }
      return t;
    }
    case Op::kConcatenate: {
      if (in.empty()) return Error(op, "needs at least one operand");
      TensorType t = in[0];
      if (a.dimension < 0 || a.dimension >= t.rank()) {
        return Error(op, absl::StrCat("dimension ", a.dimension, " outside [0, ", t.rank(), ")"));
      }
      for (size_t i = 1; i < in.size(); ++i) {
        bool ok = in[i].dtype == t.dtype && in[i].rank() == t.rank();
        for (int64_t d = 0; ok && d < t.rank(); ++d) {
          ok = d == a.dimension || in[i].shape[d] == in[0].shape[d];
        }
        if (!ok) {
          return Error(op, absl::StrCat("operand ", i, " ", in[i].ToString(), " does not fit ", in[0].ToString(),
                                        " along dimension ", a.dimension));
        }
        t.shape[a.dimension] += in[i].shape[a.dimension];
      }
      return t;
    }
    default: return Error(op, "not a layout op");
  }
}

absl::StatusOr<TensorType> InferDot(Op op, const TensorType& l, const TensorType& r, const DotDims& d) {
  if (l.dtype != r.dtype || !IsFloat(l.dtype)) {
    return Error(op, absl::StrCat("needs equal floating-point operands, got ", l.ToString(), " and ", r.ToString()));
  }
  if (d.lhs_batch.size() != d.rhs_batch.size() || d.lhs_contract.size() != d.rhs_contract.size()) {
    return Error(op, "lhs and rhs need as many batching and as many contracting dimensions");
  }
  std::vector<int64_t> lhs_used = d.lhs_batch, rhs_used = d.rhs_batch;
  lhs_used.insert(lhs_used.end(), d.lhs_contract.begin(), d.lhs_contract.end());
  rhs_used.insert(rhs_used.end(), d.rhs_contract.begin(), d.rhs_contract.end());
  if (auto s = CheckDimList(op, "lhs batching+contracting dimensions", lhs_used, l.rank(), false); !s.ok()) return s;
  if (auto s = CheckDimList(op, "rhs batching+contracting dimensions", rhs_used, r.rank(), false); !s.ok()) return s;
  TensorType t{l.dtype, {}};
  for (size_t i = 0; i < d.lhs_batch.size(); ++i) {
    if (l.shape[d.lhs_batch[i]] != r.shape[d.rhs_batch[i]]) {
      return Error(op, absl::StrCat("batching dimension sizes differ: ", l.shape[d.lhs_batch[i]], " vs ",
                                    r.shape[d.rhs_batch[i]]));
    }
    t.shape.push_back(l.shape[d.lhs_batch[i]]);
  }
  for (size_t i = 0; i < d.lhs_contract.size(); ++i) {
    if (l.shape[d.lhs_contract[i]] != r.shape[d.rhs_contract[i]]) {
      return Error(op, absl::StrCat("contracting dimension sizes differ: ", l.shape[d.lhs_contract[i]], " vs ",
                                    r.shape[d.rhs_contract[i]]));
    }
  }
  for (int64_t i = 0; i < l.rank(); ++i) {
    if (std::find(lhs_used.begin(), lhs_used.end(), i) == lhs_used.end()) t.shape.push_back(l.shape[i]);
  }
  for (int64_t i = 0; i < r.rank(); ++i) {
    if (std::find(rhs_used.begin(), rhs_used.end(), i) == rhs_used.end()) t.shape.push_back(r.shape[i]);
  }
  return t;
}

absl::StatusOr<TensorType> InferIndexing(Op op, absl::Span<const TensorType> in) {
  const TensorType& table = in[0];
  const TensorType& indices = in[1];
  if (table.rank() < 1) return Error(op, "operand must have rank >= 1");
  if (!IsInteger(indices.dtype)) return Error(op, absl::StrCat("indices must be i32 or i64, got ", indices.ToString()));
  TensorType rows{table.dtype, indices.shape};
  rows.shape.insert(rows.shape.end(), table.shape.begin() + 1, table.shape.end());
  if (op == Op::kGather) return rows;
  if (in[2] != rows) {
    return Error(op, absl::StrCat("updates must be ", rows.ToString(), ", got ", in[2].ToString()));
  }
  return table;
}

}  // namespace

// pcp.attention* (attention.h): q [..., T, D], k [..., S, D], v [..., S, E], lse and delta
// [..., T], do [..., T, E], all f32 with the same leading (batch) dimensions.
absl::StatusOr<TensorType> InferAttention(Op op, absl::Span<const TensorType> in) {
  for (const TensorType& t : in) {
    if (t.dtype != DType::kF32) return Error(op, absl::StrCat("needs f32 operands, got ", t.ToString()));
  }
  const TensorType& q = in[0];
  const TensorType& k = in[1];
  if (q.rank() < 2 || k.rank() != q.rank()) {
    return Error(op,
                 absl::StrCat("q and k need the same rank of at least 2, got ", q.ToString(), " and ", k.ToString()));
  }
  const int64_t r = q.rank();
  const Shape batch(q.shape.begin(), q.shape.end() - 2);
  const int64_t T = q.shape[r - 2], D = q.shape[r - 1], S = k.shape[r - 2];
  auto expect = [&](size_t i, absl::string_view name, Shape tail) -> absl::Status {
    Shape want = batch;
    want.insert(want.end(), tail.begin(), tail.end());
    if (in[i].shape != want) {
      return Error(op, absl::StrCat(name, " is ", in[i].ToString(), ", expected ",
                                    TensorType{DType::kF32, want}.ToString()));
    }
    return absl::OkStatus();
  };
  if (auto s = expect(1, "k", {S, D}); !s.ok()) return s;
  auto of = [&](Shape tail) {
    Shape shape = batch;
    shape.insert(shape.end(), tail.begin(), tail.end());
    return TensorType{DType::kF32, shape};
  };
  if (op == Op::kAttentionLse) return of({T});
  // grad_v(q, k, lse, do); the others have v third.
  const bool has_v = op != Op::kAttentionGradV;
  const TensorType& values = in[has_v ? 2 : 3];  // v, or do for grad_v
  if (values.rank() != r) return Error(op, absl::StrCat(has_v ? "v" : "do", " must have rank ", r));
  const int64_t E = values.shape[r - 1];
  if (has_v) {
    if (auto s = expect(2, "v", {S, E}); !s.ok()) return s;
  }
  switch (op) {
    case Op::kAttention: return of({T, E});
    case Op::kAttentionGradV:
      if (auto s = expect(2, "lse", {T}); !s.ok()) return s;
      if (auto s = expect(3, "do", {T, E}); !s.ok()) return s;
      return of({S, E});
    default:  // grad_q, grad_k (q, k, v, lse, delta, do)
      if (auto s = expect(3, "lse", {T}); !s.ok()) return s;
      if (auto s = expect(4, "delta", {T}); !s.ok()) return s;
      if (auto s = expect(5, "do", {T, E}); !s.ok()) return s;
      return op == Op::kAttentionGradQ ? of({T, D}) : of({S, D});
  }
}

bool ResultTypeIsDeclared(Op op) {
  return op == Op::kConstant || op == Op::kIota || op == Op::kReshape || op == Op::kConvert ||
         op == Op::kBroadcastInDim;
}

absl::StatusOr<TensorType> InferResultType(Op op, absl::Span<const TensorType> in, const Attributes& a,
                                           const TensorType* declared) {
  int arity = OpArity(op);
  if (arity != kVariadic && static_cast<int>(in.size()) != arity) {
    return Error(op, absl::StrCat("expects ", arity, " operands, got ", in.size()));
  }
  absl::StatusOr<TensorType> t;
  switch (GetOpCategory(op)) {
    case OpCategory::kSource:
      if (declared == nullptr) return Error(op, "needs a declared result type");
      if (op == Op::kConstant) {
        if (!a.literal.valid() || a.literal.dtype() != declared->dtype || a.literal.shape() != declared->shape) {
          return Error(op, absl::StrCat("value does not match the result type ", declared->ToString()));
        }
      } else if (declared->rank() == 0 || a.dimension < 0 || a.dimension >= declared->rank()) {
        return Error(op, absl::StrCat("iota_dimension ", a.dimension, " outside the result's rank"));
      } else if (declared->dtype == DType::kBool) {
        return Error(op, "is not defined on i1");
      }
      t = *declared;
      break;
    case OpCategory::kElementwise: t = InferElementwise(op, in, declared); break;
    case OpCategory::kLayout: t = InferLayout(op, in, a, declared); break;
    case OpCategory::kReduction: {
      if (in[1].rank() != 0 || in[1].dtype != in[0].dtype) {
        return Error(op, absl::StrCat("init value must be a scalar of the input's type, got ", in[1].ToString()));
      }
      if (in[0].dtype == DType::kBool) return Error(op, "is not defined on i1");
      if (auto s = CheckDimList(op, "dimensions", a.dims, in[0].rank(), true); !s.ok()) return s;
      TensorType r{in[0].dtype, {}};
      for (int64_t i = 0; i < in[0].rank(); ++i) {
        if (std::find(a.dims.begin(), a.dims.end(), i) == a.dims.end()) r.shape.push_back(in[0].shape[i]);
      }
      t = r;
      break;
    }
    case OpCategory::kContraction: t = InferDot(op, in[0], in[1], a.dot); break;
    case OpCategory::kIndexing: t = InferIndexing(op, in); break;
    case OpCategory::kAttention: t = InferAttention(op, in); break;
  }
  if (!t.ok()) return t;
  if (declared != nullptr && *declared != *t) {
    return Error(op,
                 absl::StrCat("declared result type ", declared->ToString(), " but the operands give ", t->ToString()));
  }
  return t;
}

}  // namespace pcp
