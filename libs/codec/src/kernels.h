// The loops of each codec on raw buffers, written so GCC auto-vectorises them at -O3 (checked
// with bench/codec_bench.cc and -fopt-info-vec). Callers (encoded.cc) have checked sizes and
// scales; these functions trust them.
//
//   EncodeInt8(values, 1024, scales, payload);        // scales: 4 × ceil(n/1024) bytes
//   DecodeInt8</*kAdd=*/true>(scales, payload, 1024, 0.5f, absl::MakeSpan(sum));
//
// Buffers are bytes at any alignment (a caller's span, a slice of a received message), so
// every multi-byte load and store goes through memcpy, which compiles to a plain unaligned move.
#ifndef PCP_CODEC_SRC_KERNELS_H_
#define PCP_CODEC_SRC_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"

namespace pcp::codec::internal {

// Blocks whose absmax is below this encode as scale 0 (see encoded.h).
inline constexpr float kMinBlockAbsMax = 0x1p-100f;

void EncodeF32(absl::Span<const float> values, char* payload);
void EncodeBf16(absl::Span<const float> values, char* payload);
void EncodeInt8(absl::Span<const float> values, size_t block_size, char* scales, char* payload);
void EncodeInt4(absl::Span<const float> values, size_t block_size, char* scales, char* payload);

// kAdd false: out[i] = x̂[i] (weight unused); true: out[i] += weight × x̂[i].
template <bool kAdd>
void DecodeF32(const char* payload, float weight, absl::Span<float> out);
template <bool kAdd>
void DecodeBf16(const char* payload, float weight, absl::Span<float> out);
template <bool kAdd>
void DecodeInt8(const char* scales, const char* payload, size_t block_size, float weight, absl::Span<float> out);
template <bool kAdd>
void DecodeInt4(const char* scales, const char* payload, size_t block_size, float weight, absl::Span<float> out);

}  // namespace pcp::codec::internal

#endif  // PCP_CODEC_SRC_KERNELS_H_
