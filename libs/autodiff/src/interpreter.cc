#include "pcp/autodiff/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "attention_eval.h"
#include "pcp/autodiff/type_inference.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"
#include "pcp/tensor/convert.h"

// Every op is written as a loop over a row-major multi-index. Layout ops only move bytes, so
// they work for every dtype (f16/bf16 included); ops that compute support f32, f64, i32, i64
// and i1 (where type inference allows it) and answer Unimplemented for f16/bf16. f64 is
// computed in double throughout (dot_general excepted: f32 only), so constant folding of
// imported f64 subgraphs is exact before LowerF64ToF32 (passes.h) retypes what is left.
//
// Conventions that StableHLO leaves to the implementation, chosen to be free of undefined
// behaviour (the interpreter must never crash on any input it accepts):
//   - integer add/subtract/multiply/negate/abs wrap around (two's complement);
//   - integer x / 0 = -1 and INT_MIN / -1 = INT_MIN (XLA's choice);
//   - maximum/minimum on floats propagate NaN and order -0 < +0 (IEEE 754-2019);
//   - float -> integer convert truncates, maps NaN to 0 and saturates out-of-range values;
//     i64 -> i32 keeps the low 32 bits; anything -> i1 is x != 0 (NaN -> true).
// f32 elementwise math is evaluated in double and rounded once: for + - * / and sqrt this is
// exactly the f32 IEEE result, and for exp/log/tanh/... it is closer than the f32 libm.

namespace pcp {
namespace {

// ---- Element access and dispatch -------------------------------------------------------

// i1 is stored one byte per element; it is loaded as bool so templates can treat it as a type.
template <typename T>
T Load(const Tensor& t, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<const uint8_t*>(t.raw_data())[i] != 0;
  } else {
    return static_cast<const T*>(t.raw_data())[i];
  }
}

template <typename T>
void Store(Tensor& t, int64_t i, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    static_cast<uint8_t*>(t.raw_data())[i] = v ? 1 : 0;
  } else {
    static_cast<T*>(t.raw_data())[i] = v;
  }
}

absl::Status NotComputed(Op op, DType d) {
  return absl::UnimplementedError(
      absl::StrCat(OpName(op), ": the reference interpreter does not compute on ", MlirName(d)));
}

absl::Status NotDefined(Op op, DType d) {
  return absl::InvalidArgumentError(absl::StrCat(OpName(op), ": is not defined on ", MlirName(d)));
}

// Calls fn(T{}) where T is the C++ element type of `d` (bool for i1).
template <typename Fn>
absl::Status Dispatch(Op op, DType d, Fn&& fn) {
  switch (d) {
    case DType::kF32: return fn(float{});
    case DType::kF64: return fn(double{});
    case DType::kI32: return fn(int32_t{});
    case DType::kI64: return fn(int64_t{});
    case DType::kBool: return fn(bool{});
    default: return NotComputed(op, d);
  }
}

// Dispatch for an op not defined on i1: NotDefined there, fn called with numeric types only.
template <typename Fn>
absl::Status DispatchNumeric(Op op, DType d, Fn&& fn) {
  return Dispatch(op, d, [&](auto tag) -> absl::Status {
    if constexpr (std::is_same_v<decltype(tag), bool>) {
      return NotDefined(op, d);
    } else {
      return fn(tag);
    }
  });
}

// ---- Multi-indices ----------------------------------------------------------------------

// Walks every multi-index of `shape` in row-major order:
//   for (IndexWalker w(shape); !w.done(); w.Next()) use(w.index());
class IndexWalker {
 public:
  explicit IndexWalker(const Shape& shape) : shape_(shape), index_(shape.size(), 0), done_(NumElements(shape) == 0) {}
  bool done() const { return done_; }
  const std::vector<int64_t>& index() const { return index_; }
  void Next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      if (++index_[d] < shape_[d]) return;
      index_[d] = 0;
    }
    done_ = true;
  }

 private:
  const Shape& shape_;
  std::vector<int64_t> index_;
  bool done_;
};

