#include "pcp/metrics/codec_seconds.h"

#include "pcp/metrics/registry.h"

namespace pcp::metrics {

void CountCodecSeconds(CounterId metric, codec::Codec codec, CodecOp op, double seconds) {
  if (codec == codec::Codec::kF32) return;
  Get(metric, {op == CodecOp::kEncode ? "encode" : "decode", codec::CodecName(codec)}).Increment(seconds);
}

CodecTimer::~CodecTimer() {
  CountCodecSeconds(metric_, codec_, op_,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

}  // namespace pcp::metrics
