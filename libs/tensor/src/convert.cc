#include "pcp/tensor/convert.h"

#include <bit>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace pcp {

uint16_t FloatToBFloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    // NaN: keep sign and top payload bits; set the quiet bit so it cannot become inf.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // Round to nearest even on the 16 discarded bits. A carry out of the significand
  // correctly bumps the exponent (and turns the largest values into inf); inf is unchanged.
  uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

float BFloat16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToHalf(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x >= 0x7F800000u) {
    if (x == 0x7F800000u) return sign | 0x7C00u;  // inf
    // NaN: keep the top 10 payload bits; if they are all zero, set one so it stays NaN.
    uint16_t payload = static_cast<uint16_t>(x >> 13) & 0x3FFu;
    return sign | 0x7C00u | (payload != 0 ? payload : 0x0200u);
  }
  // 65520 = 65504 + half an ulp; the tie rounds to even, which is the next power of two.
  if (x >= 0x477FF000u) return sign | 0x7C00u;
  if (x < 0x38800000u) {
    // Below 2^-14: a subnormal half, counted in units of 2^-24.
    uint32_t exponent = x >> 23;
    if (exponent < 102) return sign;                     // below 2^-25: rounds to zero
    uint32_t significand = (x & 0x7FFFFFu) | 0x800000u;  // value = significand * 2^(e-150)
    uint32_t shift = 126 - exponent;                     // 14..24
    uint32_t q = significand >> shift;
    uint32_t rem = significand & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  // may become 0x400: min normal
    return sign | static_cast<uint16_t>(q);
  }
  // Normal: rebias the exponent (127 -> 15) and round away the low 13 significand bits.
  uint32_t h = (x >> 13) - (112u << 10);
  uint32_t rem = x & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carries into the exponent
  return sign | static_cast<uint16_t>(h);
}

float HalfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  uint32_t out;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (mantissa << 13);  // inf or NaN (payload kept)
  } else if (exponent != 0) {
    out = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;  // +-0
  } else {
    // Subnormal: normalise so the leading 1 becomes the implicit bit.
    // value = mantissa * 2^-24; with its top set bit at position p (0..9) that is
    // 1.f * 2^(p - 24), i.e. biased float exponent p + 103.
    int lead = std::countl_zero(mantissa) - 22;  // 9 - p: zeros above the top set bit
    mantissa = (mantissa << (lead + 1)) & 0x3FFu;
    out = sign | (static_cast<uint32_t>(112 - lead) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(out);
}

namespace {

// Rounds v to `bits` significant bits (nearest, ties to even) and returns it as a float,
// which holds the result exactly; a later float -> f16/bf16 conversion is then exact.
float RoundIntToFloat(int64_t v, int bits) {
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (u == 0) return 0.0f;
  int msb = 63 - std::countl_zero(u);
  int shift = msb >= bits ? msb - bits + 1 : 0;
  uint64_t q = u >> shift;
  if (shift > 0) {
    uint64_t rem = u & ((uint64_t{1} << shift) - 1);
    uint64_t halfway = uint64_t{1} << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1))) ++q;
  }
  float f = std::ldexp(static_cast<float>(q), shift);  // q < 2^25: exact
  return v < 0 ? -f : f;
}

template <typename I, typename F>
I SaturatingTruncate(F f) {
  if (std::isnan(f)) return 0;
  constexpr F kLimit = -static_cast<F>(std::numeric_limits<I>::min());  // 2^31 or 2^63, exact
  if (f >= kLimit) return std::numeric_limits<I>::max();
  if (f < -kLimit) return std::numeric_limits<I>::min();
  return static_cast<I>(f);
}

