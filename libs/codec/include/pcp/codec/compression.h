// A job's compression settings (job YAML section diloco.compression): which codec carries
// each worker's Δ up to the shepherd and each round's θ update down to the workers, and
// whether the sender keeps error feedback (pcp/codec/error_feedback.h).
//
//   diloco:
//     compression: {up: int8, down: int8, error_feedback: auto}
//     compression: {up: topk2, down: topk2, density: 0.02}     # sparse: 2% of each block
//
//   CompressionOptions c = job.diloco.compression;
//   if (c.FeedbackUp()) { ...the worker adds last round's residual to its Δ... }
//
// error_feedback: auto (the default) keeps feedback for codecs below 16 bits (int8, int4),
// where what is lost each round is large enough to bias training; true and false force it
// on or off for every lossy codec (f32 never has any). density: the fraction of each block a
// sparse codec (topk2/4/8) keeps, up and down (default kDefaultDensity, 0.02).
#ifndef PCP_CODEC_COMPRESSION_H_
#define PCP_CODEC_COMPRESSION_H_

#include <utility>

#include "absl/strings/string_view.h"
#include "pcp/codec/codec.h"

namespace pcp::codec {

enum class FeedbackMode { kAuto, kOn, kOff };
// The one place the modes are spelled (job files).
inline constexpr std::pair<FeedbackMode, absl::string_view> kFeedbackModeNames[] = {
    {FeedbackMode::kAuto, "auto"},
    {FeedbackMode::kOn, "true"},
    {FeedbackMode::kOff, "false"},
};

struct CompressionOptions {
  Codec up = Codec::kF32;    // worker -> shepherd: Δ
  Codec down = Codec::kF32;  // shepherd -> worker: θ updates after the first full θ
  FeedbackMode error_feedback = FeedbackMode::kAuto;
  double density = kDefaultDensity;  // sparse codecs: the fraction of each block kept

  // Whether the sender of `codec` keeps error feedback under this setting.
  bool Feedback(Codec codec) const;
  bool FeedbackUp() const { return Feedback(up); }
  bool FeedbackDown() const { return Feedback(down); }
  bool operator==(const CompressionOptions&) const = default;
};

}  // namespace pcp::codec

#endif  // PCP_CODEC_COMPRESSION_H_
