// The one list of codecs for Δ and θ updates on the wire, with what each costs in bits. The
// enum, the names (as job YAML spells them), the wire ids and the formats' parameters all
// derive from PCP_CODEC_LIST. encoded.h encodes and decodes spans of floats with them.
//
//   PCP_ASSIGN_OR_RETURN(Codec codec, ParseCodec("int8"));   // from diloco.compression.up
//   CodecName(codec) == "int8";
//   BitsPerValue(codec) == 8.03125;                           // scales included
//   int b = DefaultBlockSize(codec);                          // 1024
//
// The formats (why absmax, these block sizes and int4 rather than FP4: docs/diloco.md#why-these-formats):
//   f32   32 bits/value. Exact: the bytes of the floats.
//   bf16  16 bits/value. Round to nearest even (as pcp::FloatToBFloat16, bit for bit):
//         relative error ≤ 2^-8 for normal values; values beyond bf16's range become ±inf.
//   int8  8 + 32/1024 = 8.03 bits/value. Symmetric, blockwise absmax: per block of 1024
//         values an f32 scale s = absmax/127, q = round(x/s) in [-127, 127], x̂ = q·s, so
//         |x − x̂| ≤ s/2 for every element (plus f32 rounding).
//   int4  4 + 32/64 = 4.5 bits/value (32/4.5 = 7.1τ× fewer bytes than data-parallel).
//         Symmetric blockwise int4, absmax: per block of 64 an f32 scale s = absmax/7,
//         q = round(x/s) in [-7, 7], |x − x̂| ≤ s/2 = absmax/14.
//
// Blocks: the block size is written in each encoded buffer (a power of two in
// [kMinBlockSize, kMaxBlockSize]); encoders use DefaultBlockSize unless told otherwise, and
// decoders accept any valid one. f32 and bf16 have no blocks and no scales.
#ifndef PCP_CODEC_CODEC_H_
#define PCP_CODEC_CODEC_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::codec {

// V(enumerator, name in job YAML, wire id, payload bits per value, log2 of the default block
// size or 0 for no blocks). Wire ids are part of the encoded format: never reuse one.
#define PCP_CODEC_LIST(V)     \
  V(kF32, "f32", 0, 32, 0)    \
  V(kBf16, "bf16", 1, 16, 0)  \
  V(kInt8, "int8", 2, 8, 10)  \
  V(kInt4, "int4", 3, 4, 6)

enum class Codec : uint8_t {
#define PCP_CODEC_ENUM_(e, name, id, bits, log2_block) e = id,
  PCP_CODEC_LIST(PCP_CODEC_ENUM_)
#undef PCP_CODEC_ENUM_
};

// The one place the codecs are spelled (job files, logs, metric labels).
inline constexpr std::pair<Codec, absl::string_view> kCodecNames[] = {
#define PCP_CODEC_NAME_(e, name, id, bits, log2_block) {Codec::e, name},
    PCP_CODEC_LIST(PCP_CODEC_NAME_)
#undef PCP_CODEC_NAME_
};
inline constexpr int kNumCodecs = sizeof(kCodecNames) / sizeof(kCodecNames[0]);

// Blocks of the blockwise codecs hold a power of two of values in this range.
inline constexpr int kMinBlockLog2 = 5;
inline constexpr int kMaxBlockLog2 = 16;
inline constexpr int kMinBlockSize = 1 << kMinBlockLog2;  // 32
inline constexpr int kMaxBlockSize = 1 << kMaxBlockLog2;  // 65536

absl::string_view CodecName(Codec codec);
// InvalidArgument naming the known codecs for anything else ("int8", not "INT8").
absl::StatusOr<Codec> ParseCodec(absl::string_view name);
// The codec with this wire id, or InvalidArgument.
absl::StatusOr<Codec> CodecFromWireId(int id);

// Bits of payload per value (32, 16, 8, 4), scales not included.
int PayloadBits(Codec codec);
// Whether the codec has blocks with an f32 scale each (int8, int4).
bool IsBlockwise(Codec codec);
// The block size encoders use by default; 0 for f32 and bf16.
int DefaultBlockSize(Codec codec);
// OK for 0 (the default) and, for a blockwise codec, a power of two in
// [kMinBlockSize, kMaxBlockSize]; f32 and bf16 take only 0. Else InvalidArgument.
absl::Status ValidateBlockSize(Codec codec, int block_size);

// Bits per value on the wire for long spans, scales included (headers of 16 bytes per buffer
// not counted): PayloadBits + 32 / block size. block_size 0: the default.
double BitsPerValue(Codec codec, int block_size = 0);

}  // namespace pcp::codec

#endif  // PCP_CODEC_CODEC_H_
