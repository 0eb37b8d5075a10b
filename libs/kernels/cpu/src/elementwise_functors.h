// The CPU backend's op -> code table for elementwise ops: for each op that computes one
// element from operands of its own type, the functor whose static Apply does it. Both the
// one-op loops (elementwise_ops.cc) and the expression ops (expression_ops.cc) compute an op
// through ElementFn<op>, so the two give the same bits by construction.
//
//   float y = ElementFn<Op::kTanh>::Apply(x);              // TanhF(x)
//   int32_t q = ElementFn<Op::kDivide>::Apply(a, b);       // a / b, with x / 0 = -1
//
// A functor's Apply is a template over the element type, or takes float only where the op is
// IsFloatOnly (pcp/autodiff/op_list.h); which dtypes an op takes, and its operand count,
// come from the op list, not from here. Semantics follow the reference interpreter
// (interpreter.cc): integer arithmetic wraps, x / 0 = -1 and INT_MIN / -1 = INT_MIN for
// integers, maximum/minimum propagate NaN and order -0 < +0; and / or / not are logical on
// i1 (bytes 0 / 1) and bitwise on integers.
//
// Adding an elementwise op that computes element by element: its functor below and a row in
// PCP_CPU_ELEMENTWISE_FUNCTORS. (compare, select and convert change or mix element types and
// have loops of their own in elementwise_ops.cc.)
#ifndef PCP_KERNELS_CPU_ELEMENTWISE_FUNCTORS_H_
#define PCP_KERNELS_CPU_ELEMENTWISE_FUNCTORS_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "pcp/autodiff/op_list.h"
#include "vector_math.h"

namespace pcp::cpu {

using Pred = uint8_t;  // i1 is one byte, 0 or 1

namespace functors {

template <typename T>
using Wide = std::make_unsigned_t<T>;

#define PCP_UNARY_FLOAT_(Name, expr)             \
  struct Name {                                  \
    static float Apply(float a) { return expr; } \
  };
PCP_UNARY_FLOAT_(Exp, ExpF(a))
PCP_UNARY_FLOAT_(Log, LogF(a))
PCP_UNARY_FLOAT_(Sqrt, std::sqrt(a))
PCP_UNARY_FLOAT_(Rsqrt, 1.0f / std::sqrt(a))
PCP_UNARY_FLOAT_(Tanh, TanhF(a))
PCP_UNARY_FLOAT_(Logistic, LogisticF(a))
PCP_UNARY_FLOAT_(Erf, ErfF(a))
PCP_UNARY_FLOAT_(Ceil, std::ceil(a))
#undef PCP_UNARY_FLOAT_

struct Power {
  // Rare (scalar schedules); evaluated like the interpreter, in double.
  static float Apply(float a, float b) {
    return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
};
struct Negate {
  template <typename T>
  static T Apply(T a) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(Wide<T>{0} - static_cast<Wide<T>>(a));
    } else {
      return -a;
    }
  }
};
struct Abs {
  template <typename T>
  static T Apply(T a) {
    if constexpr (std::is_integral_v<T>) {
      return a < 0 ? static_cast<T>(Wide<T>{0} - static_cast<Wide<T>>(a)) : a;
    } else {
      return std::fabs(a);
    }
  }
};
struct And {
  template <typename T>
  static T Apply(T a, T b) {
    return static_cast<T>(a & b);
  }
};
struct Or {
  template <typename T>
  static T Apply(T a, T b) {
    return static_cast<T>(a | b);
  }
};
struct Not {
  template <typename T>
  static T Apply(T a) {
    if constexpr (std::is_same_v<T, Pred>) {
      return a != 0 ? 0 : 1;
    } else {
      return static_cast<T>(~a);
    }
  }
};
struct Add {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
    } else {
      return a + b;
    }
  }
};
struct Subtract {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) - static_cast<Wide<T>>(b));
    } else {
      return a - b;
    }
  }
};
struct Multiply {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    } else {
      return a * b;
    }
  }
};
struct Divide {
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
struct Maximum {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a > b ? a : b;
    } else {
      return MaxF(a, b);
    }
  }
};
struct Minimum {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? a : b;
    } else {
      return MinF(a, b);
    }
  }
};
// clamp(lo, x, hi) = min(max(x, lo), hi), as the interpreter computes it.
struct Clamp {
  template <typename T>
  static T Apply(T lo, T x, T hi) {
    return Minimum::Apply(Maximum::Apply(x, lo), hi);
  }
};

}  // namespace functors

// V(op, functor): every elementwise op computed element by element from operands of its
// own type.
#define PCP_CPU_ELEMENTWISE_FUNCTORS(V) \
  V(kAdd, Add)                          \
  V(kSubtract, Subtract)                \
  V(kMultiply, Multiply)                \
  V(kDivide, Divide)                    \
  V(kMaximum, Maximum)                  \
  V(kMinimum, Minimum)                  \
  V(kPower, Power)                      \
  V(kNegate, Negate)                    \
  V(kExponential, Exp)                  \
  V(kLog, Log)                          \
  V(kSqrt, Sqrt)                        \
  V(kRsqrt, Rsqrt)                      \
  V(kTanh, Tanh)                        \
  V(kLogistic, Logistic)                \
  V(kAbs, Abs)                          \
  V(kCeil, Ceil)                        \
  V(kErf, Erf)                          \
  V(kAnd, And)                          \
  V(kOr, Or)                            \
  V(kNot, Not)                          \
  V(kClamp, Clamp)

// ElementFn<op>: op's functor (undefined for ops without one).
template <Op op>
struct ElementFn;
#define PCP_CPU_ELEMENT_FN_(e, F)         \
  template <>                             \
  struct ElementFn<Op::e> : functors::F { \
    static_assert(IsElementwise(Op::e));  \
  };
PCP_CPU_ELEMENTWISE_FUNCTORS(PCP_CPU_ELEMENT_FN_)
#undef PCP_CPU_ELEMENT_FN_

// Whether op has a row in PCP_CPU_ELEMENTWISE_FUNCTORS.
constexpr bool HasElementFn(Op op) {
  switch (op) {
#define PCP_CPU_HAS_ELEMENT_FN_(e, F) case Op::e:
    PCP_CPU_ELEMENTWISE_FUNCTORS(PCP_CPU_HAS_ELEMENT_FN_)
#undef PCP_CPU_HAS_ELEMENT_FN_
    return true;
    default: return false;
  }
}

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_ELEMENTWISE_FUNCTORS_H_
