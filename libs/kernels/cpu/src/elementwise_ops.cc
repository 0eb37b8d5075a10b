// One loop per (elementwise op, dtype): the instructions of the loop kernel's register
// machine. Ops computed element by element come from the op -> functor table
// (elementwise_functors.h), their dtypes from the op list's properties; compare, select and
// convert have loops of their own here. Semantics follow the reference interpreter
// (interpreter.cc); float -> integer converts truncate, saturate and map NaN to 0.
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "elementwise_functors.h"
#include "fused_kernel.h"
#include "pcp/tensor/convert.h"
#include "vector_math.h"

namespace pcp::cpu {
namespace {

template <ComparisonDirection D>
struct CompareOp {
  template <typename T>
  static Pred Apply(T a, T b) {
    return CompareValues<D>(a, b);
  }
};

template <typename To, typename From>
To ConvertElement(From v) {
  if constexpr (std::is_same_v<To, Pred>) {
    return v != From{0} ? 1 : 0;
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // NaN -> 0; out of range saturates; otherwise truncates (the interpreter's rule).
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max());
    if (v != v) return To{0};
    if (v <= lo) return std::numeric_limits<To>::min();
    if (v >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// ---- Loops ----------------------------------------------------------------------------

template <typename T, typename R, typename F>
void UnaryLoop(const FusedOp& op, void* const* regs, int64_t n) {
  R* __restrict d = static_cast<R*>(regs[op.dst]);
  const T* a = static_cast<const T*>(regs[op.src[0]]);
  for (int64_t i = 0; i < n; ++i) d[i] = F::Apply(a[i]);
}

template <typename T, typename R, typename F>
void BinaryLoop(const FusedOp& op, void* const* regs, int64_t n) {
  R* __restrict d = static_cast<R*>(regs[op.dst]);
  const T* a = static_cast<const T*>(regs[op.src[0]]);
  const T* b = static_cast<const T*>(regs[op.src[1]]);
  for (int64_t i = 0; i < n; ++i) d[i] = F::Apply(a[i], b[i]);
}

template <typename T, typename R, typename F>
void TernaryLoop(const FusedOp& op, void* const* regs, int64_t n) {
  R* __restrict d = static_cast<R*>(regs[op.dst]);
  const T* a = static_cast<const T*>(regs[op.src[0]]);
  const T* b = static_cast<const T*>(regs[op.src[1]]);
  const T* c = static_cast<const T*>(regs[op.src[2]]);
  for (int64_t i = 0; i < n; ++i) d[i] = F::Apply(a[i], b[i], c[i]);
}

template <typename T>
void SelectLoop(const FusedOp& op, void* const* regs, int64_t n) {
  T* __restrict d = static_cast<T*>(regs[op.dst]);
  const Pred* p = static_cast<const Pred*>(regs[op.src[0]]);
  const T* a = static_cast<const T*>(regs[op.src[1]]);
  const T* b = static_cast<const T*>(regs[op.src[2]]);
  for (int64_t i = 0; i < n; ++i) d[i] = p[i] ? a[i] : b[i];
}

template <typename To, typename From>
void ConvertLoop(const FusedOp& op, void* const* regs, int64_t n) {
  To* __restrict d = static_cast<To*>(regs[op.dst]);
  const From* a = static_cast<const From*>(regs[op.src[0]]);
  for (int64_t i = 0; i < n; ++i) d[i] = ConvertElement<To, From>(a[i]);
}

// f32 <-> bf16 / f16 (mixed precision's roundings, pcp/autodiff/mixed_precision.h): convert.h's
// conversions, round to nearest even, the interpreter's bits.
template <uint16_t (*ToHalf)(float)>
void ToHalfLoop(const FusedOp& op, void* const* regs, int64_t n) {
  uint16_t* __restrict d = static_cast<uint16_t*>(regs[op.dst]);
  const float* a = static_cast<const float*>(regs[op.src[0]]);
  for (int64_t i = 0; i < n; ++i) d[i] = ToHalf(a[i]);
}

template <float (*FromHalf)(uint16_t)>
void FromHalfLoop(const FusedOp& op, void* const* regs, int64_t n) {
  float* __restrict d = static_cast<float*>(regs[op.dst]);
  const uint16_t* a = static_cast<const uint16_t*>(regs[op.src[0]]);
  for (int64_t i = 0; i < n; ++i) d[i] = FromHalf(a[i]);
}

// bf16 -> f32 is a shift: inline, so the loop vectorises.
inline float BF16BitsToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

ElementwiseFn HalfConvertFn(DType operand, DType result) {
  if (operand == DType::kF32 && result == DType::kBF16) return &ToHalfLoop<&FloatToBFloat16>;
  if (operand == DType::kF32 && result == DType::kF16) return &ToHalfLoop<&FloatToHalf>;
  if (operand == DType::kBF16 && result == DType::kF32) return &FromHalfLoop<&BF16BitsToFloat>;
  if (operand == DType::kF16 && result == DType::kF32) return &FromHalfLoop<&HalfToFloat>;
  return nullptr;
}

// ---- Table ----------------------------------------------------------------------------

// The loop of a table op on element type T, or nullptr where the op list's properties say
// op is not defined on T: logical ops on integers and i1 only, the others not on i1, float-only
// ops on f32 only.
template <Op op, typename T>
ElementwiseFn TableLoop() {
  if constexpr (IsLogical(op) ? std::is_floating_point_v<T>
                              : std::is_same_v<T, Pred> || (IsFloatOnly(op) && !std::is_same_v<T, float>)) {
    return nullptr;
  } else if constexpr (OpArity(op) == 1) {
    return &UnaryLoop<T, T, ElementFn<op>>;
  } else if constexpr (OpArity(op) == 2) {
    return &BinaryLoop<T, T, ElementFn<op>>;
  } else {
    static_assert(OpArity(op) == 3);
    return &TernaryLoop<T, T, ElementFn<op>>;
  }
}

template <typename T>
ElementwiseFn TableFn(Op op) {
  switch (op) {
#define PCP_CPU_TABLE_CASE_(e, F) \
  case Op::e: return TableLoop<Op::e, T>();
    PCP_CPU_ELEMENTWISE_FUNCTORS(PCP_CPU_TABLE_CASE_)
#undef PCP_CPU_TABLE_CASE_
    default: return nullptr;
  }
}

template <typename T>
ElementwiseFn CompareFn(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kEQ: return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kEQ>>;
    case ComparisonDirection::kNE: return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kNE>>;
    case ComparisonDirection::kLT: return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kLT>>;
    case ComparisonDirection::kLE: return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kLE>>;
    case ComparisonDirection::kGT: return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kGT>>;
    case ComparisonDirection::kGE: return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kGE>>;
  }
  return nullptr;
}

template <typename From>
ElementwiseFn ConvertFrom(DType to) {
  switch (to) {
    case DType::kF32: return &ConvertLoop<float, From>;
    case DType::kI32: return &ConvertLoop<int32_t, From>;
    case DType::kI64: return &ConvertLoop<int64_t, From>;
    case DType::kBool: return &ConvertLoop<Pred, From>;
    default: return nullptr;
  }
}

// Calls fn(T{}) for the computing dtypes; nullptr for the others (f16, bf16).
template <typename Fn>
ElementwiseFn ByType(DType d, Fn&& fn) {
  switch (d) {
    case DType::kF32: return fn(float{});
    case DType::kI32: return fn(int32_t{});
    case DType::kI64: return fn(int64_t{});
    case DType::kBool: return fn(Pred{});
    default: return nullptr;
  }
}

}  // namespace

ElementwiseFn GetElementwiseFn(Op op, DType operand, DType result, ComparisonDirection direction) {
  switch (op) {
    case Op::kCompare: return ByType(operand, [&](auto t) { return CompareFn<decltype(t)>(direction); });
    case Op::kConvert:
      if (ElementwiseFn half = HalfConvertFn(operand, result); half != nullptr) return half;
      return ByType(operand, [&](auto t) { return ConvertFrom<decltype(t)>(result); });
    case Op::kSelect:
      // Moves bits, so any element size works (f16/bf16 included).
      switch (result) {
        case DType::kBool: return &SelectLoop<uint8_t>;
        case DType::kF16:
        case DType::kBF16: return &SelectLoop<uint16_t>;
        case DType::kF32:
        case DType::kI32: return &SelectLoop<uint32_t>;
        case DType::kI64:
        case DType::kF64: return &SelectLoop<uint64_t>;
      }
      return nullptr;
    default: return ByType(operand, [&](auto t) { return TableFn<decltype(t)>(op); });
  }
}

// Every elementwise op has a loop: compare, select and convert above, the others in the table.
static_assert(
    [] {
      for (int i = 0; i < kNumOps; ++i) {
        const Op op = static_cast<Op>(i);
        const bool own_loop = op == Op::kCompare || op == Op::kSelect || op == Op::kConvert;
        if (IsElementwise(op) && !own_loop && !HasElementFn(op)) return false;
      }
      return true;
    }(),
    "an elementwise op of PCP_OP_LIST has no row in PCP_CPU_ELEMENTWISE_FUNCTORS (elementwise_functors.h)");

}  // namespace pcp::cpu
