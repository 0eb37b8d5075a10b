#include "pcp/supervisor/supervisor.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/auth/secret.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/dir_lock.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/termination_signal.h"
#include "pcp/supervisor/control_client.h"
#include "pcp/supervisor/process_manager.h"
#include "pcp/supervisor/supervisor_id.h"

namespace pcp::supervisor {

absl::Status RunSupervisor(const SupervisorConfig& config) {
  PCP_RETURN_IF_ERROR(ValidateSupervisorConfig(config));
  // One supervisor per state_dir: a second one would share the id kept there, and the
  // shepherd would take the two for one node.
  DirLock state_lock;
  if (!config.state_dir.empty()) {
    PCP_RETURN_IF_ERROR(MakeDirs(config.state_dir), _ << "state_dir");
    PCP_ASSIGN_OR_RETURN(state_lock, DirLock::Acquire(config.state_dir, "state_dir"));
  }
  const std::string host = HostName();
  PCP_ASSIGN_OR_RETURN(std::string id, ResolveSupervisorId(config.supervisor_id, config.state_dir, host));

  // The credentials first: a token source that is not one (the token itself given as its
  // path, a malformed file) stops here, before it is logged or put in the worker's argv.
  auth::ClientCredentials credentials{.tls = config.tls};
  PCP_RETURN_IF_ERROR(auth::ResolveTlsFiles("tls", /*server=*/false, &credentials.tls));
  if (!config.token_source.empty()) {
    PCP_ASSIGN_OR_RETURN(credentials.token, auth::LoadSecret(config.token_source), _ << "token");
  }

  ProcessManagerOptions process;
  process.spawn.path = config.worker.binary;
  process.spawn.args = {absl::StrCat("--shepherd=", config.shepherd), absl::StrCat("--supervisor_id=", id)};
  // The worker gets the node's credentials as *sources* (paths, credential:NAME, env:NAME),
  // never the token itself: argv is world-readable in ps and lands in this log line. It
  // inherits the environment, so env: and credential: ($CREDENTIALS_DIRECTORY) resolve the
  // same for it.
  if (config.tls.enabled()) {
    for (const auto& [flag, value] :
         {std::pair{"--tls_ca=", &config.tls.ca}, std::pair{"--tls_cert=", &config.tls.cert},
          std::pair{"--tls_key=", &config.tls.key}}) {
      if (!value->empty()) process.spawn.args.push_back(absl::StrCat(flag, *value));
    }
    process.spawn.args.push_back(absl::StrCat("--tls_refresh_s=", config.tls.refresh_interval_s));
  }
  if (!config.token_source.empty()) process.spawn.args.push_back(absl::StrCat("--token_source=", config.token_source));
  process.spawn.args.insert(process.spawn.args.end(), config.worker.args.begin(), config.worker.args.end());
  process.backoff = config.worker.backoff;
  process.healthy_after = config.worker.healthy_after;
  process.grace = config.worker.grace;
  spdlog::info("supervisor '{}' on {}: worker {} {}; shepherd {}", id, host, process.spawn.path,
               absl::StrJoin(process.spawn.args, " "), config.shepherd);
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<ProcessManager> manager, ProcessManager::Start(process));

  ControlClientOptions control{.shepherd = config.shepherd,
                               .supervisor_id = id,
                               .host = host,
                               .credentials = std::move(credentials),
                               .reconnect = config.reconnect.backoff,
                               .connect_timeout = config.reconnect.connect_timeout};
  std::unique_ptr<ControlClient> client =
      ControlClient::Start(control, manager.get(), [](std::string reason) { RequestTermination(reason); });

  const std::string reason = WaitForTermination();
  spdlog::info("stopping ({}): worker gets SIGTERM, SIGKILL after {}", reason, absl::FormatDuration(config.grace));
  // Worker first, stream second: the shepherd sees the worker drain in the heartbeats.
  manager->Shutdown(config.grace);
  client->Stop();
  spdlog::info("supervisor '{}' stopped", id);
  return absl::OkStatus();
}

}  // namespace pcp::supervisor
