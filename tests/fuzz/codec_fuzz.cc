// Encoded Δ/θ buffers (libs/codec; they will arrive from workers and the shepherd): decoding
// any bytes returns a Status, never crashes, and writes nothing on failure. What decodes
// re-encodes with the same codec and block size, and that decodes back: bit for bit for f32
// and bf16 (NaN stays NaN), within half a step for int8/int4, and non-finite stays non-finite.
// Sparse buffers (topk2/4/8): decode and decode-add agree, and the decoded values re-encoded
// with every value kept (density 1, as the shepherd's down_mode union sends an update) decode
// to the same non-zeros with the same signs, and zeros stay zero. Error feedback with a decay
// (SparseLoCo's β, from the buffer's last byte) over the decoded values twice keeps a finite
// residual, zero where the input was not finite.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "pcp/codec/encoded.h"
#include "pcp/codec/error_feedback.h"

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
    } else if (finite && y[i] == 0) {
      PCP_FUZZ_CHECK(z[i] == 0);  // the support is kept exactly: nothing added
    }
  }
}

void CheckDecayedFeedback(const pcp::codec::EncodedHeader& header, const std::vector<float>& y, uint8_t beta_byte) {
  if (y.size() > 2048) return;  // enough for the property; keeps executions fast
  pcp::codec::ErrorFeedback feedback;
  PCP_FUZZ_CHECK(feedback.set_decay((beta_byte + 1) / 256.0).ok());  // (0, 1]
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<std::string> sent = feedback.EncodeWithFeedback(header.codec, y, header.block_size, 0.03);
    PCP_FUZZ_CHECK(sent.ok());
    if (header.codec == Codec::kF32) {
      PCP_FUZZ_CHECK(feedback.residual().empty());
      continue;
    }
    PCP_FUZZ_CHECK(feedback.residual().size() == y.size());
    for (float r : feedback.residual()) PCP_FUZZ_CHECK(Finite(r));
    for (size_t i = 0; i < y.size(); ++i) {
      if (!Finite(y[i])) PCP_FUZZ_CHECK(feedback.residual()[i] == 0.0f);
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
  CheckDecayedFeedback(*header, y, data[size - 1]);
  return 0;
}
