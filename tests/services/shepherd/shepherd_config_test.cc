// The shepherd's YAML config: defaults, every key, and one-line errors with positions.
#include "pcp/shepherd/shepherd_config.h"

#include <stdlib.h>

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"

namespace pcp::shepherd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ShepherdConfigTest, DefaultsAndKeys) {
  absl::StatusOr<ShepherdConfig> empty = ParseShepherdConfig("", "s.yaml");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->listen, "127.0.0.1:7070");
  EXPECT_EQ(empty->heartbeat_timeout_ms, 3000);
  absl::StatusOr<ShepherdConfig> c = ParseShepherdConfig(
      "listen: 0.0.0.0:9000\nstate_dir: /var/lib/pcp\nheartbeat_interval_ms: 200\nheartbeat_timeout_ms: 900\n"
      "chunk_bytes: 262144\nmax_chunk_bytes: 524288\nround_start_grace_ms: 0\n"
      "eval_threads: 2\nlog_level: debug\n",
      "s.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->listen, "0.0.0.0:9000");
  EXPECT_EQ(c->state_dir, "/var/lib/pcp");
  EXPECT_EQ(c->heartbeat_interval_ms, 200);
  EXPECT_EQ(c->chunk_bytes, 262144);
  EXPECT_EQ(c->max_chunk_bytes, 524288);
  EXPECT_EQ(c->eval_threads, 2);
  EXPECT_EQ(c->log_level, "debug");
}

TEST(ShepherdConfigTest, ErrorsNameFileLineAndKey) {
  absl::Status unknown = ParseShepherdConfig("listen: a:1\nstatedir: x\n", "s.yaml").status();
  EXPECT_THAT(std::string(unknown.message()),
              HasSubstr("s.yaml:2:1: unknown top-level key 'statedir' (did you mean 'state_dir'?)"));
  absl::Status number = ParseShepherdConfig("heartbeat_interval_ms: soon\n", "s.yaml").status();
  EXPECT_THAT(std::string(number.message()), HasSubstr("s.yaml:1:24: heartbeat_interval_ms: expected an integer"));
  absl::Status order =
      ParseShepherdConfig("heartbeat_interval_ms: 500\nheartbeat_timeout_ms: 400\n", "s.yaml").status();
  EXPECT_THAT(std::string(order.message()), HasSubstr("s.yaml:2:23: heartbeat_timeout_ms: must be greater"));
  absl::Status syntax = ParseShepherdConfig("listen: [\n", "s.yaml").status();
  EXPECT_EQ(syntax.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(syntax.message()), HasSubstr("s.yaml:"));
  EXPECT_FALSE(ParseShepherdConfig("chunk_bytes: 100\n", "s.yaml").ok());
  EXPECT_FALSE(ParseShepherdConfig("log_level: loud\n", "s.yaml").ok());
  EXPECT_FALSE(ParseShepherdConfig("listen: nocolon\n", "s.yaml").ok());
}

