#include "pcp/codec/codec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/base/enum_names.h"

namespace pcp::codec {
namespace {

struct CodecInfo {
  Codec codec;
  int payload_bits;
  int default_block_log2;
  bool sparse;
};

constexpr CodecInfo kInfo[] = {
#define PCP_CODEC_INFO_(e, name, id, bits, log2_block, sparse) {Codec::e, bits, log2_block, sparse},
    PCP_CODEC_LIST(PCP_CODEC_INFO_)
#undef PCP_CODEC_INFO_
};

// Wire ids are the enum's values: dense from 0, so the id indexes the tables.
constexpr bool IdsDense() {
  for (int i = 0; i < kNumCodecs; ++i) {
    if (static_cast<int>(kInfo[i].codec) != i) return false;
  }
  return true;
}
static_assert(IdsDense(), "PCP_CODEC_LIST wire ids must be 0, 1, 2, ... in order");

const CodecInfo& Info(Codec codec) { return kInfo[static_cast<int>(codec)]; }

std::string KnownNames() {
  return absl::StrJoin(kCodecNames, ", ",
                       [](std::string* out, const auto& entry) { absl::StrAppend(out, entry.second); });
}

}  // namespace

absl::string_view CodecName(Codec codec) { return NameOf(kCodecNames, codec); }

absl::StatusOr<Codec> ParseCodec(absl::string_view name) {
  for (const auto& [codec, codec_name] : kCodecNames) {
    if (codec_name == name) return codec;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown codec \"", name, "\" (known: ", KnownNames(), ")"));
}

absl::StatusOr<Codec> CodecFromWireId(int id) {
  if (id < 0 || id >= kNumCodecs) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown codec id ", id, " (this build knows 0..", kNumCodecs - 1, ": ", KnownNames(), ")"));
  }
  return kInfo[id].codec;
}

int PayloadBits(Codec codec) { return Info(codec).payload_bits; }
bool IsBlockwise(Codec codec) { return Info(codec).default_block_log2 > 0; }
bool IsSparse(Codec codec) { return Info(codec).sparse; }

absl::Status ValidateDensity(double density) {
  if (density == 0 || (density >= kMinDensity && density <= 1)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("density must be in [", kMinDensity, ", 1] (0: the default ", kDefaultDensity, "), got ", density));
}
int DefaultBlockSize(Codec codec) {
  const int log2 = Info(codec).default_block_log2;
  return log2 > 0 ? 1 << log2 : 0;
}

absl::Status ValidateBlockSize(Codec codec, int block_size) {
  if (block_size == 0) return absl::OkStatus();
  if (!IsBlockwise(codec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("codec ", CodecName(codec), " has no blocks; block size must be 0, got ", block_size));
  }
  if (block_size < kMinBlockSize || block_size > kMaxBlockSize || (block_size & (block_size - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("block size of ", CodecName(codec), " must be a power of two in [",
                                                   kMinBlockSize, ", ", kMaxBlockSize, "], got ", block_size));
  }
  return absl::OkStatus();
}

double BitsPerValue(Codec codec, int block_size, double density) {
  if (!IsBlockwise(codec)) return PayloadBits(codec);
  if (block_size == 0) block_size = DefaultBlockSize(codec);
  if (IsSparse(codec)) {
    if (density == 0) density = kDefaultDensity;
    return density * PayloadBits(codec) + 1.0 + 64.0 / block_size;
  }
  return PayloadBits(codec) + 32.0 / block_size;
}

}  // namespace pcp::codec