int64_t Offset(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
  return offset;
}

// result[r] = source[base + sum_d r[d] * source_strides[d]] for every result index r: the one
// primitive behind broadcast_in_dim, transpose and slice. Moves bytes, so any dtype works.
Tensor StridedCopy(const Tensor& source, const TensorType& result_type, int64_t base,
                   const std::vector<int64_t>& source_strides) {
  Tensor result(result_type.dtype, result_type.shape);
  const int64_t size = SizeOf(result_type.dtype);
  const auto* src = static_cast<const uint8_t*>(source.raw_data());
  auto* dst = static_cast<uint8_t*>(result.raw_data());
  int64_t k = 0;
  for (IndexWalker w(result_type.shape); !w.done(); w.Next(), ++k) {
    std::memcpy(dst + k * size, src + (base + Offset(w.index(), source_strides)) * size, size);
  }
  return result;
}

// ---- Elementwise ------------------------------------------------------------------------

double FloatMaximum(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;  // max(-0, +0) = +0
  return a > b ? a : b;
}

double FloatMinimum(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;  // min(-0, +0) = -0
  return a < b ? a : b;
}

using FloatFn = double (*)(double, double);  // unary ops ignore the second argument

FloatFn FloatKernel(Op op) {
  switch (op) {
    case Op::kAdd: return [](double a, double b) { return a + b; };
    case Op::kSubtract: return [](double a, double b) { return a - b; };
    case Op::kMultiply: return [](double a, double b) { return a * b; };
    case Op::kDivide: return [](double a, double b) { return a / b; };
    case Op::kMaximum: return FloatMaximum;
    case Op::kMinimum: return FloatMinimum;
    case Op::kPower: return [](double a, double b) { return std::pow(a, b); };
    case Op::kNegate: return [](double a, double) { return -a; };
    case Op::kExponential: return [](double a, double) { return std::exp(a); };
    case Op::kLog: return [](double a, double) { return std::log(a); };
    case Op::kSqrt: return [](double a, double) { return std::sqrt(a); };
    case Op::kRsqrt: return [](double a, double) { return 1.0 / std::sqrt(a); };
    case Op::kTanh: return [](double a, double) { return std::tanh(a); };
    case Op::kLogistic: return [](double a, double) { return 1.0 / (1.0 + std::exp(-a)); };
    case Op::kAbs: return [](double a, double) { return std::fabs(a); };
    case Op::kCeil: return [](double a, double) { return std::ceil(a); };
    case Op::kErf: return [](double a, double) { return std::erf(a); };
    default: return nullptr;
  }
}

// Integer arithmetic through the unsigned type, so overflow wraps instead of being UB.
template <typename T>
absl::StatusOr<T> IntegerOp(Op op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const U ua = static_cast<U>(a), ub = static_cast<U>(b);
  switch (op) {
    case Op::kAdd: return static_cast<T>(ua + ub);
    case Op::kSubtract: return static_cast<T>(ua - ub);
    case Op::kMultiply: return static_cast<T>(ua * ub);
    case Op::kDivide:
      if (b == 0) return T{-1};
      if (a == std::numeric_limits<T>::min() && b == -1) return a;
      return static_cast<T>(a / b);
    case Op::kMaximum: return a > b ? a : b;
    case Op::kMinimum: return a < b ? a : b;
    case Op::kNegate: return static_cast<T>(U{0} - ua);
    case Op::kAbs: return a < 0 ? static_cast<T>(U{0} - ua) : a;
    case Op::kAnd: return static_cast<T>(ua & ub);
    case Op::kOr: return static_cast<T>(ua | ub);
    case Op::kNot: return static_cast<T>(~ua);
    default: return NotDefined(op, std::is_same_v<T, int32_t> ? DType::kI32 : DType::kI64);
  }
}

