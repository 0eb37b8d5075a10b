#include "pcp/metrics/metrics_server.h"

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/file.h"

namespace pcp::metrics {

absl::Status ValidateMetricsListen(absl::string_view listen) {
  if (listen.empty()) return absl::OkStatus();
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || colon == 0 || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", listen, "': expected HOST:PORT with a port in 0..65535"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(absl::string_view listen, Registry& registry) {
  if (listen.empty()) return absl::InvalidArgumentError("metrics address is empty");
  if (absl::Status s = ValidateMetricsListen(listen); !s.ok()) return s;
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  try {
    // CivetWeb throws when it cannot bind (port in use, address not local, bad host).
    server->exposer_ = std::make_unique<prometheus::Exposer>(std::string(listen), /*num_threads=*/2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", listen, ": ", e.what(), " (address in use or not local?)"));
  }
  std::vector<int> ports = server->exposer_->GetListeningPorts();
  if (ports.empty() || ports[0] <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listen, ": no listening port"));
  }
  server->port_ = ports[0];
  server->address_ = absl::StrCat(listen.substr(0, listen.rfind(':')), ":", server->port_);
  server->exposer_->RegisterCollectable(registry.prometheus_registry());
  return server;
}

MetricsServer::~MetricsServer() = default;

absl::string_view PcpVersion() { return PCP_VERSION; }

absl::StatusOr<std::unique_ptr<MetricsServer>> ServeServiceMetrics(Service service, absl::string_view listen,
                                                                   absl::string_view address_file) {
  DefaultRegistry().DeclareService(service, PcpVersion());
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  if (absl::Status s = ValidateMetricsListen(listen); !s.ok()) return s;
  const absl::string_view host = listen.substr(0, listen.rfind(':'));
  absl::StatusOr<std::unique_ptr<MetricsServer>> server = absl::UnavailableError("not started");
  if (!address_file.empty() && absl::EndsWith(listen, ":0")) {
    // The previous run's port, if the file holds one for this host.
    absl::StatusOr<std::string> previous = ReadFile(address_file);
    int port = 0;
    if (previous.ok()) {
      const absl::string_view text = absl::StripAsciiWhitespace(*previous);
      if (absl::StartsWith(text, absl::StrCat(host, ":")) && absl::SimpleAtoi(text.substr(host.size() + 1), &port) &&
          port > 0 && port <= 65535) {
        server = MetricsServer::Start(absl::StrCat(host, ":", port), DefaultRegistry());
      }
    }
  }
  if (!server.ok()) server = MetricsServer::Start(listen, DefaultRegistry());
  if (!server.ok() || address_file.empty()) return server;
  if (absl::Status s = WriteFileAtomic(address_file, (*server)->address() + "\n"); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("--metrics_address_file: ", s.message()));
  }
  return server;
}

}  // namespace pcp::metrics
