#include "kernels.h"

#include "pcp/codec/codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace pcp::codec::internal {
namespace {

static_assert(std::endian::native == std::endian::little, "the encoded format is little-endian");

inline float LoadF32(const char* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void StoreF32(char* p, float v) { std::memcpy(p, &v, sizeof v); }
inline uint16_t LoadU16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void StoreU16(char* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }

template <bool kAdd>
inline void Put(float* out, size_t i, float value, float weight) {
  if constexpr (kAdd) {
    out[i] += weight * value;
  } else {
    out[i] = value;
  }
}

// Round to nearest even for |y| < 2^22: adding 1.5·2^23 leaves the integer in the low
// mantissa bits. Unlike lrintf this has no errno and no UB for any input (a NaN gives some
// integer, clamped by the caller), and it vectorises to one add and one subtract.
inline int32_t RoundToInt(float y) { return std::bit_cast<int32_t>(y + 12582912.0f) - 0x4B400000; }

// max over the block of |x| as f32 bits (sign cleared). For non-negative floats the bit
// patterns order as the values do, so an integer max finds the absmax (and vectorises without
// -ffast-math, which a float max reduction needs); bits ≥ 0x7f800000 mean a NaN or ±inf.
inline uint32_t AbsMaxBits(const float* __restrict x, size_t n) {
  uint32_t m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu);
  return m;
}

constexpr uint32_t kInfBits = 0x7f800000u;

// The scale of a block and the factor that maps its values to [-kQMax, kQMax]; inv 0 for a
// block written as zeros (scale NaN: a non-finite value; scale 0: absmax < kMinBlockAbsMax).
template <int kQMax>
inline void BlockScale(const float* x, size_t m, float& scale, float& inv) {
  const uint32_t bits = AbsMaxBits(x, m);
  if (bits >= kInfBits) {
    scale = std::numeric_limits<float>::quiet_NaN();
    inv = 0;
    return;
  }
  const float absmax = std::bit_cast<float>(bits);
  if (absmax < kMinBlockAbsMax) {
    scale = 0;
    inv = 0;
    return;
  }
  scale = absmax / kQMax;
  inv = kQMax / absmax;
}

template <int kQMax>
inline int32_t Quantize(float x, float inv) {
  return std::clamp(RoundToInt(x * inv), -kQMax, kQMax);
}

// int4 nibbles, two's complement, sign-extended by shifting the nibble to the top of an int32
// and back (arithmetic in C++20). 32-bit lanes, not 8-bit ones: x86 has no byte shifts, and
// with them GCC falls back to scalar conversions.
inline int32_t LowNibble(uint8_t b) { return static_cast<int32_t>(static_cast<uint32_t>(b) << 28) >> 28; }
inline int32_t HighNibble(uint8_t b) { return static_cast<int32_t>(static_cast<uint32_t>(b) << 24) >> 28; }

}  // namespace

void EncodeF32(absl::Span<const float> values, char* payload) {
  if (!values.empty()) std::memcpy(payload, values.data(), values.size() * sizeof(float));
}

void EncodeBf16(absl::Span<const float> values, char* payload) {
  const float* __restrict x = values.data();
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = std::bit_cast<uint32_t>(x[i]);
    // Round to nearest even; a NaN keeps its sign and top payload bits and is made quiet
    // (pcp::FloatToBFloat16's rule, which the tests check bit for bit).
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = (u >> 16) | 0x40u;
    StoreU16(payload + 2 * i, static_cast<uint16_t>((u & 0x7fffffffu) > kInfBits ? nan : rounded));
  }
}

void EncodeInt8(absl::Span<const float> values, size_t block_size, char* scales, char* payload) {
  const size_t n = values.size();
  for (size_t start = 0, b = 0; start < n; start += block_size, ++b) {
    const size_t m = std::min(block_size, n - start);
    const float* __restrict x = values.data() + start;
    int8_t* __restrict q = reinterpret_cast<int8_t*>(payload + start);
    float scale, inv;
    BlockScale<127>(x, m, scale, inv);
    StoreF32(scales + 4 * b, scale);
    if (std::isnan(scale)) {  // x·0 would be NaN for the non-finite values: write zeros
      std::memset(q, 0, m);
      continue;
    }
    for (size_t i = 0; i < m; ++i) q[i] = static_cast<int8_t>(Quantize<127>(x[i], inv));
  }
}

