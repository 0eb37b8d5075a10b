// The encoded form of a span of floats: a self-describing byte buffer, so a receiver can
// refuse what it cannot decode, with a status that says why.
//
//   std::string bytes = Encode(Codec::kInt8, delta);              // default block size
//   EncodedSize(Codec::kInt8, delta.size()) == bytes.size();
//   PCP_ASSIGN_OR_RETURN(EncodedHeader h, ReadHeader(bytes));      // codec, count, block size
//   std::vector<float> out(h.count);
//   PCP_RETURN_IF_ERROR(Decode(bytes, absl::MakeSpan(out)));
//   PCP_RETURN_IF_ERROR(DecodeAdd(bytes, /*weight=*/0.25f, absl::MakeSpan(sum)));  // sum += w·x̂
//
// Layout (little-endian), 16-byte header then scales then payload:
//   0   "PCQ" and the format version (1)           4 bytes
//   4   codec wire id (codec.h)                     1 byte
//   5   log2 of the block size; 0 for f32/bf16      1 byte
//   6   reserved, zero                              2 bytes
//   8   count: number of values                     8 bytes (u64)
//   16  scales: one f32 per block, ceil(count / block) of them (int8, int4)
//       payload: f32: count × 4 bytes; bf16: count × 2 bytes (the high half of the f32);
//       int8: count bytes, two's complement; int4: per block of m values, ceil(m/2) bytes,
//       byte j holding value j in its low nibble and value j + ceil(m/2) in its high one
//       (two's complement; an odd block's last high nibble is 0). This split, rather than
//       adjacent pairs, keeps both halves of a block contiguous, so the loops vectorise.
//
// Sparse codecs (topk2, topk4, topk8; the header as above, its count the block's values):
// per block of m values (m = the block size but in the last block), in order:
//   u32 word   bits 0..16 k, the values kept (≤ m); bit 17 the index mode (0 bitmap, 1 Rice);
//              bits 18..22 the Rice parameter r (≤ 16; 0 for a bitmap); the rest zero
//   f32 scale  s = absmax / L, L = 2^(bits−1); NaN for a block with a non-finite value (k = 0,
//              decodes to NaN in all m values, as int8/int4); 0 for absmax < 2^-100 (k = 0)
//   indices    (k > 0) bitmap: ceil(m/8) bytes, bit i (LSB first) set for a kept value i, no
//              bit past m; or Rice: each gap g = index − previous index − 1 (the first: its
//              index) as g >> r one-bits, a zero-bit and g's r low bits, LSB first, padded with
//              zero bits to a byte
//   codes      ceil(k·bits/8) bytes, code j in bits j·bits.. (LSB first): the top bit the sign,
//              the rest c, x̂ = ±(c + 1)·s; padding zero
// The encoder keeps k = ceil(density·m) values of largest |x| (ties: the first by position;
// zeros never), codes each as round(|x|/s) clamped to [1, L], and picks the smaller index form
// (the bitmap on a tie) and the r that makes the Rice stream shortest. The size depends on the
// values; EncodedSize gives the most (the bitmap's), EncodeInto refuses sparse codecs. Decoding
// adds only the kept values (a scatter-add: DecodeAdd touches k values per block).
//
// Non-finite values. f32 and bf16 carry NaN and ±inf as they are (bf16 also turns values
// beyond its range into ±inf). An int8 or int4 block that holds a NaN or ±inf is written with
// a NaN scale (and zero payload) and decodes to NaN in all its values: a non-finite Δ stays
// non-finite through any codec, so the shepherd's screening still sees it and refuses it. A
// scale that is ±inf or negative is malformed.
//
// Tiny blocks: an int8/int4 block whose absmax is below 2^-100 is written with scale 0 (all
// zeros): an absolute error under 2^-100, and no scale or reciprocal near f32's subnormals.
//
// int8/int4 decoded values are finite for every buffer an encoder wrote from finite input,
// except at the edge of f32's range (|x| within a rounding of 3.4e38, where q·s may round to
// ±inf); a crafted int8 byte -128 or int4 nibble -8, which encoders never write, decodes to
// -128·s or -8·s.
//
// Malformed input (shorter than its header says, unknown magic, version or codec, reserved
// bytes set, a bad block size, a count that does not match the size, a scale that is ±inf or
// negative; for sparse codecs also k above its block, an index out of its block or a Rice
// stream past the end, a bitmap whose set bits are not k, padding or reserved bits set, bytes
// after the last block) is InvalidArgument naming what is wrong, and nothing is written to the
// output.
#ifndef PCP_CODEC_ENCODED_H_
#define PCP_CODEC_ENCODED_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/codec/codec.h"

namespace pcp::codec {

inline constexpr size_t kHeaderSize = 16;
inline constexpr uint8_t kFormatVersion = 1;

// What an encoded buffer's header says.
struct EncodedHeader {
  Codec codec = Codec::kF32;
  int block_size = 0;  // 0 for f32 and bf16
  uint64_t count = 0;  // values
};

// Bytes of the encoded form of `count` values, header included (sparse codecs: the most, at
// `density`; 0: kDefaultDensity). block_size 0: the codec's default; an invalid block size
// (ValidateBlockSize) or density (ValidateDensity) gives InvalidArgument.
size_t EncodedSize(Codec codec, size_t count);
absl::StatusOr<size_t> EncodedSize(Codec codec, size_t count, int block_size, double density = 0);

// Encodes `values` with the codec's default block size. Never fails: non-finite values are
// encoded as described above.
std::string Encode(Codec codec, absl::Span<const float> values);
// Encodes with `block_size` (0: the default) and, for a sparse codec, `density` (0: the
// default; dense codecs ignore it); InvalidArgument for an invalid block size or density.
absl::StatusOr<std::string> Encode(Codec codec, absl::Span<const float> values, int block_size, double density = 0);
// Encodes into a caller's buffer of exactly EncodedSize(codec, values.size(), block_size)
// bytes; InvalidArgument for another size or an invalid block size, and for sparse codecs.
absl::Status EncodeInto(Codec codec, absl::Span<const float> values, int block_size, absl::Span<char> out);

// Reads and checks the header and that the buffer's size matches it (scales are checked by
// Decode). InvalidArgument for anything malformed.
absl::StatusOr<EncodedHeader> ReadHeader(absl::string_view bytes);

// Decodes `bytes` into `out`, which must hold exactly the buffer's count of values.
absl::Status Decode(absl::string_view bytes, absl::Span<float> out);
// accumulate[i] += weight × x̂[i], in f32, with x̂ as Decode gives it: Decode followed by that
// loop, without the temporary (equal to it up to the product's rounding, which the compiler may
// fuse into an FMA). weight must be finite. On error `accumulate` is unchanged.
absl::Status DecodeAdd(absl::string_view bytes, float weight, absl::Span<float> accumulate);

// Σ x̂[i]², in double, of `values` as a receiver decodes them after encoding with `codec` and
// `block_size` (0: the default): what the receiver's norm of the values will be (up to
// summation order), without holding the encoded form (encoded and decoded a slice of whole
// blocks at a time; each slice summed by pcp::SumOfSquares, sixteen partial sums, and the
// slices' sums added in order). +inf or NaN when a decoded value is not finite. InvalidArgument for an
// invalid block size or density.
absl::StatusOr<double> DecodedSumOfSquares(Codec codec, absl::Span<const float> values, int block_size = 0,
                                           double density = 0);

}  // namespace pcp::codec

#endif  // PCP_CODEC_ENCODED_H_
