// Encoded Δ/θ buffers (libs/codec; they will arrive from workers and the shepherd): decoding
// any bytes returns a Status, never crashes, and writes nothing on failure. What decodes
// re-encodes with the same codec and block size, and that decodes back: bit for bit for f32
// and bf16 (NaN stays NaN), within half a step for int8/int4, and non-finite stays non-finite.
// Sparse buffers (topk2/4/8): decode and decode-add agree, and the decoded values re-encoded
// with every value kept (density 1) decode to the same non-zeros with the same signs.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "pcp/codec/encoded.h"

namespace {

using pcp::codec::Codec;

bool Finite(float v) { return std::isfinite(v); }

void CheckSparseReencoded(const pcp::codec::EncodedHeader& header, const std::vector<float>& y) {
  absl::StatusOr<std::string> again = pcp::codec::Encode(header.codec, y, header.block_size, 1.0);
  PCP_FUZZ_CHECK(again.ok());
  std::vector<float> z(y.size());
  PCP_FUZZ_CHECK(pcp::codec::Decode(*again, absl::MakeSpan(z)).ok());
  bool finite = true;
  for (float v : y) finite = finite && Finite(v);
  for (size_t i = 0; i < y.size(); ++i) {
    if (!Finite(y[i])) {
      PCP_FUZZ_CHECK(!Finite(z[i]));
    } else if (finite && std::fabs(y[i]) >= 0x1p-90f) {  // a non-finite value makes its block NaN
      PCP_FUZZ_CHECK(z[i] != 0 && std::signbit(z[i]) == std::signbit(y[i]));
    }
  }
}

void CheckReencoded(const pcp::codec::EncodedHeader& header, const std::vector<float>& y) {
  if (pcp::codec::IsSparse(header.codec)) return CheckSparseReencoded(header, y);
  absl::StatusOr<std::string> again = pcp::codec::Encode(header.codec, y, header.block_size);
  PCP_FUZZ_CHECK(again.ok());
  std::vector<float> z(y.size());
  PCP_FUZZ_CHECK(pcp::codec::Decode(*again, absl::MakeSpan(z)).ok());
  if (!pcp::codec::IsBlockwise(header.codec)) {
    for (size_t i = 0; i < y.size(); ++i) {
      PCP_FUZZ_CHECK(std::isnan(y[i]) ? std::isnan(z[i]) : std::memcmp(&y[i], &z[i], sizeof(float)) == 0);
    }
    return;
  }
  const float qmax = header.codec == Codec::kInt8 ? 127.0f : 7.0f;
  const size_t block = static_cast<size_t>(header.block_size);
  for (size_t start = 0; start < y.size(); start += block) {
    const size_t end = std::min(y.size(), start + block);
    bool finite = true;
    float absmax = 0;
    for (size_t i = start; i < end; ++i) {
      finite = finite && Finite(y[i]);
      absmax = std::max(absmax, std::fabs(y[i]));
    }
    for (size_t i = start; i < end; ++i) {
      if (!finite) {
        PCP_FUZZ_CHECK(std::isnan(z[i]));
      } else if (absmax < 0x1p-100f) {
        PCP_FUZZ_CHECK(z[i] == 0.0f);
      } else if (Finite(z[i])) {  // q·s may round to ±inf only at the edge of f32's range
        PCP_FUZZ_CHECK(std::fabs(z[i] - y[i]) <= absmax / qmax / 2 + 0x1p-21f * absmax);
      } else {
        PCP_FUZZ_CHECK(absmax > 1e38f);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes = pcp::fuzz::AsText(data, size);
  absl::StatusOr<pcp::codec::EncodedHeader> header = pcp::codec::ReadHeader(bytes);
  if (!header.ok()) {
    std::vector<float> none;
    PCP_FUZZ_CHECK(pcp::codec::Decode(bytes, absl::MakeSpan(none)).code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  // count ≤ 2 × size for dense codecs (ReadHeader checked the size); a sparse block takes 8
  // bytes and up to 65536 values, so bound what is allocated.
  if (header->count > (uint64_t{1} << 20)) return 0;
  std::vector<float> y(header->count, 7.0f);
  const absl::Status decoded = pcp::codec::Decode(bytes, absl::MakeSpan(y));
  std::vector<float> acc(header->count, 0.0f);
  const absl::Status added = pcp::codec::DecodeAdd(bytes, 1.0f, absl::MakeSpan(acc));
  PCP_FUZZ_CHECK(decoded.ok() == added.ok());
  if (!decoded.ok()) {
    PCP_FUZZ_CHECK(decoded.code() == absl::StatusCode::kInvalidArgument);
    for (float v : acc) PCP_FUZZ_CHECK(v == 0.0f);  // a failed decode-add adds nothing
    return 0;
  }
  for (size_t i = 0; i < y.size(); ++i) PCP_FUZZ_CHECK(std::isnan(y[i]) ? std::isnan(acc[i]) : acc[i] == y[i]);
  CheckReencoded(*header, y);
  return 0;
}
