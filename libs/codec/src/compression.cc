#include "pcp/codec/compression.h"

namespace pcp::codec {

bool CompressionOptions::Feedback(Codec codec) const {
  if (codec == Codec::kF32) return false;  // nothing is lost
  switch (error_feedback) {
    case FeedbackMode::kOn: return true;
    case FeedbackMode::kOff: return false;
    case FeedbackMode::kAuto: break;
  }
  return PayloadBits(codec) < 16;
}

}  // namespace pcp::codec
