// Private: the worker's metric updates that need more than one Get() call: bytes on its
// Training stream by kind and codec (with their f32-equivalent size), and codec time (names
// in pcp/metrics/catalog.h).
//
//   CountSent(message, buffer.Length());       // once per message written to the shepherd
//   CountReceived(message, buffer.Length());   // once per message read from it
//   CountCodecSeconds(codec::Codec::kInt8, CodecOp::kDecode, assembler.codec_seconds());
//   {
//     CodecTimer timer(codec::Codec::kInt8, CodecOp::kEncode);   // counts the scope's time
//     feedback.Compensate(...);
//   }
#ifndef PCP_WORKER_SRC_WORKER_METRICS_H_
#define PCP_WORKER_SRC_WORKER_METRICS_H_

#include <chrono>
#include <cstddef>

#include "pcp/codec/codec.h"
#include "pcp/v1/training.pb.h"

namespace pcp::worker {

// pcp_worker_bytes_sent_total{kind,codec} / pcp_worker_bytes_received_total{kind,codec}:
// `bytes` (the message's size on the wire), by pcp/rpc/traffic_kind.h's kind and codec; and
// for tensor chunks pcp_worker_payload_f32_bytes_{sent,received}_total{kind,codec}.
void CountSent(const v1::WorkerMessage& message, size_t bytes);
void CountReceived(const v1::ShepherdMessage& message, size_t bytes);

enum class CodecOp { kEncode, kDecode };
// pcp_worker_codec_seconds_total{op,codec} += seconds; nothing for f32 (never timed).
void CountCodecSeconds(codec::Codec codec, CodecOp op, double seconds);

// Counts the wall time of its scope with CountCodecSeconds.
class CodecTimer {
 public:
  CodecTimer(codec::Codec codec, CodecOp op) : codec_(codec), op_(op), start_(std::chrono::steady_clock::now()) {}
  ~CodecTimer();
  CodecTimer(const CodecTimer&) = delete;
  CodecTimer& operator=(const CodecTimer&) = delete;

 private:
  codec::Codec codec_;
  CodecOp op_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace pcp::worker

#endif  // PCP_WORKER_SRC_WORKER_METRICS_H_
