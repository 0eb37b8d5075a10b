// Time spent encoding and decoding tensors with a codec (pcp/codec/codec.h), counted into a
// service's pcp_*_codec_seconds_total{op,codec} counter. f32 is never encoded, so it is not
// counted.
//
//   metrics::CountCodecSeconds(metrics::kWorkerCodecSecondsTotal, codec::Codec::kInt8,
//                              metrics::CodecOp::kDecode, assembler.codec_seconds());
//   {
//     const metrics::CodecTimer timer(metrics::kShepherdCodecSecondsTotal, codec, metrics::CodecOp::kEncode);
//     ...encode...
//   }   // the scope's wall time is counted here
#ifndef PCP_METRICS_CODEC_SECONDS_H_
#define PCP_METRICS_CODEC_SECONDS_H_

#include <chrono>

#include "pcp/codec/codec.h"
#include "pcp/metrics/catalog.h"

namespace pcp::metrics {

enum class CodecOp { kEncode, kDecode };

// `metric`{op, codec} += seconds; nothing for f32.
void CountCodecSeconds(CounterId metric, codec::Codec codec, CodecOp op, double seconds);

// Counts the wall time of its scope with CountCodecSeconds.
class CodecTimer {
 public:
  CodecTimer(CounterId metric, codec::Codec codec, CodecOp op)
      : metric_(metric), codec_(codec), op_(op), start_(std::chrono::steady_clock::now()) {}
  ~CodecTimer();
  CodecTimer(const CodecTimer&) = delete;
  CodecTimer& operator=(const CodecTimer&) = delete;

 private:
  CounterId metric_;
  codec::Codec codec_;
  CodecOp op_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace pcp::metrics

#endif  // PCP_METRICS_CODEC_SECONDS_H_