// Arithmetic elementwise ops: all operands share the result's type (checked by inference).
absl::StatusOr<Tensor> EvalArithmetic(Op op, const TensorType& rt, absl::Span<const Tensor> in) {
  Tensor out(rt.dtype, rt.shape);
  const int64_t n = rt.num_elements();
  const Tensor& a = in[0];
  const Tensor& b = in.size() > 1 ? in[1] : in[0];
  if (rt.dtype == DType::kF32) {
    FloatFn fn = FloatKernel(op);
    if (fn == nullptr) return NotDefined(op, rt.dtype);
    for (int64_t i = 0; i < n; ++i) {
      Store<float>(out, i, static_cast<float>(fn(Load<float>(a, i), Load<float>(b, i))));
    }
    return out;
  }
  if (rt.dtype == DType::kF64) {
    FloatFn fn = FloatKernel(op);
    if (fn == nullptr) return NotDefined(op, rt.dtype);
    for (int64_t i = 0; i < n; ++i) Store<double>(out, i, fn(Load<double>(a, i), Load<double>(b, i)));
    return out;
  }
  absl::Status status = Dispatch(op, rt.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      for (int64_t i = 0; i < n; ++i) {
        PCP_ASSIGN_OR_RETURN(T v, IntegerOp<T>(op, Load<T>(a, i), Load<T>(b, i)));
        Store<T>(out, i, v);
      }
      return absl::OkStatus();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!IsLogical(op)) return NotDefined(op, rt.dtype);
      for (int64_t i = 0; i < n; ++i) {
        const bool x = Load<bool>(a, i), y = Load<bool>(b, i);
        Store<bool>(out, i, op == Op::kAnd ? x && y : op == Op::kOr ? x || y : !x);
      }
      return absl::OkStatus();
    } else {
      return NotDefined(op, rt.dtype);
    }
  });
  if (!status.ok()) return status;
  return out;
}

template <typename T>
bool CompareValues(ComparisonDirection d, T a, T b) {
  // Plain C++ comparisons are IEEE's on floats: every comparison with NaN is false but NE.
  switch (d) {
    case ComparisonDirection::kEQ: return a == b;
    case ComparisonDirection::kNE: return a != b;
    case ComparisonDirection::kLT: return a < b;
    case ComparisonDirection::kLE: return a <= b;
    case ComparisonDirection::kGT: return a > b;
    case ComparisonDirection::kGE: return a >= b;
  }
  return false;
}

