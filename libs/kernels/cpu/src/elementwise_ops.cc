// One loop per (elementwise op, dtype): the instructions of the loop kernel's register
// machine. Semantics follow the reference interpreter (interpreter.cc): integer arithmetic
// wraps, x / 0 = -1 and INT_MIN / -1 = INT_MIN for integers, maximum/minimum propagate NaN
// and order -0 < +0, float -> integer converts truncate, saturate and map NaN to 0.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "fused_kernel.h"
#include "vector_math.h"

namespace pcp::cpu {
namespace {

using Pred = uint8_t;  // i1 is one byte, 0 or 1

template <typename T>
using Wide = std::make_unsigned_t<T>;

template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
  } else {
    return a + b;
  }
}

// ---- Functors: Apply on one element -------------------------------------------------------

#define PCP_UNARY_FLOAT(Name, expr)              \
  struct Name {                                  \
    static float Apply(float a) { return expr; } \
  };
PCP_UNARY_FLOAT(ExpOp, ExpF(a))
PCP_UNARY_FLOAT(LogOp, LogF(a))
PCP_UNARY_FLOAT(SqrtOp, std::sqrt(a))
PCP_UNARY_FLOAT(RsqrtOp, 1.0f / std::sqrt(a))
PCP_UNARY_FLOAT(TanhOp, TanhF(a))
PCP_UNARY_FLOAT(LogisticOp, LogisticF(a))
PCP_UNARY_FLOAT(ErfOp, ErfF(a))
PCP_UNARY_FLOAT(CeilOp, std::ceil(a))
#undef PCP_UNARY_FLOAT

