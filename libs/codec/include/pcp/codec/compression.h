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
//
// SparseLoCo (arXiv 2508.15706) in three settings, which `scheme: sparseloco` sets at once
// (job_config.h; docs/diloco.md#sparseloco):
//   ef_decay: β in (0, 1] (default 1): the worker's error feedback decays, e ← β·e + Δ, send
//     Q(TopK(e)), e ← e − sent; 1 is plain error feedback (bit for bit as before).
//   down_mode: feedback (default) sends θ's update with `down` after the shepherd's error
//     feedback; union sends every nonzero of the update (density 1: no value dropped), its
//     values with `down`'s levels and no error feedback. With no outer momentum the update is
//     −lr × the average of the workers' sparse Δs, so its support is the union of theirs; a
//     sparse `down` codec only (topk2: 2-bit values per block, the rounding the only loss).
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

// How the shepherd sends θ's update down (see the header).
enum class DownMode { kFeedback, kUnion };
inline constexpr std::pair<DownMode, absl::string_view> kDownModeNames[] = {
    {DownMode::kFeedback, "feedback"},
    {DownMode::kUnion, "union"},
};

// A preset of several settings (job YAML diloco.compression.scheme; job_config.cc applies it).
enum class CompressionScheme { kNone, kSparseLoco };
inline constexpr std::pair<CompressionScheme, absl::string_view> kCompressionSchemeNames[] = {
    {CompressionScheme::kNone, "none"},
    {CompressionScheme::kSparseLoco, "sparseloco"},
};

// What `scheme: sparseloco` sets, for each key the job leaves out: up topk2, down topk2 with
// down_mode union, error feedback on, these, and the outer step without momentum (outer_momentum
// 0, outer_lr kSparseLocoOuterLr: θ ← θ − lr·mean(Δ̂)). The outer lr was tuned on the default
// job (40 rounds of τ = 50; 2 and 4 workers): lr 1, the paper's plain average, ended 0.20
// above f32 DiLoCo at 2 workers, lr 4 within 0.01 (docs/diloco.md#sparseloco).
inline constexpr double kSparseLocoDensity = 0.03;
inline constexpr double kSparseLocoEfDecay = 0.95;
inline constexpr double kSparseLocoOuterLr = 4.0;

struct CompressionOptions {
  Codec up = Codec::kF32;    // worker -> shepherd: Δ
  Codec down = Codec::kF32;  // shepherd -> worker: θ updates after the first full θ
  FeedbackMode error_feedback = FeedbackMode::kAuto;
  double density = kDefaultDensity;  // sparse codecs: the fraction of each block kept
  double ef_decay = 1.0;             // β of the worker's error feedback, in (0, 1]
  DownMode down_mode = DownMode::kFeedback;
  CompressionScheme scheme = CompressionScheme::kNone;  // the preset the job named (informational)

  // Whether the sender of `codec` keeps error feedback under this setting.
  bool Feedback(Codec codec) const;
  bool FeedbackUp() const { return Feedback(up); }
  // The shepherd's: never with down_mode union.
  bool FeedbackDown() const { return down_mode != DownMode::kUnion && Feedback(down); }
  // The density the shepherd encodes θ updates with: 1 with down_mode union (every nonzero).
  double DownDensity() const { return down_mode == DownMode::kUnion ? 1.0 : density; }
  bool operator==(const CompressionOptions&) const = default;
};

}  // namespace pcp::codec

#endif  // PCP_CODEC_COMPRESSION_H_