absl::StatusOr<Tensor> EvalCompare(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in) {
  Tensor out(DType::kBool, rt.shape);
  const int64_t n = rt.num_elements();
  PCP_RETURN_IF_ERROR(Dispatch(inst.op, in[0].dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    for (int64_t i = 0; i < n; ++i) {
      Store<bool>(out, i, CompareValues<T>(inst.attrs.comparison, Load<T>(in[0], i), Load<T>(in[1], i)));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Tensor> EvalSelect(const TensorType& rt, absl::Span<const Tensor> in) {
  Tensor out(rt.dtype, rt.shape);
  const int64_t size = SizeOf(rt.dtype);
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (int64_t i = 0; i < rt.num_elements(); ++i) {
    const Tensor& chosen = Load<bool>(in[0], i) ? in[1] : in[2];
    std::memcpy(dst + i * size, static_cast<const uint8_t*>(chosen.raw_data()) + i * size, size);
  }
  return out;
}

// clamp(lo, x, hi) = min(max(x, lo), hi), NaN-propagating on floats like maximum/minimum.
absl::StatusOr<Tensor> EvalClamp(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in) {
  Tensor out(rt.dtype, rt.shape);
  PCP_RETURN_IF_ERROR(DispatchNumeric(inst.op, rt.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    for (int64_t i = 0; i < rt.num_elements(); ++i) {
      const T lo = Load<T>(in[0], i), x = Load<T>(in[1], i), hi = Load<T>(in[2], i);
      if constexpr (std::is_floating_point_v<T>) {
        Store<T>(out, i, static_cast<T>(FloatMinimum(FloatMaximum(x, lo), hi)));
      } else {
        Store<T>(out, i, std::min(std::max(x, lo), hi));
      }
    }
    return absl::OkStatus();
  }));
  return out;
}

template <typename To, typename From>
To ConvertElement(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From{0};
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // A C++ cast of NaN or an out-of-range value is undefined; pin those down.
    if (std::isnan(v)) return To{0};
    if (v <= static_cast<double>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);  // int -> float rounds to nearest; int -> int wraps (C++20)
  }
}

absl::StatusOr<Tensor> EvalConvert(const Instruction& inst, const TensorType& rt, const Tensor& in) {
  // bf16 / f16 (mixed precision's roundings, pcp/autodiff/mixed_precision.h): convert.h's
  // conversions, round to nearest even, the same rules as below otherwise.
  auto half = [](DType d) { return d == DType::kBF16 || d == DType::kF16; };
  if (half(in.dtype()) || half(rt.dtype)) return ConvertTensor(in, rt.dtype);
  Tensor out(rt.dtype, rt.shape);
  const int64_t n = rt.num_elements();
  PCP_RETURN_IF_ERROR(Dispatch(inst.op, in.dtype(), [&](auto from_tag) -> absl::Status {
    using From = decltype(from_tag);
    return Dispatch(inst.op, rt.dtype, [&](auto to_tag) -> absl::Status {
      using To = decltype(to_tag);
      for (int64_t i = 0; i < n; ++i) Store<To>(out, i, ConvertElement<To, From>(Load<From>(in, i)));
      return absl::OkStatus();
    });
  }));
  return out;
}

// ---- Sources and layout -----------------------------------------------------------------

absl::StatusOr<Tensor> EvalIota(const Instruction& inst, const TensorType& rt) {
  Tensor out(rt.dtype, rt.shape);
  const size_t dim = static_cast<size_t>(inst.attrs.dimension);
  PCP_RETURN_IF_ERROR(DispatchNumeric(inst.op, rt.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    int64_t k = 0;
    for (IndexWalker w(rt.shape); !w.done(); w.Next(), ++k) {
      Store<T>(out, k, static_cast<T>(w.index()[dim]));
    }
    return absl::OkStatus();
  }));
  return out;
}

Tensor EvalBroadcastInDim(const Instruction& inst, const TensorType& rt, const Tensor& in) {
  // A result dimension that no operand dimension maps to, or that a size-1 operand
  // dimension is stretched along, reads the same source element: stride 0.
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
  std::vector<int64_t> strides(rt.shape.size(), 0);
  for (size_t i = 0; i < inst.attrs.dims.size(); ++i) {
    if (in.shape()[i] != 1) strides[inst.attrs.dims[i]] = in_strides[i];
  }
  return StridedCopy(in, rt, 0, strides);
}

Tensor EvalTranspose(const Instruction& inst, const TensorType& rt, const Tensor& in) {
  // Result dimension i is operand dimension permutation[i].
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
  std::vector<int64_t> strides;
  for (int64_t p : inst.attrs.dims) strides.push_back(in_strides[p]);
  return StridedCopy(in, rt, 0, strides);
}

Tensor EvalSlice(const Instruction& inst, const TensorType& rt, const Tensor& in) {
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
  std::vector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < in_strides.size(); ++d) {
    base += inst.attrs.start[d] * in_strides[d];
    strides.push_back(inst.attrs.stride[d] * in_strides[d]);
  }
  return StridedCopy(in, rt, base, strides);
}

