// pcpctl: the admin CLI of a PCP cluster (see pcp/pcpctl/pcpctl.h for the commands).
//
//   pcpctl submit config/jobs/shakespeare_char.yaml
//   pcpctl watch job-0001
//   pcpctl --shepherd=10.0.0.5:7070 workers
//   pcpctl --shepherd=shepherd.example:7070 --ca=ca.pem --cert=me.pem --key=me.key jobs
//   PCP_TOKEN_FILE=~/.pcp/token pcpctl cluster
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "pcp/auth/secret.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/auth/tls_failures.h"
#include "pcp/pcpctl/pcpctl.h"

ABSL_FLAG(std::string, shepherd, "",
          "HOST:PORT of the shepherd's Admin service (default: $PCP_SHEPHERD, else 127.0.0.1:7070)");
ABSL_FLAG(double, timeout, 30, "deadline of each call, in s");
ABSL_FLAG(double, reconnect_timeout, 120, "watch: keep reconnecting this long (s) while the shepherd is unavailable");
ABSL_FLAG(bool, quiet, false, "submit: print only the job id; sample: no trailing info line");
ABSL_FLAG(bool, yaml, false, "status: also print the job's effective configuration");
ABSL_FLAG(uint32_t, limit, 0, "jobs: show at most this many (0 = all)");
ABSL_FLAG(std::string, reason, "", "cancel, restart, drain: recorded reason");
ABSL_FLAG(uint32_t, grace_ms, 0, "restart, drain: SIGTERM-to-SIGKILL grace in ms (0 = default)");
ABSL_FLAG(std::string, prompt, "", "sample: text to continue (default: the job's prompt)");
ABSL_FLAG(uint32_t, max_new_tokens, 0, "sample: tokens to generate (0 = the job's setting)");
ABSL_FLAG(std::optional<double>, temperature, std::nullopt, "sample: softmax temperature (> 0)");
ABSL_FLAG(std::optional<int64_t>, top_k, std::nullopt, "sample: keep the k most likely tokens (0 = all)");
ABSL_FLAG(uint64_t, seed, 1337, "sample: random seed");
ABSL_FLAG(bool, csv, false, "history: print CSV (a header, then one line per round)");
ABSL_FLAG(bool, json, false,
          "history: print JSON lines (one RoundRecord object per round); status, workers: print the reply as JSON");
ABSL_FLAG(std::string, out, "loss.png", "plot: the PNG file to write");
ABSL_FLAG(std::string, ca, "", "CA certificate (PEM) of the shepherd; set = TLS (default: $PCP_CA)");
ABSL_FLAG(std::string, cert, "", "client certificate (PEM) for mTLS (default: $PCP_CERT)");
ABSL_FLAG(std::string, key, "", "client private key (PEM) for mTLS (default: $PCP_KEY)");
ABSL_FLAG(std::string, token_file, "",
          "file holding a bearer token, or env:NAME / credential:NAME (default: $PCP_TOKEN_FILE)");

namespace {

// The flags as PcpctlOptions; false (after one line on stderr) for a bad value.
bool OptionsFromFlags(pcp::pcpctl::PcpctlOptions* options) {
  options->shepherd =
      absl::GetFlag(FLAGS_shepherd).empty() ? pcp::pcpctl::DefaultShepherdAddress() : absl::GetFlag(FLAGS_shepherd);
  if (!(absl::GetFlag(FLAGS_timeout) > 0) || !(absl::GetFlag(FLAGS_reconnect_timeout) >= 0)) {
    std::fprintf(stderr, "pcpctl: --timeout must be > 0 and --reconnect_timeout >= 0\n");
    return false;
  }
  options->timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout));
  options->reconnect_timeout = absl::Seconds(absl::GetFlag(FLAGS_reconnect_timeout));
  options->quiet = absl::GetFlag(FLAGS_quiet);
  options->show_yaml = absl::GetFlag(FLAGS_yaml);
  options->limit = absl::GetFlag(FLAGS_limit);
  options->reason = absl::GetFlag(FLAGS_reason);
  options->grace_ms = absl::GetFlag(FLAGS_grace_ms);
  options->prompt = absl::GetFlag(FLAGS_prompt);
  options->max_new_tokens = absl::GetFlag(FLAGS_max_new_tokens);
  options->temperature = absl::GetFlag(FLAGS_temperature);
  options->top_k = absl::GetFlag(FLAGS_top_k);
  options->seed = absl::GetFlag(FLAGS_seed);
  options->csv = absl::GetFlag(FLAGS_csv);
  options->json = absl::GetFlag(FLAGS_json);
  options->out = absl::GetFlag(FLAGS_out);
  // Credentials: a flag, else its environment variable. Only locations are taken from the
  // command line; the token is read from where they point.
  auto flag_or_env = [](const absl::Flag<std::string>& flag, const char* env) {
    std::string v = absl::GetFlag(flag);
    if (v.empty()) {
      const char* e = std::getenv(env);
      v = e == nullptr ? "" : e;
    }
    return v;
  };
  options->credentials.tls = {.ca = flag_or_env(FLAGS_ca, "PCP_CA"),
                              .cert = flag_or_env(FLAGS_cert, "PCP_CERT"),
                              .key = flag_or_env(FLAGS_key, "PCP_KEY")};
  if (absl::Status s = pcp::auth::ResolveTlsFiles("--ca/--cert/--key", /*server=*/false, &options->credentials.tls);
      !s.ok()) {
    std::fprintf(stderr, "pcpctl: %s\n", std::string(s.message()).c_str());
    return false;
  }
  if (const std::string source = flag_or_env(FLAGS_token_file, "PCP_TOKEN_FILE"); !source.empty()) {
    absl::StatusOr<std::string> token = pcp::auth::LoadSecret(source);
    if (!token.ok()) {
      std::fprintf(stderr, "pcpctl: --token_file: %s\n", std::string(token.status().message()).c_str());
      return false;
    }
    options->credentials.token = *std::move(token);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(pcp::pcpctl::UsageText());
  // --help lists this tool's flags (those defined in tools/pcpctl/), not every library's.
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) { return absl::StrContains(file, "pcpctl"); };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  pcp::pcpctl::PcpctlOptions options;
  if (!OptionsFromFlags(&options)) return pcp::pcpctl::kExitUsage;
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  // A failed handshake is said once, precisely, in pcpctl's own error line; gRPC's log line
  // for it would only repeat OpenSSL's words.
  pcp::auth::InstallHandshakeFailureHook(nullptr, /*quiet_handshake_lines=*/true);
  return pcp::pcpctl::RunPcpctl(args, options, stdout, stderr);
}
