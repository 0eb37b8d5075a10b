// Single-precision math written so that GCC vectorises loops calling it: no branches (its
// selects become blends; without AVX-512 masks only under the library's -fno-trapping-math,
// see CMakeLists.txt), no libm calls, integer tricks through std::bit_cast. Every fused multiply-add is explicit
// (MulAdd) and the library is compiled with -ffp-contract=off, so a function gives the same
// bits wherever it is inlined (a loop of its own or an expression op, expression_ops.h).
// Accuracy (checked against double libm in backend_conformance_test): exp, log ~1 ulp; tanh,
// logistic ~2-3 ulp; erf ~ 2e-7 relative.
// Special values follow IEEE/libm: NaN in, NaN out; exp(+inf) = inf, exp(-inf) = 0;
// log(0) = -inf, log(x<0) = NaN.
#ifndef PCP_KERNELS_CPU_VECTOR_MATH_H_
#define PCP_KERNELS_CPU_VECTOR_MATH_H_

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "pcp/autodiff/ir.h"

// This file's selects become blends without AVX-512 only under -fno-trapping-math, which GCC
// announces with __NO_TRAPPING_MATH__; a build without it would run every loop with exp, erf,
// log, tanh, a clamp or a select scalar (several times slower), so it does not compile.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__NO_TRAPPING_MATH__)
#error "vector_math.h needs -fno-trapping-math (libs/kernels/cpu/CMakeLists.txt)"
#endif

