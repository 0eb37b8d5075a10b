#include "reflection_client.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <set>
#include <utility>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"
#include "pcp/rpc/grpc_status.h"
#include "reflection.grpc.pb.h"  // generated from grpc/reflection/v1alpha/reflection.proto

namespace pcp::testing {

namespace pb = ::google::protobuf;
namespace refl = ::grpc::reflection::v1alpha;

struct ReflectionClient::Impl {
  Impl(const std::string& target, absl::Duration timeout, std::shared_ptr<grpc::Channel> to_server)
      : target(target),
        timeout(timeout),
        channel(std::move(to_server)),
        reflection(refl::ServerReflection::NewStub(channel)),
        generic(channel),
        pool(&database),
        factory(&pool) {}

  // One request/response exchange on a ServerReflectionInfo stream (grpcurl keeps one
  // stream open; one per question is simpler and equally valid).
  absl::StatusOr<refl::ServerReflectionResponse> Ask(const refl::ServerReflectionRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    auto stream = reflection->ServerReflectionInfo(&context);
    refl::ServerReflectionResponse response;
    bool wrote = stream->Write(request);
    if (wrote) stream->WritesDone();
    bool got = wrote && stream->Read(&response);
    absl::Status status = FromGrpcStatus(stream->Finish());
    if (!status.ok()) return Annotate(status, absl::StrCat("reflection request to ", target));
    if (!got) return absl::UnavailableError(absl::StrCat("no reflection response from ", target));
    if (response.has_error_response()) {
      return absl::Status(static_cast<absl::StatusCode>(response.error_response().error_code()),
                          absl::StrCat("reflection: ", response.error_response().error_message()));
    }
    return response;
  }

  // Adds the descriptors of a file_descriptor_response, then fetches any import not known yet.
  absl::Status AddFiles(const refl::ServerReflectionResponse& response) {
    if (!response.has_file_descriptor_response()) {
      return absl::InternalError("reflection: expected a file_descriptor_response");
    }
    std::vector<std::string> imports;
    for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
      pb::FileDescriptorProto file;
      if (!file.ParseFromString(bytes)) return absl::InternalError("reflection: unparsable FileDescriptorProto");
      if (!files.insert(file.name()).second) continue;
      for (const std::string& dependency : file.dependency()) imports.push_back(dependency);
      if (!database.Add(file)) {
        return absl::InternalError(absl::StrCat("reflection: conflicting descriptors in ", file.name()));
      }
    }
    for (const std::string& name : imports) {
      if (files.count(name) > 0) continue;
      refl::ServerReflectionRequest request;
      request.set_file_by_filename(name);
      PCP_ASSIGN_OR_RETURN(refl::ServerReflectionResponse imported, Ask(request), _ << "fetching " << name);
      PCP_RETURN_IF_ERROR(AddFiles(imported));
    }
    return absl::OkStatus();
  }

  // The service's descriptor, fetching its file first. The pool is asked only once the
  // files are in the database: a DescriptorPool remembers names it failed to find.
  absl::StatusOr<const pb::ServiceDescriptor*> Service(const std::string& name) {
    if (fetched_symbols.count(name) == 0) {
      refl::ServerReflectionRequest request;
      request.set_file_containing_symbol(name);
      PCP_ASSIGN_OR_RETURN(refl::ServerReflectionResponse response, Ask(request));
      PCP_RETURN_IF_ERROR(AddFiles(response));
      fetched_symbols.insert(name);
    }
    const pb::ServiceDescriptor* service = pool.FindServiceByName(name);
    if (service == nullptr) {
      return absl::NotFoundError(absl::StrCat("reflection: ", target, " has no service '", name, "'"));
    }
    return service;
  }

  std::string target;
  absl::Duration timeout;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<refl::ServerReflection::Stub> reflection;
  grpc::GenericStub generic;
  pb::SimpleDescriptorDatabase database;
  pb::DescriptorPool pool;
  pb::DynamicMessageFactory factory;
  std::set<std::string> files;
  std::set<std::string> fetched_symbols;
};

ReflectionClient::ReflectionClient(const std::string& target, absl::Duration timeout)
    : impl_(std::make_unique<Impl>(target, timeout, grpc::CreateChannel(target, grpc::InsecureChannelCredentials()))) {}