void EncodeInt4(absl::Span<const float> values, size_t block_size, char* scales, char* payload) {
  const size_t n = values.size();
  for (size_t start = 0, b = 0; start < n; start += block_size, ++b) {
    const size_t m = std::min(block_size, n - start);
    const size_t half = (m + 1) / 2;  // bytes of this block; value j and j + half share byte j
    const float* __restrict x = values.data() + start;
    uint8_t* __restrict out = reinterpret_cast<uint8_t*>(payload + start / 2);
    float scale, inv;
    BlockScale<7>(x, m, scale, inv);
    StoreF32(scales + 4 * b, scale);
    if (std::isnan(scale)) {
      std::memset(out, 0, half);
      continue;
    }
    const size_t pairs = m / 2;
    for (size_t j = 0; j < pairs; ++j) {
      const uint32_t lo = static_cast<uint32_t>(Quantize<7>(x[j], inv)) & 0xfu;
      const uint32_t hi = static_cast<uint32_t>(Quantize<7>(x[j + half], inv)) & 0xfu;
      out[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    if (m % 2 == 1) out[half - 1] = static_cast<uint8_t>(static_cast<uint32_t>(Quantize<7>(x[half - 1], inv)) & 0xfu);
  }
}

template <bool kAdd>
void DecodeF32(const char* payload, float weight, absl::Span<float> out) {
  const size_t n = out.size();
  if constexpr (!kAdd) {
    if (n > 0) std::memcpy(out.data(), payload, n * sizeof(float));
  } else {
    float* __restrict y = out.data();
    for (size_t i = 0; i < n; ++i) Put<kAdd>(y, i, LoadF32(payload + 4 * i), weight);
  }
}

template <bool kAdd>
void DecodeBf16(const char* payload, float weight, absl::Span<float> out) {
  const size_t n = out.size();
  float* __restrict y = out.data();
  for (size_t i = 0; i < n; ++i) {
    const float v = std::bit_cast<float>(static_cast<uint32_t>(LoadU16(payload + 2 * i)) << 16);
    Put<kAdd>(y, i, v, weight);
  }
}

template <bool kAdd>
void DecodeInt8(const char* scales, const char* payload, size_t block_size, float weight, absl::Span<float> out) {
  const size_t n = out.size();
  for (size_t start = 0, b = 0; start < n; start += block_size, ++b) {
    const size_t m = std::min(block_size, n - start);
    const int8_t* __restrict q = reinterpret_cast<const int8_t*>(payload + start);
    float* __restrict y = out.data() + start;
    // A NaN scale (a block that held a non-finite value) makes every q·s NaN: no branch.
    const float scale = LoadF32(scales + 4 * b);
    for (size_t i = 0; i < m; ++i) Put<kAdd>(y, i, static_cast<float>(q[i]) * scale, weight);
  }
}

// kRun pairs of a full block: 16 values of each half at a time, a trip count fixed at compile
// time and pointers the compiler knows not to overlap (they are parameters), so each run is a
// few vector instructions with no alias check or remainder loop; a block of 64 is two runs.
inline constexpr size_t kRun = kMinBlockSize / 2;

template <bool kAdd>
inline void DecodeInt4Run(const uint8_t* __restrict in, float scale, float weight, float* __restrict lo,
                          float* __restrict hi) {
  for (size_t j = 0; j < kRun; ++j) {
    Put<kAdd>(lo, j, static_cast<float>(LowNibble(in[j])) * scale, weight);
    Put<kAdd>(hi, j, static_cast<float>(HighNibble(in[j])) * scale, weight);
  }
}

template <bool kAdd>
void DecodeInt4(const char* scales, const char* payload, size_t block_size, float weight, absl::Span<float> out) {
  const size_t n = out.size();
  for (size_t start = 0, b = 0; start < n; start += block_size, ++b) {
    const size_t m = std::min(block_size, n - start);
    const size_t half = (m + 1) / 2;
    const uint8_t* in = reinterpret_cast<const uint8_t*>(payload + start / 2);
    float* y = out.data() + start;
    const float scale = LoadF32(scales + 4 * b);
    if (m == block_size) {  // block sizes are powers of two ≥ 32: half is a multiple of kRun
      for (size_t j = 0; j < half; j += kRun) DecodeInt4Run<kAdd>(in + j, scale, weight, y + j, y + half + j);
      continue;
    }
    const size_t pairs = m / 2;
    for (size_t j = 0; j < pairs; ++j) {
      Put<kAdd>(y, j, static_cast<float>(LowNibble(in[j])) * scale, weight);
      Put<kAdd>(y, j + half, static_cast<float>(HighNibble(in[j])) * scale, weight);
    }
    if (m % 2 == 1) Put<kAdd>(y, half - 1, static_cast<float>(LowNibble(in[half - 1])) * scale, weight);
  }
}

template void DecodeF32<false>(const char*, float, absl::Span<float>);
template void DecodeF32<true>(const char*, float, absl::Span<float>);
template void DecodeBf16<false>(const char*, float, absl::Span<float>);
template void DecodeBf16<true>(const char*, float, absl::Span<float>);
template void DecodeInt8<false>(const char*, const char*, size_t, float, absl::Span<float>);
template void DecodeInt8<true>(const char*, const char*, size_t, float, absl::Span<float>);
template void DecodeInt4<false>(const char*, const char*, size_t, float, absl::Span<float>);
template void DecodeInt4<true>(const char*, const char*, size_t, float, absl::Span<float>);

}  // namespace pcp::codec::internal
