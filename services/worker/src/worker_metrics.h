// Private: the worker's metric updates that need more than one Get() call: bytes on its
// Training stream by kind and codec (with their f32-equivalent size) (names in
// pcp/metrics/catalog.h; codec time: pcp/metrics/codec_seconds.h).
//
//   CountSent(message, buffer.Length());       // once per message written to the shepherd
//   CountReceived(message, buffer.Length());   // once per message read from it
#ifndef PCP_WORKER_SRC_WORKER_METRICS_H_
#define PCP_WORKER_SRC_WORKER_METRICS_H_

#include <cstddef>

#include "pcp/v1/training.pb.h"

namespace pcp::worker {

// pcp_worker_bytes_sent_total{kind,codec} / pcp_worker_bytes_received_total{kind,codec}:
// `bytes` (the message's size on the wire), by pcp/rpc/traffic_kind.h's kind and codec; and
// for tensor chunks pcp_worker_payload_f32_bytes_{sent,received}_total{kind,codec}.
void CountSent(const v1::WorkerMessage& message, size_t bytes);
void CountReceived(const v1::ShepherdMessage& message, size_t bytes);

}  // namespace pcp::worker

#endif  // PCP_WORKER_SRC_WORKER_METRICS_H_