Tensor EvalConcatenate(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in) {
  Tensor out(rt.dtype, rt.shape);
  const int64_t size = SizeOf(rt.dtype);
  const std::vector<int64_t> out_strides = RowMajorStrides(rt.shape);
  const size_t dim = static_cast<size_t>(inst.attrs.dimension);
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  int64_t position = 0;  // where the current operand starts along `dim`
  for (const Tensor& t : in) {
    const auto* src = static_cast<const uint8_t*>(t.raw_data());
    int64_t k = 0;
    for (IndexWalker w(t.shape()); !w.done(); w.Next(), ++k) {
      int64_t o = Offset(w.index(), out_strides) + position * out_strides[dim];
      std::memcpy(dst + o * size, src + k * size, size);
    }
    position += t.shape()[dim];
  }
  return out;
}

// ---- Reduce, dot_general, gather, scatter -----------------------------------------------

// Sums of f32 and f64 accumulate in double; integer sums wrap through the unsigned type.
template <typename T>
struct Accumulator {
  using type = std::make_unsigned_t<T>;
};
template <>
struct Accumulator<float> {
  using type = double;
};
template <>
struct Accumulator<double> {
  using type = double;
};

absl::StatusOr<Tensor> EvalReduce(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in) {
  const Tensor& input = in[0];
  const ReduceKind kind = inst.attrs.reduce_kind;
  // out_strides[d]: how far input dimension d moves in the result (0 if reduced away).
  const std::vector<int64_t> result_strides = RowMajorStrides(rt.shape);
  std::vector<int64_t> out_strides(input.shape().size(), 0);
  for (size_t d = 0, r = 0; d < input.shape().size(); ++d) {
    bool reduced = false;
    for (int64_t x : inst.attrs.dims) reduced |= x == static_cast<int64_t>(d);
    if (!reduced) out_strides[d] = result_strides[r++];
  }
  Tensor out(rt.dtype, rt.shape);
  PCP_RETURN_IF_ERROR(DispatchNumeric(inst.op, rt.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    using Acc = typename Accumulator<T>::type;
    std::vector<Acc> acc(static_cast<size_t>(rt.num_elements()), static_cast<Acc>(Load<T>(in[1], 0)));
    int64_t k = 0;
    for (IndexWalker w(input.shape()); !w.done(); w.Next(), ++k) {
      Acc& a = acc[Offset(w.index(), out_strides)];
      const T x = Load<T>(input, k);
      if (kind == ReduceKind::kSum) {
        a += static_cast<Acc>(x);
      } else if constexpr (std::is_floating_point_v<T>) {
        a = FloatMaximum(a, x);
      } else {
        a = static_cast<Acc>(std::max(static_cast<T>(a), x));
      }
    }
    for (size_t i = 0; i < acc.size(); ++i) Store<T>(out, i, static_cast<T>(acc[i]));
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Tensor> EvalDotGeneral(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in) {
  if (rt.dtype != DType::kF32) return NotComputed(inst.op, rt.dtype);
  const Tensor& lhs = in[0];
  const Tensor& rhs = in[1];
  const DotDims& dd = inst.attrs.dot;
  const std::vector<int64_t> ls = RowMajorStrides(lhs.shape()), rs = RowMajorStrides(rhs.shape());
  auto is_free = [](const std::vector<int64_t>& batch, const std::vector<int64_t>& contract, int64_t d) {
    for (int64_t x : batch)
      if (x == d) return false;
    for (int64_t x : contract)
      if (x == d) return false;
    return true;
  };
  // For each result dimension (batch, lhs free, rhs free), its stride in lhs and in rhs.
  std::vector<int64_t> result_lhs_strides, result_rhs_strides;
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i) {
    result_lhs_strides.push_back(ls[dd.lhs_batch[i]]);
    result_rhs_strides.push_back(rs[dd.rhs_batch[i]]);
  }
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (!is_free(dd.lhs_batch, dd.lhs_contract, d)) continue;
    result_lhs_strides.push_back(ls[d]);
    result_rhs_strides.push_back(0);
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (!is_free(dd.rhs_batch, dd.rhs_contract, d)) continue;
    result_lhs_strides.push_back(0);
    result_rhs_strides.push_back(rs[d]);
  }
  // Offsets of every contracting multi-index, listed once and reused for every result element.
  Shape contract_shape;
  std::vector<int64_t> contract_lhs_strides, contract_rhs_strides;
  for (size_t i = 0; i < dd.lhs_contract.size(); ++i) {
    contract_shape.push_back(lhs.shape()[dd.lhs_contract[i]]);
    contract_lhs_strides.push_back(ls[dd.lhs_contract[i]]);
    contract_rhs_strides.push_back(rs[dd.rhs_contract[i]]);
  }
  std::vector<int64_t> lhs_terms, rhs_terms;
  for (IndexWalker w(contract_shape); !w.done(); w.Next()) {
    lhs_terms.push_back(Offset(w.index(), contract_lhs_strides));
    rhs_terms.push_back(Offset(w.index(), contract_rhs_strides));
  }
  Tensor out(rt.dtype, rt.shape);
  const float* l = static_cast<const float*>(lhs.raw_data());
  const float* r = static_cast<const float*>(rhs.raw_data());
  int64_t k = 0;
  for (IndexWalker w(rt.shape); !w.done(); w.Next(), ++k) {
    const int64_t lb = Offset(w.index(), result_lhs_strides), rb = Offset(w.index(), result_rhs_strides);
    double sum = 0.0;
    for (size_t c = 0; c < lhs_terms.size(); ++c) {
      sum += static_cast<double>(l[lb + lhs_terms[c]]) * static_cast<double>(r[rb + rhs_terms[c]]);
    }
    Store<float>(out, k, static_cast<float>(sum));
  }
  return out;
}

int64_t LoadIndex(const Tensor& indices, int64_t i) {
  return indices.dtype() == DType::kI32 ? Load<int32_t>(indices, i) : Load<int64_t>(indices, i);
}

absl::StatusOr<Tensor> EvalGather(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in) {
  const Tensor& table = in[0];
  const Tensor& indices = in[1];
  const int64_t rows = table.shape()[0];
  const int64_t row_bytes = table.rank() == 0 ? 0 : table.byte_size() / std::max<int64_t>(rows, 1);
  Tensor out(rt.dtype, rt.shape);
  if (rows == 0 && indices.num_elements() > 0 && rt.num_elements() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(OpName(inst.op), ": gathers from a table with no rows"));
  }
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  const auto* src = static_cast<const uint8_t*>(table.raw_data());
  for (int64_t i = 0; i < indices.num_elements() && row_bytes > 0; ++i) {
    const int64_t row = std::clamp<int64_t>(LoadIndex(indices, i), 0, rows - 1);
    std::memcpy(dst + i * row_bytes, src + row * row_bytes, row_bytes);
  }
  return out;
}