ReflectionClient::ReflectionClient(const std::string& target, const auth::ClientCredentials& credentials,
                                   absl::Duration timeout) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      auth::MakeChannel(target, credentials, grpc::ChannelArguments());
  // A refused combination (a token in clear text to a remote host) is a test's mistake.
  if (!channel.ok()) std::abort();
  impl_ = std::make_unique<Impl>(target, timeout, *std::move(channel));
}

ReflectionClient::~ReflectionClient() = default;

absl::StatusOr<std::vector<std::string>> ReflectionClient::ListServices() {
  refl::ServerReflectionRequest request;
  request.set_list_services("*");
  PCP_ASSIGN_OR_RETURN(refl::ServerReflectionResponse response, impl_->Ask(request));
  if (!response.has_list_services_response()) {
    return absl::InternalError("reflection: expected a list_services_response");
  }
  std::vector<std::string> names;
  for (const refl::ServiceResponse& service : response.list_services_response().service()) {
    names.push_back(service.name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::vector<std::string>> ReflectionClient::ListMethods(absl::string_view service_name) {
  PCP_ASSIGN_OR_RETURN(const pb::ServiceDescriptor* service, impl_->Service(std::string(service_name)));
  std::vector<std::string> names;
  for (int i = 0; i < service->method_count(); ++i) names.push_back(service->method(i)->full_name());
  return names;
}

absl::StatusOr<std::string> ReflectionClient::CallUnary(absl::string_view method_name, absl::string_view request_json,
                                                        absl::Duration timeout) {
  // "pkg.Service/Method" (grpcurl's usual form) or "pkg.Service.Method".
  size_t split = method_name.rfind('/');
  if (split == absl::string_view::npos) split = method_name.rfind('.');
  if (split == absl::string_view::npos || split == 0 || split + 1 == method_name.size()) {
    return absl::InvalidArgumentError(absl::StrCat("method '", method_name, "': expected package.Service/Method"));
  }
  std::string service_name(method_name.substr(0, split));
  std::string short_name(method_name.substr(split + 1));
  PCP_ASSIGN_OR_RETURN(const pb::ServiceDescriptor* service, impl_->Service(service_name));
  const pb::MethodDescriptor* method = service->FindMethodByName(short_name);
  if (method == nullptr) {
    return absl::NotFoundError(absl::StrCat("service ", service_name, " has no method '", short_name, "'"));
  }
  if (method->client_streaming() || method->server_streaming()) {
    return absl::UnimplementedError(absl::StrCat(method->full_name(), " streams; only unary calls are supported"));
  }

  std::unique_ptr<pb::Message> request(impl_->factory.GetPrototype(method->input_type())->New());
  auto parsed = pb::util::JsonStringToMessage(std::string(request_json), request.get());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request JSON for ", method->input_type()->full_name(), ": ", parsed.ToString()));
  }
  std::string request_bytes;
  request->SerializeToString(&request_bytes);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;

  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + (timeout > absl::ZeroDuration() ? timeout : impl_->timeout)));
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  grpc::Status call_status;
  impl_->generic.UnaryCall(&context, absl::StrCat("/", service->full_name(), "/", method->name()), grpc::StubOptions(),
                           &request_buffer, &response_buffer, [&](grpc::Status status) {
                             std::lock_guard<std::mutex> lock(mu);
                             call_status = std::move(status);
                             done = true;
                             done_cv.notify_one();
                           });
  {
    std::unique_lock<std::mutex> lock(mu);
    done_cv.wait(lock, [&] { return done; });
  }
  PCP_RETURN_IF_ERROR(FromGrpcStatus(call_status));

  std::vector<grpc::Slice> slices;
  if (!response_buffer.Dump(&slices).ok()) return absl::InternalError("reading the response buffer");
  std::string response_bytes;
  for (const grpc::Slice& s : slices) {
    response_bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  std::unique_ptr<pb::Message> response(impl_->factory.GetPrototype(method->output_type())->New());
  if (!response->ParseFromString(response_bytes)) {
    return absl::InternalError(absl::StrCat("unparsable ", method->output_type()->full_name()));
  }
  std::string json;
  auto printed = pb::util::MessageToJsonString(*response, &json);
  if (!printed.ok()) return absl::InternalError(printed.ToString());
  return json;
}

}  // namespace pcp::testing