struct NegOp {
  template <typename T>
  static T Apply(T a) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(Wide<T>{0} - static_cast<Wide<T>>(a));
    } else {
      return -a;
    }
  }
};
struct AbsOp {
  template <typename T>
  static T Apply(T a) {
    if constexpr (std::is_integral_v<T>) {
      return a < 0 ? static_cast<T>(Wide<T>{0} - static_cast<Wide<T>>(a)) : a;
    } else {
      return std::fabs(a);
    }
  }
};
// Logical on i1 (bytes 0 / 1), bitwise on integers.
struct AndOp {
  template <typename T>
  static T Apply(T a, T b) {
    return static_cast<T>(a & b);
  }
};
struct OrOp {
  template <typename T>
  static T Apply(T a, T b) {
    return static_cast<T>(a | b);
  }
};
struct NotOp {
  template <typename T>
  static T Apply(T a) {
    if constexpr (std::is_same_v<T, Pred>) {
      return a != 0 ? 0 : 1;
    } else {
      return static_cast<T>(~a);
    }
  }
};
struct AddOp {
  template <typename T>
  static T Apply(T a, T b) {
    return WrapAdd(a, b);
  }
};
struct SubOp {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) - static_cast<Wide<T>>(b));
    } else {
      return a - b;
    }
  }
};
struct MulOp {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    } else {
      return a * b;
    }
  }
};
struct DivOp {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T{-1};
      if (a == std::numeric_limits<T>::min() && b == -1) return a;
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};
struct MaxOp {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a > b ? a : b;
    } else {
      return MaxF(a, b);
    }
  }
};
struct MinOp {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? a : b;
    } else {
      return MinF(a, b);
    }
  }
};
struct PowOp {
  // Rare (scalar schedules); evaluated like the interpreter, in double.
  static float Apply(float a, float b) {
    return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
};

template <ComparisonDirection D>
struct CompareOp {
  template <typename T>
  static Pred Apply(T a, T b) { return CompareValues<D>(a, b); }
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

// clamp(lo, x, hi) = min(max(x, lo), hi), as the interpreter computes it.
template <typename T>
void ClampLoop(const FusedOp& op, void* const* regs, int64_t n) {
  T* __restrict d = static_cast<T*>(regs[op.dst]);
  const T* lo = static_cast<const T*>(regs[op.src[0]]);
  const T* x = static_cast<const T*>(regs[op.src[1]]);
  const T* hi = static_cast<const T*>(regs[op.src[2]]);
  for (int64_t i = 0; i < n; ++i) d[i] = MinOp::Apply(MaxOp::Apply(x[i], lo[i]), hi[i]);
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

// ---- Table ----------------------------------------------------------------------------

template <typename F>
ElementwiseFn UnaryFloat() {
  return &UnaryLoop<float, float, F>;
}

template <typename T>
ElementwiseFn LogicalFn(Op op) {
  switch (op) {
    case Op::kAnd:
      return &BinaryLoop<T, T, AndOp>;
    case Op::kOr:
      return &BinaryLoop<T, T, OrOp>;
    case Op::kNot:
      return &UnaryLoop<T, T, NotOp>;
    default:
      return nullptr;
  }
}

template <typename T>
ElementwiseFn ArithmeticFn(Op op) {
  switch (op) {
    case Op::kAdd:
      return &BinaryLoop<T, T, AddOp>;
    case Op::kSubtract:
      return &BinaryLoop<T, T, SubOp>;
    case Op::kMultiply:
      return &BinaryLoop<T, T, MulOp>;
    case Op::kDivide:
      return &BinaryLoop<T, T, DivOp>;
    case Op::kMaximum:
      return &BinaryLoop<T, T, MaxOp>;
    case Op::kMinimum:
      return &BinaryLoop<T, T, MinOp>;
    case Op::kNegate:
      return &UnaryLoop<T, T, NegOp>;
    case Op::kAbs:
      return &UnaryLoop<T, T, AbsOp>;
    case Op::kClamp:
      return &ClampLoop<T>;
    default:
      break;
  }
  if constexpr (std::is_same_v<T, float>) {
    switch (op) {
      case Op::kPower:
        return &BinaryLoop<float, float, PowOp>;
      case Op::kExponential:
        return UnaryFloat<ExpOp>();
      case Op::kLog:
        return UnaryFloat<LogOp>();
      case Op::kSqrt:
        return UnaryFloat<SqrtOp>();
      case Op::kRsqrt:
        return UnaryFloat<RsqrtOp>();
      case Op::kTanh:
        return UnaryFloat<TanhOp>();
      case Op::kLogistic:
        return UnaryFloat<LogisticOp>();
      case Op::kErf:
        return UnaryFloat<ErfOp>();
      case Op::kCeil:
        return UnaryFloat<CeilOp>();
      default:
        break;
    }
  }
  return nullptr;
}

template <typename T>
ElementwiseFn CompareFn(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kEQ:
      return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kEQ>>;
    case ComparisonDirection::kNE:
      return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kNE>>;
    case ComparisonDirection::kLT:
      return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kLT>>;
    case ComparisonDirection::kLE:
      return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kLE>>;
    case ComparisonDirection::kGT:
      return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kGT>>;
    case ComparisonDirection::kGE:
      return &BinaryLoop<T, Pred, CompareOp<ComparisonDirection::kGE>>;
  }
  return nullptr;
}

template <typename From>
ElementwiseFn ConvertFrom(DType to) {
  switch (to) {
    case DType::kF32:
      return &ConvertLoop<float, From>;
    case DType::kI32:
      return &ConvertLoop<int32_t, From>;
    case DType::kI64:
      return &ConvertLoop<int64_t, From>;
    case DType::kBool:
      return &ConvertLoop<Pred, From>;
    default:
      return nullptr;
  }
}

// Calls fn(T{}) for the computing dtypes; nullptr for the others (f16, bf16).
template <typename Fn>
ElementwiseFn ByType(DType d, Fn&& fn) {
  switch (d) {
    case DType::kF32:
      return fn(float{});
    case DType::kI32:
      return fn(int32_t{});
    case DType::kI64:
      return fn(int64_t{});
    case DType::kBool:
      return fn(Pred{});
    default:
      return nullptr;
  }
}

}  // namespace

ElementwiseFn GetElementwiseFn(Op op, DType operand, DType result, ComparisonDirection direction) {
  switch (op) {
    case Op::kCompare:
      return ByType(operand, [&](auto t) { return CompareFn<decltype(t)>(direction); });
    case Op::kConvert:
      return ByType(operand, [&](auto t) { return ConvertFrom<decltype(t)>(result); });
    case Op::kSelect:
      // Moves bits, so any element size works (f16/bf16 included).
      switch (result) {
        case DType::kBool:
          return &SelectLoop<uint8_t>;
        case DType::kF16:
        case DType::kBF16:
          return &SelectLoop<uint16_t>;
        case DType::kF32:
        case DType::kI32:
          return &SelectLoop<uint32_t>;
        case DType::kI64:
        case DType::kF64:
          return &SelectLoop<uint64_t>;
      }
      return nullptr;
    default:
      if (IsLogical(op)) {
        return ByType(operand, [&](auto t) -> ElementwiseFn {
          using T = decltype(t);
          if constexpr (std::is_floating_point_v<T>) {
            return nullptr;
          } else {
            return LogicalFn<T>(op);
          }
        });
      }
      if (!IsElementwise(op) || operand == DType::kBool) return nullptr;
      return ByType(operand, [&](auto t) -> ElementwiseFn {
        using T = decltype(t);
        if constexpr (std::is_same_v<T, Pred>) {
          return nullptr;
        } else {
          return ArithmeticFn<T>(op);
        }
      });
  }
}

}  // namespace pcp::cpu
