// fake_admin_server: FakeAdminService (fake_admin_service.h) behind a real gRPC server with
// server reflection and the health service on, as the shepherd serves them. Used by
// reflection_test as the small server that needs no cluster.
//
//   fake_admin_server --port=PORT     logs "listening on 127.0.0.1:PORT"; stops on SIGTERM/SIGINT
#include <cstdio>
#include <memory>
#include <string>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "fake_admin_service.h"
#include "pcp/base/termination_signal.h"

ABSL_FLAG(int, port, 0, "port on 127.0.0.1 (0 = any free port)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::Status s = pcp::InstallTerminationHandler(); !s.ok()) {
    std::fprintf(stderr, "fake_admin_server: %s\n", std::string(s.message()).c_str());
    return 1;
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  pcp::testing::FakeAdminService admin;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", absl::GetFlag(FLAGS_port)), grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "fake_admin_server: cannot listen on 127.0.0.1:%d\n", absl::GetFlag(FLAGS_port));
    return 1;
  }
  std::fprintf(stderr, "listening on 127.0.0.1:%d\n", port);
  std::fflush(stderr);
  const std::string why = pcp::WaitForTermination();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  std::fprintf(stderr, "stopped by %s\n", why.c_str());
  return 0;
}
