#include "pcp/codec/encoded.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/sum_of_squares.h"
#include "sparse.h"

namespace pcp::codec {
namespace {

constexpr char kMagic[3] = {'P', 'C', 'Q'};

double ResolveDensity(double density) { return density == 0 ? kDefaultDensity : density; }

// The size of an encoded buffer (for a sparse codec the most at `density`); block_size must be
// valid and, for blockwise codecs, not 0.
uint64_t SizeFor(Codec codec, uint64_t count, uint64_t block_size, double density = kDefaultDensity) {
  if (IsSparse(codec)) return kHeaderSize + internal::MaxSparseBodySize(count, PayloadBits(codec), block_size, density);
  switch (codec) {
    case Codec::kF32: return kHeaderSize + 4 * count;
    case Codec::kBf16: return kHeaderSize + 2 * count;
    case Codec::kInt8: return kHeaderSize + 4 * ((count + block_size - 1) / block_size) + count;
    case Codec::kInt4:
      // Every block but the last has an even size, so the blocks' ceil(m/2) add up to ceil(n/2).
      return kHeaderSize + 4 * ((count + block_size - 1) / block_size) + (count + 1) / 2;
    default: break;
  }
  return 0;
}

int ResolveBlockSize(Codec codec, int block_size) { return block_size == 0 ? DefaultBlockSize(codec) : block_size; }

void WriteHeader(Codec codec, int block_size, uint64_t count, char* out) {
  std::memcpy(out, kMagic, 3);
  out[3] = static_cast<char>(kFormatVersion);
  out[4] = static_cast<char>(static_cast<uint8_t>(codec));
  out[5] = static_cast<char>(block_size == 0 ? 0 : std::countr_zero(static_cast<unsigned>(block_size)));
  out[6] = 0;
  out[7] = 0;
  std::memcpy(out + 8, &count, sizeof count);
}

std::string HexBytes(absl::string_view bytes) {
  std::string out;
  for (char c : bytes) absl::StrAppendFormat(&out, "%s%02x", out.empty() ? "" : " ", static_cast<uint8_t>(c));
  return out;
}

// Checks the scales of a blockwise buffer: each a NaN (a block with a non-finite value) or a
// finite value ≥ 0.
absl::Status CheckScales(const EncodedHeader& header, const char* scales) {
  const uint64_t blocks = (header.count + header.block_size - 1) / header.block_size;
  for (uint64_t b = 0; b < blocks; ++b) {
    float s;
    std::memcpy(&s, scales + 4 * b, sizeof s);
    if (std::isnan(s) || (s >= 0 && s <= std::numeric_limits<float>::max())) continue;
    return absl::InvalidArgumentError(absl::StrCat("encoded ", CodecName(header.codec), " buffer: scale of block ", b,
                                                   " is ", s, " (must be finite and >= 0, or NaN)"));
  }
  return absl::OkStatus();
}

template <bool kAdd>
absl::Status DecodeImpl(absl::string_view bytes, float weight, absl::Span<float> out) {
  absl::StatusOr<EncodedHeader> header = ReadHeader(bytes);
  if (!header.ok()) return header.status();
  if (header->count != out.size()) {
    return absl::InvalidArgumentError(absl::StrCat("encoded ", CodecName(header->codec), " buffer holds ",
                                                   header->count, " values; the output has ", out.size()));
  }
  const char* body = bytes.data() + kHeaderSize;
  const size_t block = static_cast<size_t>(header->block_size);
  if (IsSparse(header->codec)) {
    const absl::string_view sparse = bytes.substr(kHeaderSize);
    const int bits = PayloadBits(header->codec);
    PCP_RETURN_IF_ERROR(internal::CheckSparse(sparse, header->count, bits, block));
    internal::DecodeSparse<kAdd>(sparse, bits, block, weight, out);
    return absl::OkStatus();
  }
  switch (header->codec) {
    case Codec::kF32: internal::DecodeF32<kAdd>(body, weight, out); break;
    case Codec::kBf16: internal::DecodeBf16<kAdd>(body, weight, out); break;
    case Codec::kInt8:
    case Codec::kInt4: {
      if (absl::Status s = CheckScales(*header, body); !s.ok()) return s;
      const char* payload = body + 4 * ((out.size() + block - 1) / block);
      if (header->codec == Codec::kInt8) {
        internal::DecodeInt8<kAdd>(body, payload, block, weight, out);
      } else {
        internal::DecodeInt4<kAdd>(body, payload, block, weight, out);
      }
      break;
    }
    default: break;
  }
  return absl::OkStatus();
}

}  // namespace

size_t EncodedSize(Codec codec, size_t count) {
  return SizeFor(codec, count, static_cast<uint64_t>(DefaultBlockSize(codec)));
}

absl::StatusOr<size_t> EncodedSize(Codec codec, size_t count, int block_size, double density) {
  if (absl::Status s = ValidateBlockSize(codec, block_size); !s.ok()) return s;
  if (absl::Status s = ValidateDensity(density); !s.ok()) return s;
  return SizeFor(codec, count, static_cast<uint64_t>(ResolveBlockSize(codec, block_size)), ResolveDensity(density));
}

std::string Encode(Codec codec, absl::Span<const float> values) {
  if (IsSparse(codec)) return *Encode(codec, values, 0, 0);  // the defaults are valid
  std::string out(EncodedSize(codec, values.size()), '\0');
  // Cannot fail: the default block size is valid and the buffer has the size asked for.
  (void)EncodeInto(codec, values, 0, absl::MakeSpan(out.data(), out.size()));
  return out;
}

absl::StatusOr<std::string> Encode(Codec codec, absl::Span<const float> values, int block_size, double density) {
  if (IsSparse(codec)) {
    PCP_RETURN_IF_ERROR(ValidateBlockSize(codec, block_size));
    PCP_RETURN_IF_ERROR(ValidateDensity(density));
    block_size = ResolveBlockSize(codec, block_size);
    std::string out(kHeaderSize, '\0');
    WriteHeader(codec, block_size, values.size(), out.data());
    out.reserve(kHeaderSize + internal::MaxSparseBodySize(values.size(), PayloadBits(codec),
                                                          static_cast<uint64_t>(block_size), ResolveDensity(density)));
    internal::EncodeSparse(values, PayloadBits(codec), static_cast<size_t>(block_size), ResolveDensity(density), &out);
    return out;
  }
  absl::StatusOr<size_t> size = EncodedSize(codec, values.size(), block_size);
  if (!size.ok()) return size.status();
  std::string out(*size, '\0');
  if (absl::Status s = EncodeInto(codec, values, block_size, absl::MakeSpan(out.data(), out.size())); !s.ok()) return s;
  return out;
}

absl::Status EncodeInto(Codec codec, absl::Span<const float> values, int block_size, absl::Span<char> out) {
  if (IsSparse(codec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("codec ", CodecName(codec), " has sizes that depend on the data: use Encode, not EncodeInto"));
  }
  absl::StatusOr<size_t> size = EncodedSize(codec, values.size(), block_size);
  if (!size.ok()) return size.status();
  if (out.size() != *size) {
    return absl::InvalidArgumentError(absl::StrCat("encoding ", values.size(), " values as ", CodecName(codec),
                                                   " needs ", *size, " bytes; the buffer has ", out.size()));
  }
  block_size = ResolveBlockSize(codec, block_size);
  WriteHeader(codec, block_size, values.size(), out.data());
  char* body = out.data() + kHeaderSize;
  const size_t block = static_cast<size_t>(block_size);
  switch (codec) {
    case Codec::kF32: internal::EncodeF32(values, body); break;
    case Codec::kBf16: internal::EncodeBf16(values, body); break;
    case Codec::kInt8:
      internal::EncodeInt8(values, block, body, body + 4 * ((values.size() + block - 1) / block));
      break;
    case Codec::kInt4:
      internal::EncodeInt4(values, block, body, body + 4 * ((values.size() + block - 1) / block));
      break;
    default:  // sparse: refused above
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<EncodedHeader> ReadHeader(absl::string_view bytes) {
  if (bytes.size() < kHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("encoded buffer of ", bytes.size(), " bytes is shorter than its ", kHeaderSize, "-byte header"));
  }
  if (std::memcmp(bytes.data(), kMagic, 3) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("not an encoded buffer: starts with ", HexBytes(bytes.substr(0, 3)),
                                                   ", expected \"PCQ\" (50 43 51)"));
  }
  const uint8_t version = static_cast<uint8_t>(bytes[3]);
  if (version != kFormatVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("encoded buffer has format version ", version, "; this build reads version ", kFormatVersion));
  }
  absl::StatusOr<Codec> codec = CodecFromWireId(static_cast<uint8_t>(bytes[4]));
  if (!codec.ok()) return absl::InvalidArgumentError(absl::StrCat("encoded buffer: ", codec.status().message()));
  if (bytes[6] != 0 || bytes[7] != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("encoded buffer: reserved header bytes 6..7 are ", HexBytes(bytes.substr(6, 2)), ", not zero"));
  }
  EncodedHeader header;
  header.codec = *codec;
  const int block_log2 = static_cast<uint8_t>(bytes[5]);
  if (IsBlockwise(*codec)) {
    if (block_log2 < kMinBlockLog2 || block_log2 > kMaxBlockLog2) {
      return absl::InvalidArgumentError(absl::StrCat("encoded ", CodecName(*codec), " buffer: block size 2^",
                                                     block_log2, " is not in [2^", kMinBlockLog2, ", 2^", kMaxBlockLog2,
                                                     "]"));
    }
    header.block_size = 1 << block_log2;
  } else if (block_log2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("encoded ", CodecName(*codec), " buffer: block size 2^", block_log2,
                                                   " given, but ", CodecName(*codec), " has no blocks"));
  }
  std::memcpy(&header.count, bytes.data() + 8, sizeof header.count);
  if (IsSparse(*codec)) {
    // Each block takes at least its 8-byte header, and at most a bitmap and a code per value.
    const uint64_t block = static_cast<uint64_t>(header.block_size);
    const uint64_t blocks = header.count / block + (header.count % block != 0 ? 1 : 0);
    const uint64_t body = bytes.size() - kHeaderSize;
    if (blocks > body / internal::kSparseBlockHeader ||
        body > internal::MaxSparseBodySize(header.count, PayloadBits(*codec), block, 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("encoded ", CodecName(*codec), " buffer of ", header.count, " values (block size ",
                       header.block_size, ") cannot take ", bytes.size(), " bytes (", blocks, " blocks of ",
                       internal::kSparseBlockHeader, " to at most ",
                       internal::kSparseBlockHeader + block / 8 + block * PayloadBits(*codec) / 8,
                       " bytes each after the header)"));
    }
    return header;
  }
  // Every codec takes at least half a byte per value, so a count above 2 × size cannot fit
  // (and checking it first keeps SizeFor's arithmetic far from overflow).
  const uint64_t expected = header.count / 2 > bytes.size()
                                ? std::numeric_limits<uint64_t>::max()
                                : SizeFor(*codec, header.count, static_cast<uint64_t>(header.block_size));
  if (expected != bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("encoded ", CodecName(*codec), " buffer of ", header.count, " values",
                     header.block_size > 0 ? absl::StrCat(" (block size ", header.block_size, ")") : "", " needs ",
                     expected == std::numeric_limits<uint64_t>::max() ? "more than " + std::to_string(bytes.size())
                                                                      : std::to_string(expected),
                     " bytes, got ", bytes.size(), bytes.size() < expected ? " (truncated)" : ""));
  }
  return header;
}

