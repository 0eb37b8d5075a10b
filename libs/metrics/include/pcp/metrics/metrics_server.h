// Serves a Registry at http://HOST:PORT/metrics (prometheus-cpp's Exposer, CivetWeb).
//
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> server,
//                        MetricsServer::Start("127.0.0.1:0", DefaultRegistry()));
//   server->port();   // the bound port (port 0 asked for any free one)
//   server->url();    // "http://127.0.0.1:43121/metrics"
//
// Errors: InvalidArgument for an address that is not HOST:PORT with a port in 0..65535,
// Unavailable when it cannot listen (port in use, address not local). The registry must
// outlive the server. Destroying the server stops it.
#ifndef PCP_METRICS_METRICS_SERVER_H_
#define PCP_METRICS_METRICS_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/metrics/registry.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace pcp::metrics {

class MetricsServer {
 public:
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(absl::string_view listen, Registry& registry);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  // HOST:PORT with the bound port.
  const std::string& address() const { return address_; }
  std::string url() const { return "http://" + address_ + "/metrics"; }

 private:
  MetricsServer() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  std::string address_;
};

// What every service's main() does: declares the service's metrics in DefaultRegistry() (with
// pcp_build_info's version = PCP's), then serves them on `listen`; nullptr when `listen` is ""
// (metrics off). Errors as Start.
//
// `address_file` (optional; each service's --metrics_address_file): once serving, the bound
// HOST:PORT and a newline are written to it atomically, so that a script can ask for port 0
// and read the port back without racing anyone for it. With port 0 and an address file left
// by an earlier run (a worker its supervisor restarted), the port in the file is tried first:
// a restarted process keeps its metrics address whenever that port is still free, and takes
// any free one otherwise. A file that cannot be written is an error (the server is stopped).
absl::StatusOr<std::unique_ptr<MetricsServer>> ServeServiceMetrics(Service service, absl::string_view listen,
                                                                   absl::string_view address_file = "");

// PCP's version, as pcp_build_info reports it.
absl::string_view PcpVersion();

// Checks that `listen` is "" (metrics off) or HOST:PORT with a port in 0..65535; for config
// validation, before anything starts.
absl::Status ValidateMetricsListen(absl::string_view listen);

}  // namespace pcp::metrics

#endif  // PCP_METRICS_METRICS_SERVER_H_
