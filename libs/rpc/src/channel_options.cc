#include "pcp/rpc/channel_options.h"

#include <grpc/grpc.h>

namespace pcp {

void ApplyStreamChannelOptions(grpc::ChannelArguments* args) {
  args->SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStreamWindowBytes);
  args->SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args->SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
}

void ApplyStreamServerOptions(grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStreamWindowBytes);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder->SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

}  // namespace pcp
