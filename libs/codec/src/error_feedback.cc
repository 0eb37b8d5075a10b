#include "pcp/codec/error_feedback.h"

#include <bit>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "pcp/codec/encoded.h"

namespace pcp::codec {

absl::StatusOr<std::string> ErrorFeedback::EncodeWithFeedback(Codec codec, absl::Span<const float> delta,
                                                              int block_size, double density) {
  if (absl::Status s = ValidateBlockSize(codec, block_size); !s.ok()) return s;
  if (absl::Status s = ValidateDensity(density); !s.ok()) return s;
  if (!residual_.empty() && residual_.size() != delta.size()) {
    return absl::InvalidArgumentError(absl::StrCat("error feedback: Δ has ", delta.size(),
                                                   " values, the residual of this buffer ", residual_.size()));
  }
  if (codec == Codec::kF32 && residual_.empty()) return Encode(codec, delta);

  // The residual's storage becomes the input (delta + residual), is encoded, and then
  // becomes input − decoded by decoding with weight −1 (the same rounding as a subtraction).
  if (residual_.empty()) {
    residual_.assign(delta.begin(), delta.end());
  } else if (decay_ == 1.0f) {
    float* __restrict r = residual_.data();
    const float* __restrict d = delta.data();
    for (size_t i = 0; i < delta.size(); ++i) r[i] += d[i];
  } else {
    const float beta = decay_;
    float* __restrict r = residual_.data();
    const float* __restrict d = delta.data();
    for (size_t i = 0; i < delta.size(); ++i) r[i] = beta * r[i] + d[i];
  }
  absl::StatusOr<std::string> bytes = Encode(codec, residual_, block_size, density);
  if (!bytes.ok()) return bytes.status();  // not reached: the block size and density were checked above
  if (absl::Status s = DecodeAdd(*bytes, -1.0f, absl::MakeSpan(residual_)); !s.ok()) return s;
  // A non-finite input or decoded value leaves no residual (see the header).
  float* __restrict r = residual_.data();
  for (size_t i = 0; i < residual_.size(); ++i) {
    const bool finite = (std::bit_cast<uint32_t>(r[i]) & 0x7fffffffu) < 0x7f800000u;
    r[i] = finite ? r[i] : 0.0f;
  }
  if (codec == Codec::kF32) residual_.clear();  // f32 is exact: nothing left to carry
  return bytes;
}

absl::Status ErrorFeedback::Compensate(Codec codec, absl::Span<float> delta, int block_size, double density) {
  if (absl::Status s = ValidateBlockSize(codec, block_size); !s.ok()) return s;
  if (absl::Status s = ValidateDensity(density); !s.ok()) return s;
  if (!residual_.empty()) {
    if (residual_.size() != delta.size()) {
      return absl::InvalidArgumentError(absl::StrCat("error feedback: Δ has ", delta.size(),
                                                     " values, the residual of this buffer ", residual_.size()));
    }
    float* __restrict d = delta.data();
    const float* __restrict r = residual_.data();
    if (decay_ == 1.0f) {
      for (size_t i = 0; i < delta.size(); ++i) d[i] += r[i];
    } else {
      const float beta = decay_;
      for (size_t i = 0; i < delta.size(); ++i) d[i] += beta * r[i];
    }
    residual_.clear();
  }
  // `delta` is now the input; with no residual kept, encoding it keeps input − decoded.
  absl::StatusOr<std::string> bytes = EncodeWithFeedback(codec, delta, block_size, density);
  return bytes.status();
}

absl::Status ErrorFeedback::set_decay(double decay) {
  if (!(decay > 0 && decay <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("error feedback: decay must be in (0, 1], got ", decay));
  }
  decay_ = static_cast<float>(decay);
  return absl::OkStatus();
}

}  // namespace pcp::codec