absl::Status Decode(absl::string_view bytes, absl::Span<float> out) { return DecodeImpl<false>(bytes, 0, out); }

absl::Status DecodeAdd(absl::string_view bytes, float weight, absl::Span<float> accumulate) {
  if (!std::isfinite(weight)) {
    return absl::InvalidArgumentError(absl::StrCat("decode-add: weight must be finite, got ", weight));
  }
  return DecodeImpl<true>(bytes, weight, accumulate);
}

absl::StatusOr<double> DecodedSumOfSquares(Codec codec, absl::Span<const float> values, int block_size,
                                           double density) {
  double sum = 0;
  if (codec == Codec::kF32) return SumOfSquares(values);
  if (block_size == 0) block_size = DefaultBlockSize(codec);
  PCP_RETURN_IF_ERROR(ValidateBlockSize(codec, block_size));
  PCP_RETURN_IF_ERROR(ValidateDensity(density));
  // Whole blocks at a time (blockwise codecs encode each block on its own, so any grouping of
  // whole blocks decodes the same values as the sender's chunks).
  constexpr size_t kSlice = size_t{1} << 20;
  const size_t slice =
      block_size > 0 ? static_cast<size_t>(block_size) * std::max<size_t>(1, kSlice / static_cast<size_t>(block_size))
                     : kSlice;
  std::string encoded;
  std::vector<float> decoded;
  for (size_t at = 0; at < values.size(); at += slice) {
    const absl::Span<const float> part = values.subspan(at, std::min(slice, values.size() - at));
    if (IsSparse(codec)) {
      PCP_ASSIGN_OR_RETURN(encoded, Encode(codec, part, block_size, density));
    } else {
      PCP_ASSIGN_OR_RETURN(const size_t bytes, EncodedSize(codec, part.size(), block_size));
      encoded.resize(bytes);
      PCP_RETURN_IF_ERROR(EncodeInto(codec, part, block_size, absl::MakeSpan(encoded.data(), encoded.size())));
    }
    decoded.resize(part.size());
    PCP_RETURN_IF_ERROR(Decode(encoded, absl::MakeSpan(decoded)));
    sum += SumOfSquares(decoded);
  }
  return sum;
}

}  // namespace pcp::codec
