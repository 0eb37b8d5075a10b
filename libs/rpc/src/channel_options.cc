#include "pcp/rpc/channel_options.h"

#include <grpc/grpc.h>

#include <algorithm>

namespace pcp {

int StreamWindowForBudget(int64_t budget_bytes, int64_t streams) {
  const int64_t per_stream = budget_bytes / std::max<int64_t>(streams, 1);
  return static_cast<int>(std::clamp<int64_t>(per_stream, kMinStreamWindowBytes, kStreamWindowBytes));
}

void ApplyStreamChannelOptions(grpc::ChannelArguments* args) {
  args->SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStreamWindowBytes);
  args->SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 1);
  args->SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
}

void ApplyStreamServerOptions(grpc::ServerBuilder* builder, int receive_window_bytes) {
  builder->AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
                              std::clamp(receive_window_bytes, kMinStreamWindowBytes, kStreamWindowBytes));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder->SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

}  // namespace pcp
