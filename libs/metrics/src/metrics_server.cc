#include "pcp/metrics/metrics_server.h"

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <exception>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

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
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listen, ": ", e.what(),
                                               " (address in use or not local?)"));
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

absl::StatusOr<std::unique_ptr<MetricsServer>> ServeServiceMetrics(Service service, absl::string_view listen) {
  DefaultRegistry().DeclareService(service, PcpVersion());
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  return MetricsServer::Start(listen, DefaultRegistry());
}

}  // namespace pcp::metrics