// double -> float rounded to odd: the float toward zero, with its lowest significand bit set
// when the double was not exact. Rounding that float again to f16 / bf16 (at least two bits
// shorter) gives the correctly rounded result, with no double rounding through f32.
float DoubleToFloatRoundOdd(double d) {
  if (std::isnan(d)) return static_cast<float>(d);
  float f = static_cast<float>(d);  // nearest; beyond the float range this is +-inf
  if (static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

// One converter per destination, overloaded on the source's widened value: float for
// f32/f16/bf16 sources (exact), double for f64, int64 for i32/i64/bool sources.
struct ToF32 {
  float operator()(float f) const { return f; }
  float operator()(double d) const { return static_cast<float>(d); }  // nearest even; inf beyond
  float operator()(int64_t v) const { return RoundIntToFloat(v, 24); }
};
struct ToF64 {
  double operator()(float f) const { return f; }
  double operator()(double d) const { return d; }
  double operator()(int64_t v) const { return static_cast<double>(v); }  // nearest even
};
struct ToF16 {
  uint16_t operator()(float f) const { return FloatToHalf(f); }
  uint16_t operator()(double d) const { return FloatToHalf(DoubleToFloatRoundOdd(d)); }
  uint16_t operator()(int64_t v) const { return FloatToHalf(RoundIntToFloat(v, 11)); }
};
struct ToBF16 {
  uint16_t operator()(float f) const { return FloatToBFloat16(f); }
  uint16_t operator()(double d) const { return FloatToBFloat16(DoubleToFloatRoundOdd(d)); }
  uint16_t operator()(int64_t v) const { return FloatToBFloat16(RoundIntToFloat(v, 8)); }
};
struct ToI32 {
  int32_t operator()(float f) const { return SaturatingTruncate<int32_t>(f); }
  int32_t operator()(double d) const { return SaturatingTruncate<int32_t>(d); }
  int32_t operator()(int64_t v) const { return static_cast<int32_t>(v); }
};
struct ToI64 {
  int64_t operator()(float f) const { return SaturatingTruncate<int64_t>(f); }
  int64_t operator()(double d) const { return SaturatingTruncate<int64_t>(d); }
  int64_t operator()(int64_t v) const { return v; }
};
struct ToBool {
  uint8_t operator()(float f) const { return f != 0.0f ? 1 : 0; }
  uint8_t operator()(double d) const { return d != 0.0 ? 1 : 0; }
  uint8_t operator()(int64_t v) const { return v != 0 ? 1 : 0; }
};

template <typename Dst, typename Src, typename Load, typename Store>
void Loop(const void* in, void* out, int64_t n, Load load, Store store) {
  const Src* src = static_cast<const Src*>(in);
  Dst* dst = static_cast<Dst*>(out);
  for (int64_t i = 0; i < n; ++i) dst[i] = store(load(src[i]));
}

template <typename Src, typename Load>
void ConvertFrom(const void* in, void* out, int64_t n, DType to, Load load) {
  switch (to) {
    case DType::kF32: return Loop<float, Src>(in, out, n, load, ToF32{});
    case DType::kF16: return Loop<uint16_t, Src>(in, out, n, load, ToF16{});
    case DType::kBF16: return Loop<uint16_t, Src>(in, out, n, load, ToBF16{});
    case DType::kI32: return Loop<int32_t, Src>(in, out, n, load, ToI32{});
    case DType::kI64: return Loop<int64_t, Src>(in, out, n, load, ToI64{});
    case DType::kBool: return Loop<uint8_t, Src>(in, out, n, load, ToBool{});
    case DType::kF64: return Loop<double, Src>(in, out, n, load, ToF64{});
  }
}

}  // namespace

absl::StatusOr<Tensor> ConvertTensor(const Tensor& input, DType to) {
  if (!input.valid()) return absl::InvalidArgumentError("ConvertTensor: invalid (empty) tensor");
  if (input.dtype() == to) return input.Clone();
  Tensor out(to, input.shape());
  const void* in = input.raw_data();
  void* dst = out.raw_data();
  int64_t n = input.num_elements();
  switch (input.dtype()) {
    case DType::kF32: ConvertFrom<float>(in, dst, n, to, [](float f) { return f; }); break;
    case DType::kF16: ConvertFrom<uint16_t>(in, dst, n, to, [](uint16_t h) { return HalfToFloat(h); }); break;
    case DType::kBF16: ConvertFrom<uint16_t>(in, dst, n, to, [](uint16_t b) { return BFloat16ToFloat(b); }); break;
    case DType::kI32: ConvertFrom<int32_t>(in, dst, n, to, [](int32_t v) { return static_cast<int64_t>(v); }); break;
    case DType::kI64: ConvertFrom<int64_t>(in, dst, n, to, [](int64_t v) { return v; }); break;
    case DType::kBool: ConvertFrom<uint8_t>(in, dst, n, to, [](uint8_t b) { return int64_t{b != 0}; }); break;
    case DType::kF64: ConvertFrom<double>(in, dst, n, to, [](double d) { return d; }); break;
  }
  return out;
}

}  // namespace pcp