absl::StatusOr<Tensor> EvalScatter(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in) {
  const Tensor& operand = in[0];
  const Tensor& indices = in[1];
  const Tensor& updates = in[2];
  const int64_t rows = operand.shape()[0];
  const int64_t row_size = rows == 0 ? 0 : operand.num_elements() / rows;
  Tensor out(rt.dtype, rt.shape);
  PCP_RETURN_IF_ERROR(DispatchNumeric(inst.op, rt.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    // Repeated indices add up; f32 sums in double so the order of updates does not matter.
    using Acc = typename Accumulator<T>::type;
    std::vector<Acc> acc(static_cast<size_t>(operand.num_elements()));
    for (size_t j = 0; j < acc.size(); ++j) acc[j] = static_cast<Acc>(Load<T>(operand, j));
    for (int64_t i = 0; i < indices.num_elements(); ++i) {
      const int64_t row = LoadIndex(indices, i);
      if (row < 0 || row >= rows) continue;
      for (int64_t j = 0; j < row_size; ++j) {
        acc[row * row_size + j] += static_cast<Acc>(Load<T>(updates, i * row_size + j));
      }
    }
    for (size_t j = 0; j < acc.size(); ++j) Store<T>(out, j, static_cast<T>(acc[j]));
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace

absl::StatusOr<Tensor> EvaluateInstruction(const Instruction& inst, const TensorType& rt,
                                           absl::Span<const Tensor> operands) {
  // Re-checking the types here keeps every loop below in bounds whatever the caller passes.
  std::vector<TensorType> types;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].valid()) {
      return absl::InvalidArgumentError(absl::StrCat(OpName(inst.op), ": operand ", i, " has no value"));
    }
    types.push_back(TensorType{operands[i].dtype(), operands[i].shape()});
  }
  PCP_RETURN_IF_ERROR(InferResultType(inst.op, types, inst.attrs, &rt).status());
  switch (inst.op) {
    case Op::kConstant: return inst.attrs.literal.Clone();
    case Op::kIota: return EvalIota(inst, rt);
    case Op::kCompare: return EvalCompare(inst, rt, operands);
    case Op::kSelect: return EvalSelect(rt, operands);
    case Op::kClamp: return EvalClamp(inst, rt, operands);
    case Op::kConvert: return EvalConvert(inst, rt, operands[0]);
    case Op::kBroadcastInDim: return EvalBroadcastInDim(inst, rt, operands[0]);
    case Op::kReshape: return operands[0].Reshaped(rt.shape);  // tensors are never mutated
    case Op::kTranspose: return EvalTranspose(inst, rt, operands[0]);
    case Op::kSlice: return EvalSlice(inst, rt, operands[0]);
    case Op::kConcatenate: return EvalConcatenate(inst, rt, operands);
    case Op::kReduce: return EvalReduce(inst, rt, operands);
    case Op::kDotGeneral: return EvalDotGeneral(inst, rt, operands);
    case Op::kGather: return EvalGather(inst, rt, operands);
    case Op::kScatter: return EvalScatter(inst, rt, operands);
    default:
      if (IsElementwise(inst.op)) return EvalArithmetic(inst.op, rt, operands);
      if (GetOpCategory(inst.op) == OpCategory::kAttention) return EvalAttention(inst, rt, operands);
      return absl::UnimplementedError(absl::StrCat(OpName(inst.op), ": not implemented by the interpreter"));
  }
}