namespace pcp::cpu {

// a * b + c, rounded once where the target has FMA (which the compiler then vectorises),
// twice otherwise: the same bits for every inlining either way.
inline float MulAdd(float a, float b, float c) {
#ifdef __FMA__
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

inline float FromBits(uint32_t b) { return std::bit_cast<float>(b); }
inline uint32_t ToBits(float f) { return std::bit_cast<uint32_t>(f); }

// Round to nearest integer (valid for |x| < 2^22) without a libm call.
inline float RoundToInt(float x) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (x + kMagic) - kMagic;
}

// Cephes expf: exp(x) = 2^n * exp(r), |r| <= ln2/2, scaled in two steps so that results in
// the subnormal range and up to FLT_MAX are right. Below -104 the result is +0 (exp(-104) is
// under half the smallest subnormal): those lanes compute exp(0) and are replaced by 0 at the
// end, since scaling down to 0 is an underflow, which costs a microcode assist per vector on
// some CPUs (a causal softmax's masked -inf scores: ~2.5x slower exp on a Zen 3).
inline float ExpF(float x) {
  const bool zero = x < -104.0f;
  float xc = zero ? 0.0f : x;
  xc = xc > 88.8f ? 88.8f : xc;
  xc = x != x ? 0.0f : xc;  // keeps the int conversion below defined
  const float n = RoundToInt(xc * 1.44269504088896341f);
  float r = MulAdd(n, -0.693359375f, xc);
  r = MulAdd(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = MulAdd(p, r, 1.3981999507e-3f);
  p = MulAdd(p, r, 8.3334519073e-3f);
  p = MulAdd(p, r, 4.1665795894e-2f);
  p = MulAdd(p, r, 1.6666665459e-1f);
  p = MulAdd(p, r, 5.0000001201e-1f);
  const float y = MulAdd(p, r * r, r) + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1, n2 = ni - n1;  // both in [-75, 64]
  const float s1 = FromBits(static_cast<uint32_t>(n1 + 127) << 23);
  const float s2 = FromBits(static_cast<uint32_t>(n2 + 127) << 23);
  const float result = zero ? 0.0f : y * s1 * s2;
  return x != x ? x : result;
}

// Cephes logf: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a polynomial in m - 1.
inline float LogF(float x) {
  const bool subnormal = x < std::numeric_limits<float>::min();
  const float xs = subnormal ? x * 8388608.0f : x;  // 2^23
  const uint32_t bits = ToBits(xs);
  float e = static_cast<float>(static_cast<int32_t>((bits >> 23) & 0xff) - 126);
  e = subnormal ? e - 23.0f : e;
  float m = FromBits((bits & 0x007fffffu) | 0x3f000000u);  // [0.5, 1)
  const bool small = m < 0.707106781186547524f;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = MulAdd(y, m, -1.1514610310e-1f);
  y = MulAdd(y, m, 1.1676998740e-1f);
  y = MulAdd(y, m, -1.2420140846e-1f);
  y = MulAdd(y, m, 1.4249322787e-1f);
  y = MulAdd(y, m, -1.6668057665e-1f);
  y = MulAdd(y, m, 2.0000714765e-1f);
  y = MulAdd(y, m, -2.4999993993e-1f);
  y = MulAdd(y, m, 3.3333331174e-1f);
  y = y * m * z;
  y = MulAdd(-2.12194440e-4f, e, y);
  y = MulAdd(-0.5f, z, y);
  float result = m + y;
  result = MulAdd(0.693359375f, e, result);
  result = x == std::numeric_limits<float>::infinity() ? x : result;
  result = x == 0.0f ? -std::numeric_limits<float>::infinity() : result;
  result = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : result;
  return x != x ? x : result;
}

// Cephes tanhf: an odd polynomial below 0.625, 1 - 2 / (exp(2|x|) + 1) above.
inline float TanhF(float x) {
  const float ax = x < 0.0f ? -x : x;
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = MulAdd(p, z, 2.06390887954e-2f);
  p = MulAdd(p, z, -5.37397155531e-2f);
  p = MulAdd(p, z, 1.33314422036e-1f);
  p = MulAdd(p, z, -3.33332819422e-1f);
  const float small = MulAdd(p * z, x, x);
  float large = 1.0f - 2.0f / (ExpF(ax + ax) + 1.0f);
  large = x < 0.0f ? -large : large;
  return ax > 0.625f ? large : small;
}

inline float LogisticF(float x) { return 1.0f / (1.0f + ExpF(-x)); }

// erf as x * P(x^2) / Q(x^2) on [-4, 4] (the rational approximation XLA and Eigen use);
// |erf(x)| rounds to 1 beyond 4.
inline float ErfF(float x) {
  float xc = x > 4.0f ? 4.0f : x;
  xc = xc < -4.0f ? -4.0f : xc;
  const float x2 = xc * xc;
  float p = -2.72614225801306e-10f;
  p = MulAdd(p, x2, 2.77068142495902e-08f);
  p = MulAdd(p, x2, -2.10102402082508e-06f);
  p = MulAdd(p, x2, -5.69250639462346e-05f);
  p = MulAdd(p, x2, -7.34990630326855e-04f);
  p = MulAdd(p, x2, -2.95459980854025e-03f);
  p = MulAdd(p, x2, -1.60960333262415e-02f);
  p = p * xc;
  float q = -1.45660718464996e-05f;
  q = MulAdd(q, x2, -2.13374055278905e-04f);
  q = MulAdd(q, x2, -1.68282697438203e-03f);
  q = MulAdd(q, x2, -7.37332916720468e-03f);
  q = MulAdd(q, x2, -1.42647390514189e-02f);
  const float result = p / q;
  return x != x ? x : result;
}

// IEEE 754-2019 maximum/minimum: NaN propagates and -0 < +0 (the interpreter's rule).
inline float MaxF(float a, float b) {
  float r = a > b ? a : b;
  r = a == b ? FromBits(ToBits(a) & ToBits(b)) : r;  // max(-0, +0) = +0
  r = a != a ? a : r;
  return b != b ? b : r;
}

// MaxF lane by lane on 8 floats (GCC vector extension): the same rule, the same bits per lane.
using F32x8 = float __attribute__((vector_size(32)));
using U32x8 = uint32_t __attribute__((vector_size(32)));
inline F32x8 MaxF(F32x8 a, F32x8 b) {
  F32x8 r = a > b ? a : b;
  r = a == b ? reinterpret_cast<F32x8>(reinterpret_cast<U32x8>(a) & reinterpret_cast<U32x8>(b)) : r;
  r = a != a ? a : r;
  return b != b ? b : r;
}

inline float MinF(float a, float b) {
  float r = a < b ? a : b;
  r = a == b ? FromBits(ToBits(a) | ToBits(b)) : r;  // min(-0, +0) = -0
  r = a != a ? a : r;
  return b != b ? b : r;
}

// a D b (IEEE: every comparison with NaN is false but NE), for the loop and expression kernels.
template <ComparisonDirection D, typename T>
inline bool CompareValues(T a, T b) {
  if constexpr (D == ComparisonDirection::kEQ) return a == b;
  if constexpr (D == ComparisonDirection::kNE) return a != b;
  if constexpr (D == ComparisonDirection::kLT) return a < b;
  if constexpr (D == ComparisonDirection::kLE) return a <= b;
  if constexpr (D == ComparisonDirection::kGT) return a > b;
  if constexpr (D == ComparisonDirection::kGE) return a >= b;
}

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_VECTOR_MATH_H_
