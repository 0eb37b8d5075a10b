// A test-only gRPC client that knows no service at compile time, as grpcurl: it asks the
// server for its schema through server reflection (grpc.reflection.v1alpha, the version
// gRPC C++ 1.51 serves), builds descriptors at run time and calls methods with JSON bodies.
//
//   ReflectionClient client("127.0.0.1:7070");
//   absl::StatusOr<std::vector<std::string>> services = client.ListServices();
//       // {"grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection", "pcp.v1.Admin", ...}
//   absl::StatusOr<std::string> job = client.CallUnary("pcp.v1.Admin/GetJob", R"({"jobId": "job-0001"})");
//       // the response as JSON (proto3 JSON mapping: lowerCamelCase names)
//
// What each step does, and the grpcurl command it mirrors:
//   ListServices()          grpcurl -plaintext HOST:PORT list
//   ListMethods(service)    grpcurl -plaintext HOST:PORT list pcp.v1.Admin
//   CallUnary(method, json) grpcurl -plaintext -d JSON HOST:PORT pcp.v1.Admin/GetJob
// CallUnary fetches the file declaring the service (ServerReflectionInfo with
// file_containing_symbol) and every file it imports (file_by_filename), puts them in a
// DescriptorPool, makes the request message with a DynamicMessageFactory, fills it with
// JsonStringToMessage and sends its bytes through grpc::GenericStub.
//
// Every call has a deadline (`timeout`). Errors are the server's status (NOT_FOUND,
// INVALID_ARGUMENT, ...) or INVALID_ARGUMENT for a request JSON that does not fit the type.
// Not thread-safe. The binary must not also link gRPC's reflection *server* library
// (grpc++_reflection): both would register the same reflection.proto messages.
#ifndef PCP_TESTS_SERVICES_E2E_REFLECTION_CLIENT_H_
#define PCP_TESTS_SERVICES_E2E_REFLECTION_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pcp/auth/tls_credentials.h"

namespace pcp::testing {

class ReflectionClient {
 public:
  // `target`: HOST:PORT, plaintext (as grpcurl -plaintext). Connects lazily.
  explicit ReflectionClient(const std::string& target, absl::Duration timeout = absl::Seconds(10));
  // With TLS files and/or a bearer token, as `grpcurl -cacert CA -cert C -key K
  // -H 'authorization: Bearer T'` (pcp/auth/tls_credentials.h; files already resolved).
  ReflectionClient(const std::string& target, const auth::ClientCredentials& credentials,
                   absl::Duration timeout = absl::Seconds(10));
  ~ReflectionClient();
  ReflectionClient(const ReflectionClient&) = delete;
  ReflectionClient& operator=(const ReflectionClient&) = delete;

  // Fully qualified names of the services the server exposes, sorted.
  absl::StatusOr<std::vector<std::string>> ListServices();
  // Fully qualified method names of `service` ("pcp.v1.Admin.SubmitJob"), in declaration order.
  absl::StatusOr<std::vector<std::string>> ListMethods(absl::string_view service);
  // Calls a unary method, named "package.Service/Method" or "package.Service.Method", with
  // a request given as JSON; returns the response as JSON. `timeout` overrides the default.
  absl::StatusOr<std::string> CallUnary(absl::string_view method, absl::string_view request_json,
                                        absl::Duration timeout = absl::ZeroDuration());

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pcp::testing

#endif  // PCP_TESTS_SERVICES_E2E_REFLECTION_CLIENT_H_