TEST(ShepherdConfigTest, TlsAndAuthSections) {
  const std::string hash(64, 'a');
  absl::StatusOr<ShepherdConfig> c = ParseShepherdConfig(
      "tls:\n  ca: /etc/pcp/ca.crt\n  cert: credential:shepherd.crt\n  key: credential:shepherd.key\n"
      "  refresh_interval_s: 2\ninsecure: false\nauth:\n  identities:\n"
      "    - {identity: node-1, roles: [node]}\n    - {identity: ops, roles: [viewer, admin]}\n"
      "  tokens:\n    - {name: ci, sha256: " +
          hash + ", roles: [viewer]}\n",
      "s.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls.ca, "/etc/pcp/ca.crt");
  EXPECT_EQ(c->tls.key, "credential:shepherd.key");
  EXPECT_EQ(c->tls.refresh_interval_s, 2);
  ASSERT_EQ(c->auth.identities.size(), 2u);
  EXPECT_EQ(c->auth.identities[1].identity, "ops");
  EXPECT_EQ(c->auth.identities[1].roles, (auth::RoleSet{auth::Role::kViewer, auth::Role::kAdmin}));
  ASSERT_EQ(c->auth.tokens.size(), 1u);
  EXPECT_EQ(c->auth.tokens[0].sha256, hash);

  absl::Status role =
      ParseShepherdConfig("auth:\n  identities:\n    - {identity: a, roles: [root]}\n", "s.yaml").status();
  EXPECT_THAT(std::string(role.message()), HasSubstr("s.yaml:3:"));
  EXPECT_THAT(std::string(role.message()), HasSubstr("auth.identities[0].roles: unknown role 'root'"));
  absl::Status sha =
      ParseShepherdConfig("auth:\n  tokens:\n    - {name: a, sha256: s3cret, roles: [admin]}\n", "s.yaml").status();
  EXPECT_THAT(std::string(sha.message()), HasSubstr("auth.tokens[0].sha256: expected the token's SHA-256"));
  EXPECT_THAT(std::string(sha.message()), Not(HasSubstr("s3cret")));
  absl::Status mtls = ParseShepherdConfig("tls: {ca: a, cert: b, key: c}\n", "s.yaml").status();
  EXPECT_THAT(std::string(mtls.message()), HasSubstr("tls.ca: mTLS needs auth.identities"));
}

TEST(ShepherdConfigTest, MetricsListen) {
  EXPECT_EQ(ParseShepherdConfig("", "s.yaml")->metrics_listen, "127.0.0.1:9470");
  EXPECT_EQ(ParseShepherdConfig("metrics_listen: 0.0.0.0:0\n", "s.yaml")->metrics_listen, "0.0.0.0:0");
  EXPECT_EQ(ParseShepherdConfig("metrics_listen: \"\"\n", "s.yaml")->metrics_listen, "");  // off
  absl::Status bad = ParseShepherdConfig("metrics_listen: 9470\n", "s.yaml").status();
  EXPECT_THAT(std::string(bad.message()), HasSubstr("metrics_listen: expected HOST:PORT"));
}

TEST(ShepherdConfigTest, TheExampleConfigParses) {
  absl::StatusOr<ShepherdConfig> c = LoadShepherdConfig(std::string(PCP_SOURCE_DIR) + "/config/shepherd.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
}

TEST(ShepherdConfigTest, AdmissionKeys) {
  absl::StatusOr<ShepherdConfig> defaults = ParseShepherdConfig("", "s.yaml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->data_roots, std::vector<std::string>{DefaultDataRoot()});
  EXPECT_EQ(defaults->max_queued_jobs, 100);
  EXPECT_GT(defaults->EffectiveMemoryBudgets().worker_bytes, 0);  // half of the machine
  absl::StatusOr<ShepherdConfig> c =
      ParseShepherdConfig("data_roots: [/srv/a, b]\nmax_jobs: 10\nmax_queued_jobs: 5\nworker_memory_bytes: 1024\n",
                          "s.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->data_roots, (std::vector<std::string>{"/srv/a", "b"}));
  EXPECT_EQ(c->EffectiveMemoryBudgets().worker_bytes, 1024);
  EXPECT_TRUE(ParseShepherdConfig("data_roots: []\n", "s.yaml")->data_roots.empty());  // nothing remote
  EXPECT_THAT(std::string(ParseShepherdConfig("max_jobs: 10\nmax_queued_jobs: 20\n", "s.yaml").status().message()),
              HasSubstr("max_queued_jobs: must be <= max_jobs"));
  EXPECT_THAT(std::string(ParseShepherdConfig("max_watch_streams: 0\n", "s.yaml").status().message()),
              HasSubstr("max_watch_streams: must be >= 1"));
}

TEST(ShepherdConfigTest, TransportBudgetGivesTheReceiveWindow) {
  absl::StatusOr<ShepherdConfig> defaults = ParseShepherdConfig("", "s.yaml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->transport_receive_bytes, int64_t{256} << 20);
  EXPECT_EQ(defaults->transport_workers, 64);
  EXPECT_EQ(defaults->ReceiveWindowBytes(), 4 << 20);  // 256 MiB / 64
  absl::StatusOr<ShepherdConfig> c =
      ParseShepherdConfig("transport_receive_bytes: 134217728\ntransport_workers: 256\n", "s.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ReceiveWindowBytes(), 512 << 10);
  // Clamped: few workers get at most 16 MiB, many at least 64 KiB.
  EXPECT_EQ(ParseShepherdConfig("transport_workers: 2\n", "s.yaml")->ReceiveWindowBytes(), 16 << 20);
  absl::StatusOr<ShepherdConfig> many =
      ParseShepherdConfig("transport_receive_bytes: 1048576\ntransport_workers: 100000\n", "s.yaml");
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_EQ(many->ReceiveWindowBytes(), 65535);
}

TEST(ShepherdConfigTest, TransportBudgetGivesTheAcceptedChunkSize) {
  // 256 MiB / (4 x 64) = 1 MiB: the default is unchanged.
  EXPECT_EQ(ParseShepherdConfig("", "s.yaml")->AcceptedChunkBytes(), int64_t{1} << 20);
  EXPECT_EQ(ParseShepherdConfig("transport_workers: 128\n", "s.yaml")->AcceptedChunkBytes(), int64_t{512} << 10);
  // 128 MiB / (4 x 256) = 128 KiB (the loadgen table's 256-worker cells).
  EXPECT_EQ(ParseShepherdConfig("transport_receive_bytes: 134217728\ntransport_workers: 256\n", "s.yaml")
                ->AcceptedChunkBytes(),
            int64_t{128} << 10);
  // At least kMinChunkBytes (128 KiB), at most max_chunk_bytes.
  EXPECT_EQ(ParseShepherdConfig("transport_workers: 100000\n", "s.yaml")->AcceptedChunkBytes(), int64_t{128} << 10);
  EXPECT_EQ(ParseShepherdConfig("transport_workers: 1\n", "s.yaml")->AcceptedChunkBytes(), int64_t{1} << 20);
  absl::StatusOr<ShepherdConfig> capped =
      ParseShepherdConfig("chunk_bytes: 262144\nmax_chunk_bytes: 393216\ntransport_workers: 2\n", "s.yaml");
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->AcceptedChunkBytes(), 393216);
}

TEST(ShepherdConfigTest, TransportBudgetErrorsNameLineAndColumn) {
  auto message = [](const char* yaml) { return std::string(ParseShepherdConfig(yaml, "s.yaml").status().message()); };
  EXPECT_THAT(message("transport_workers: 0\n"), HasSubstr("s.yaml:1:20: transport_workers: must be in [1, 1048576]"));
  EXPECT_THAT(message("listen: a:1\ntransport_workers: -3\n"), HasSubstr("s.yaml:2:20: transport_workers: must be in"));
  EXPECT_THAT(message("transport_workers: many\n"), HasSubstr("s.yaml:1:20: transport_workers: expected an integer"));
  EXPECT_THAT(message("transport_receive_bytes: 1000\n"),
              HasSubstr("s.yaml:1:26: transport_receive_bytes: must be >= 65535"));
  // The gRPC quota must cover the budget (past the quota gRPC refuses streams).
  EXPECT_THAT(message("grpc_memory_bytes: 67108864\ntransport_receive_bytes: 134217728\n"),
              HasSubstr("s.yaml:2:26: transport_receive_bytes: must be <= grpc_memory_bytes"));
  EXPECT_THAT(message("transport_receive_bytes: 1.5e8\n"),
              HasSubstr("s.yaml:1:26: transport_receive_bytes: expected an integer"));
}

// The command line: every key of shepherd.yaml is a flag (pcp/config/command_line.h).
absl::StatusOr<ShepherdConfig> FromCommandLine(const std::string& config_path, std::vector<std::string> args) {
  args.insert(args.begin(), "pcp-shepherd");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<char*> rest;
  std::vector<yaml_fields::Override> overrides;
  PCP_RETURN_IF_ERROR(ShepherdKeyFlags().Extract(
      static_cast<int>(argv.size()), argv.data(), [](absl::string_view) { return false; }, rest, overrides));
  return ShepherdConfigFromCommandLine(config_path, overrides);
}

TEST(ShepherdFlagsTest, EveryKeyIsAFlagOfItsName) {
  // The flags the units, scripts, tests and docs use, each a key of the same name.
  for (const char* flag :
       {"listen", "state_dir", "heartbeat_interval_ms", "heartbeat_timeout_ms", "round_start_grace_ms", "eval_threads",
        "log_level", "metrics_listen", "data_roots", "max_data_file_bytes", "worker_memory_bytes",
        "shepherd_memory_bytes", "max_jobs", "max_queued_jobs", "max_job_start_attempts", "max_admin_calls",
        "max_watch_streams", "max_watch_queue", "max_job_yaml_bytes", "max_finished_job_yamls",
        "transport_receive_bytes", "transport_workers",
        // keys that had no flag before
        "chunk_bytes", "max_chunk_bytes", "max_streams_per_connection", "grpc_memory_bytes",
        "forget_supervisors_after_s", "insecure", "max_metadata_bytes"}) {
    EXPECT_EQ(ShepherdKeyFlags().KeyOf(flag), flag);
  }
  EXPECT_EQ(ShepherdKeyFlags().KeyOf("tls_ca"), "tls.ca");
  EXPECT_EQ(ShepherdKeyFlags().KeyOf("auth_tokens"), "auth.tokens");
  EXPECT_THAT(ShepherdFlagsHelp(), ::testing::HasSubstr("  max_jobs: 1000\n"));
  EXPECT_THAT(ShepherdFlagsHelp(), ::testing::HasSubstr("  max_job_yaml_bytes: 262144\n"));
  EXPECT_THAT(ShepherdFlagsHelp(), ::testing::HasSubstr("  max_metadata_bytes: 8192\n"));
  EXPECT_THAT(std::string(ParseShepherdConfig("max_metadata_bytes: 512\n", "s.yaml").status().message()),
              ::testing::HasSubstr("max_metadata_bytes: must be in [1024, 1048576]"));
  EXPECT_THAT(std::string(ParseShepherdConfig("max_job_yaml_bytes: 5000000\n", "s.yaml").status().message()),
              ::testing::HasSubstr("max_job_yaml_bytes: must be in [1, 4194304]"));
  EXPECT_THAT(std::string(ParseShepherdConfig("max_finished_job_yamls: -1\n", "s.yaml").status().message()),
              ::testing::HasSubstr("max_finished_job_yamls: must be >= 0"));
  EXPECT_TRUE(ParseShepherdConfig("max_finished_job_yamls: 0\n", "s.yaml").ok());
}

TEST(ShepherdFlagsTest, FlagsOverrideTheFile) {
  char dir[] = "/tmp/shepherd_flags_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/shepherd.yaml";
  ASSERT_TRUE(WriteFileAtomic(path, "max_jobs: 50\nmax_queued_jobs: 20\ndata_roots: [/srv/a]\n").ok());
  absl::StatusOr<ShepherdConfig> config = FromCommandLine(path, {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_jobs, 50);
  EXPECT_EQ(config->data_roots, std::vector<std::string>{"/srv/a"});

  config = FromCommandLine(path, {"--max_jobs=40", "--set", "max_queued_jobs=10", "--data_roots=/srv/b,/srv/c", "--set",
                                  "tls.refresh_interval_s=7", "--metrics_listen=", "--insecure"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_jobs, 40);
  EXPECT_EQ(config->max_queued_jobs, 10);
  EXPECT_EQ(config->data_roots, (std::vector<std::string>{"/srv/b", "/srv/c"}));
  EXPECT_EQ(config->tls.refresh_interval_s, 7);
  EXPECT_EQ(config->metrics_listen, "");  // metrics off
  EXPECT_TRUE(config->insecure);
  EXPECT_EQ(config->heartbeat_interval_ms, 1000);  // neither file nor flag: the default

  config = FromCommandLine(path, {"--data_roots="});  // no data may be submitted
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->data_roots.empty());
}

TEST(ShepherdFlagsTest, BadKeysAndValuesAreRefusedNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"--max_jbos=3", "unknown flag --max_jbos (did you mean --max_jobs?)"},
      {"--set=max_jbos=3", "--set=max_jbos=3: unknown top-level key 'max_jbos' (did you mean 'max_jobs'?)"},
      {"--set=tls.cart=x", "--set=tls.cart=x: unknown key 'cart' in section 'tls' (did you mean 'cert'?)"},
      {"--max_jobs=many", "--max_jobs=many: max_jobs: expected an integer, got 'many'"},
      {"--insecure=perhaps", "--insecure=perhaps: insecure: expected true or false, got 'perhaps'"},
      // Checks across keys, after every override, name the flag that set the key.
      {"--max_jobs=0", "--max_jobs=0: max_jobs: must be >= 1"},
      {"--heartbeat_timeout_ms=500", "--heartbeat_timeout_ms=500: heartbeat_timeout_ms: must be greater than"},
      {"--log_level=loud", "--log_level=loud: log_level: expected trace, debug, info, warn or error"},
  };
  for (const auto& [flag, expected] : cases) {
    absl::StatusOr<ShepherdConfig> config = FromCommandLine("", {flag});
    ASSERT_FALSE(config.ok()) << flag;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << flag;
    EXPECT_THAT(std::string(config.status().message()), ::testing::HasSubstr(expected)) << flag;
  }
}

}  // namespace
}  // namespace pcp::shepherd