absl::StatusOr<std::vector<Tensor>> Interpret(const Function& f, absl::Span<const Tensor> args) {
  PCP_RETURN_IF_ERROR(Verify(f));
  if (args.size() != f.params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("function @", f.name, " takes ", f.params.size(), " arguments, got ", args.size()));
  }
  std::vector<Tensor> values(static_cast<size_t>(f.num_values()));
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& want = f.type(f.params[i]);
    if (!args[i].valid() || args[i].dtype() != want.dtype || args[i].shape() != want.shape) {
      return absl::InvalidArgumentError(absl::StrCat("function @", f.name, ": argument ", i, " ('", f.param_names[i],
                                                     "') must be ", want.ToString(), ", got ",
                                                     args[i].valid() ? args[i].TypeString() : "no tensor"));
    }
    values[f.params[i]] = args[i];
  }
  // Drop each intermediate after its last use, so memory stays at the live set.
  std::vector<int64_t> last_use(values.size(), -1);
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    for (ValueId v : f.instructions[i].operands) last_use[v] = static_cast<int64_t>(i);
  }
  for (ValueId v : f.results) last_use[v] = std::numeric_limits<int64_t>::max();
  std::vector<Tensor> operands;
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    operands.clear();
    for (ValueId v : inst.operands) operands.push_back(values[v]);
    PCP_ASSIGN_OR_RETURN(values[inst.result], EvaluateInstruction(inst, f.type(inst.result), operands),
                         _ << "function @" << f.name << ", instruction " << i << " (" << OpName(inst.op) << ")");
    for (ValueId v : inst.operands) {
      if (last_use[v] == static_cast<int64_t>(i)) values[v] = Tensor();
    }
  }
  std::vector<Tensor> results;
  for (ValueId v : f.results) results.push_back(values[v]);
  return results;
}

}  // namespace pcp
