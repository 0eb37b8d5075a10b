#include "pcp/auth/tls_credentials.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/support/client_interceptor.h>

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "pcp/auth/secret.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"

namespace pcp::auth {
namespace {

absl::Status CheckPem(absl::string_view what, absl::string_view field, const std::string& path,
                      absl::string_view marker) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ".", field, ": ", text.status().message()));
  if (!absl::StrContains(*text, marker)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ".", field, ": ", path, " has no '", marker, "' (PEM expected)"));
  }
  return absl::OkStatus();
}

// Adds "authorization: Bearer <token>" to every call of the channel.
class BearerInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* value) : value_(value) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", *value_);
    }
    methods->Proceed();
  }

 private:
  const std::string* value_;
};

class BearerFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerFactory(std::string token) : value_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(&value_);
  }

 private:
  // The channel owns the factory, so the value lives as long as any call.
  const std::string value_;
};

}  // namespace

absl::Status ResolveTlsFiles(absl::string_view what, bool server, TlsFiles* files) {
  if (!files->enabled()) return absl::OkStatus();
  for (std::string* path : {&files->ca, &files->cert, &files->key}) {
    absl::StatusOr<std::string> resolved = ResolveCredentialPath(*path);
    if (!resolved.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", resolved.status().message()));
    *path = *std::move(resolved);
  }
  if (files->cert.empty() != files->key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": cert and key go together (one is missing)"));
  }
  if (server && files->cert.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a TLS listener needs cert and key"));
  }
  if (!server && files->ca.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ca is needed to verify the shepherd's certificate"));
  }
  if (files->refresh_interval_s < 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, ".refresh_interval_s: must be >= 1"));
  }
  if (!files->ca.empty()) PCP_RETURN_IF_ERROR(CheckPem(what, "ca", files->ca, "CERTIFICATE"));
  if (!files->cert.empty()) {
    PCP_RETURN_IF_ERROR(CheckPem(what, "cert", files->cert, "CERTIFICATE"));
    PCP_RETURN_IF_ERROR(CheckPem(what, "key", files->key, "PRIVATE KEY"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const TlsFiles& files) {
  if (files.cert.empty() || files.key.empty()) return absl::InvalidArgumentError("a TLS listener needs cert and key");
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(files.key, files.cert, files.ca,
                                                                                       static_cast<unsigned>(
                                                                                           files.refresh_interval_s));
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!files.ca.empty()) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::experimental::TlsServerCredentials(options);
  if (creds == nullptr) return absl::InternalError("gRPC refused the TLS server options");
  return creds;
}

bool IsLoopbackAddress(absl::string_view host_port) {
  absl::string_view host = host_port;
  if (absl::ConsumePrefix(&host, "[")) {
    host = host.substr(0, host.find(']'));
  } else if (const size_t colon = host.rfind(':'); colon != absl::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, written as a dotted quad.
  int parts = 0;
  for (absl::string_view rest = host; !rest.empty(); ++parts) {
    const size_t dot = rest.find('.');
    int octet = 0;
    if (!absl::SimpleAtoi(rest.substr(0, dot), &octet) || octet < 0 || octet > 255) return false;
    if (parts == 0 && octet != 127) return false;
    rest = dot == absl::string_view::npos ? absl::string_view() : rest.substr(dot + 1);
  }
  return parts == 4;
}

absl::Status CheckPlaintextListen(absl::string_view listen, bool tls, bool insecure) {
  if (tls || insecure || IsLoopbackAddress(listen)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing plaintext on non-loopback address ", listen,
      ": configure tls (cert, key, ca for mTLS) or set insecure: true to accept unauthenticated clear text"));
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target, const ClientCredentials& creds,
                                                           const grpc::ChannelArguments& args) {
  std::shared_ptr<grpc::ChannelCredentials> channel_creds;
  if (creds.tls.enabled()) {
    std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> provider;
    if (creds.tls.cert.empty()) {
      provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          creds.tls.ca, static_cast<unsigned>(creds.tls.refresh_interval_s));
    } else {
      provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          creds.tls.key, creds.tls.cert, creds.tls.ca, static_cast<unsigned>(creds.tls.refresh_interval_s));
    }
    grpc::experimental::TlsChannelCredentialsOptions options;
    options.set_certificate_provider(provider);
    options.watch_root_certs();
    if (!creds.tls.cert.empty()) options.watch_identity_key_cert_pairs();
    options.set_verify_server_certs(true);
    channel_creds = grpc::experimental::TlsCredentials(options);
    if (channel_creds == nullptr) return absl::InternalError("gRPC refused the TLS channel options");
  } else {
    if (!creds.token.empty() && !IsLoopbackAddress(target)) {
      return absl::FailedPreconditionError(absl::StrCat("refusing to send a token in clear text to ", target,
                                                        ": give a CA (TLS) for a non-loopback shepherd"));
    }
    channel_creds = grpc::InsecureChannelCredentials();
  }
  if (creds.token.empty()) return grpc::CreateCustomChannel(target, channel_creds, args);
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<BearerFactory>(creds.token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(target, channel_creds, args, std::move(interceptors));
}

}  // namespace pcp::auth
