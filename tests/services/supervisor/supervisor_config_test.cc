#include "pcp/supervisor/supervisor_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/supervisor/supervisor_id.h"
#include "pcp/supervisor_testing/process_testing.h"

namespace pcp::supervisor {
namespace {

using ::testing::HasSubstr;

TEST(SupervisorConfigTest, TheExampleConfigLoadsAndValidates) {
  auto config = LoadSupervisorConfig(PCP_SOURCE_DIR "/config/supervisor.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->shepherd, "127.0.0.1:7070");
  EXPECT_EQ(config->worker.args,
            (std::vector<std::string>{"--backend=cpu", "--threads=2", "--metrics_listen=127.0.0.1:9472"}));
  EXPECT_EQ(config->metrics_listen, "127.0.0.1:9471");
  EXPECT_EQ(config->worker.backoff.initial, absl::Seconds(1));
  EXPECT_EQ(config->worker.backoff.max, absl::Seconds(30));
  EXPECT_EQ(config->worker.healthy_after, absl::Minutes(1));
  EXPECT_EQ(config->reconnect.connect_timeout, absl::Seconds(5));
  EXPECT_TRUE(ValidateSupervisorConfig(*config).ok());
}

TEST(SupervisorConfigTest, ReadsEveryKey) {
  auto config = ParseSupervisorConfig(R"(
shepherd: shepherd.example:9000
supervisor_id: node-7
state_dir: /tmp/s
tls: {ca: /etc/pcp/ca.crt, cert: credential:node.crt, key: credential:node.key}
token: env:PCP_NODE_TOKEN
grace_ms: 1500
worker:
  binary: /bin/true
  args: [-a, "b c"]
  grace_ms: 250
  healthy_after_ms: 5000
  backoff: {initial_ms: 10, multiplier: 3, max_ms: 90, jitter: 0}
reconnect:
  backoff: {initial_ms: 20, multiplier: 1.5, max_ms: 200, jitter: 0.5}
  connect_timeout_ms: 700
)",
                                      "s.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->shepherd, "shepherd.example:9000");
  EXPECT_EQ(config->supervisor_id, "node-7");
  EXPECT_EQ(config->state_dir, "/tmp/s");
  EXPECT_EQ(config->tls.ca, "/etc/pcp/ca.crt");
  EXPECT_EQ(config->tls.cert, "credential:node.crt");
  EXPECT_EQ(config->tls.key, "credential:node.key");
  EXPECT_EQ(config->token_source, "env:PCP_NODE_TOKEN");
  EXPECT_EQ(config->grace, absl::Milliseconds(1500));
  EXPECT_EQ(config->worker.binary, "/bin/true");
  EXPECT_EQ(config->worker.args, (std::vector<std::string>{"-a", "b c"}));
  EXPECT_EQ(config->worker.grace, absl::Milliseconds(250));
  EXPECT_EQ(config->worker.healthy_after, absl::Seconds(5));
  EXPECT_EQ(config->worker.backoff.initial, absl::Milliseconds(10));
  EXPECT_EQ(config->worker.backoff.multiplier, 3);
  EXPECT_EQ(config->worker.backoff.max, absl::Milliseconds(90));
  EXPECT_EQ(config->worker.backoff.jitter, 0);
  EXPECT_EQ(config->reconnect.backoff.multiplier, 1.5);
  EXPECT_EQ(config->reconnect.connect_timeout, absl::Milliseconds(700));
}

TEST(SupervisorConfigTest, AnEmptyFileGivesDefaults) {
  auto config = ParseSupervisorConfig("", "empty.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->shepherd, "127.0.0.1:7070");
  // ...but no worker binary, which validation demands.
  absl::Status s = ValidateSupervisorConfig(*config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("worker.binary"));
}

TEST(SupervisorConfigTest, MetricsListen) {
  auto defaults = ParseSupervisorConfig("worker:\n  binary: /bin/true\n", "m.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->metrics_listen, "127.0.0.1:9471");
  auto off = ParseSupervisorConfig("metrics_listen: \"\"\nworker:\n  binary: /bin/true\n", "m.yaml");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->metrics_listen, "");
  EXPECT_TRUE(ValidateSupervisorConfig(*off).ok());
  auto bad = ParseSupervisorConfig("metrics_listen: localhost\nworker:\n  binary: /bin/true\n", "m.yaml");
  ASSERT_FALSE(bad.ok());  // checked where the file says it
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("m.yaml:1:17: metrics_listen: expected HOST:PORT"));
  SupervisorConfig flagged = *defaults;
  flagged.metrics_listen = "localhost";  // as from a flag, after parsing
  EXPECT_THAT(std::string(ValidateSupervisorConfig(flagged).message()),
              HasSubstr("metrics_listen: expected HOST:PORT"));
}

struct BadCase {
  const char* yaml;
  const char* expected;  // substring of the message, including file:line:col
};

TEST(SupervisorConfigTest, MistakesNameFileLineAndColumn) {
  const BadCase cases[] = {
      {"shepherd: a:1\nworker:\n  binay: x\n",
       "s.yaml:3:3: unknown key 'binay' in section 'worker' (did you mean 'binary'?)"},
      {"shepherd: a:1\nshepherd: b:2\n", "s.yaml:2:1: shepherd: duplicate key"},
      {"worker:\n  grace_ms: soon\n", "s.yaml:2:13: worker.grace_ms: expected an integer"},
      {"worker:\n  grace_ms: -5\n", "s.yaml:2:13: worker.grace_ms: must be >= 0, got -5"},
      {"worker:\n  args: --backend=cpu\n", "s.yaml:2:9: worker.args: expected a list"},
      {"worker:\n  backoff: {multiplier: fast}\n", "worker.backoff.multiplier: expected a (finite) number"},
      {"supervisor_id: bad id!\n", "s.yaml:1:16: supervisor_id: supervisor id 'bad id!'"},
      {"- just\n- a list\n", "s.yaml:1:1: supervisor config: expected a mapping"},
      {"worker: [1, 2]\n", "s.yaml:1:9: worker: expected a mapping"},
      {"shepherd: [unclosed\n", "s.yaml:"},
  };
  for (const BadCase& c : cases) {
    auto config = ParseSupervisorConfig(c.yaml, "s.yaml");
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.expected)) << c.yaml;
  }
}

TEST(SupervisorConfigTest, ValidationCatchesBadBackoffAndDurations) {
  SupervisorConfig config;
  config.worker.binary = "/bin/true";
  ASSERT_TRUE(ValidateSupervisorConfig(config).ok());
  SupervisorConfig c = config;
  c.worker.backoff.max = absl::Milliseconds(1);
  EXPECT_THAT(std::string(ValidateSupervisorConfig(c).message()), HasSubstr("worker.backoff.max_ms"));
  c = config;
  c.reconnect.backoff.jitter = 2;
  EXPECT_THAT(std::string(ValidateSupervisorConfig(c).message()), HasSubstr("reconnect.backoff.jitter"));
  c = config;
  c.shepherd = "";
  EXPECT_THAT(std::string(ValidateSupervisorConfig(c).message()), HasSubstr("shepherd"));
  c = config;
  c.worker.grace = absl::ZeroDuration();
  EXPECT_THAT(std::string(ValidateSupervisorConfig(c).message()), HasSubstr("worker.grace_ms"));
}

TEST(SupervisorConfigTest, MissingFileIsNotFound) {
  auto config = LoadSupervisorConfig("/nonexistent/supervisor.yaml");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("/nonexistent/supervisor.yaml"));
}

// The command line: every key of the table is a flag (pcp/config/command_line.h).
absl::StatusOr<SupervisorConfig> FromCommandLine(const std::string& config_path, std::vector<std::string> args) {
  args.insert(args.begin(), "pcp-supervisor");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<char*> rest;
  std::vector<yaml_fields::Override> overrides;
  PCP_RETURN_IF_ERROR(SupervisorKeyFlags().Extract(
      static_cast<int>(argv.size()), argv.data(), [](absl::string_view) { return false; }, rest, overrides));
  return SupervisorConfigFromCommandLine(config_path, overrides);
}

TEST(SupervisorFlagsTest, EveryFlagTheUnitsScriptsAndTestsUseSetsItsKey) {
  const std::pair<const char*, const char*> flags[] = {
      {"shepherd", "shepherd"},
      {"supervisor_id", "supervisor_id"},
      {"state_dir", "state_dir"},
      {"tls_ca", "tls.ca"},
      {"tls_cert", "tls.cert"},
      {"tls_key", "tls.key"},
      {"token_source", "token"},
      {"worker_binary", "worker.binary"},
      {"worker_args", "worker.args"},
      {"grace_ms", "grace_ms"},
      {"worker_grace_ms", "worker.grace_ms"},
      {"healthy_after_ms", "worker.healthy_after_ms"},
      {"backoff_initial_ms", "worker.backoff.initial_ms"},
      {"backoff_multiplier", "worker.backoff.multiplier"},
      {"backoff_max_ms", "worker.backoff.max_ms"},
      {"backoff_jitter", "worker.backoff.jitter"},
      {"reconnect_initial_ms", "reconnect.backoff.initial_ms"},
      {"reconnect_max_ms", "reconnect.backoff.max_ms"},
      {"metrics_listen", "metrics_listen"},
      // Generated from keys that had no flag before.
      {"reconnect_connect_timeout_ms", "reconnect.connect_timeout_ms"},
      {"tls_refresh_interval_s", "tls.refresh_interval_s"},
  };
  for (const auto& [flag, key] : flags) EXPECT_EQ(SupervisorKeyFlags().KeyOf(flag), key) << flag;
  EXPECT_THAT(SupervisorFlagsHelp(),
              HasSubstr("--worker_backoff_max_ms sets worker.backoff.max_ms; also --backoff_max_ms"));
}

TEST(SupervisorFlagsTest, FlagsOverrideTheFile) {
  const std::string dir = supervisor_testing::MakeTempDir("supervisor_flags");
  const std::string path = dir + "/s.yaml";
  ASSERT_TRUE(WriteFileAtomic(path,
                              "worker:\n  binary: /bin/true\n  backoff: {initial_ms: 10, max_ms: 900}\n"
                              "reconnect:\n  connect_timeout_ms: 700\n")
                  .ok());
  absl::StatusOr<SupervisorConfig> config = FromCommandLine(path, {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->worker.backoff.max, absl::Milliseconds(900));
  EXPECT_EQ(config->reconnect.connect_timeout, absl::Milliseconds(700));

  config = FromCommandLine(path, {"--set", "worker.backoff.max_ms=800", "--reconnect_connect_timeout_ms=600",
                                  "--worker_args=--backend=cpu,--threads=2", "--shepherd", "10.0.0.5:7070"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->worker.backoff.max, absl::Milliseconds(800));
  EXPECT_EQ(config->worker.backoff.initial, absl::Milliseconds(10));  // from the file still
  EXPECT_EQ(config->reconnect.connect_timeout, absl::Milliseconds(600));
  EXPECT_EQ(config->worker.args, (std::vector<std::string>{"--backend=cpu", "--threads=2"}));
  EXPECT_EQ(config->shepherd, "10.0.0.5:7070");

  // The legacy spelling and the generated one set the same key; the later wins.
  config = FromCommandLine(path, {"--backoff_max_ms=700", "--worker_backoff_max_ms=600", "--metrics_listen="});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->worker.backoff.max, absl::Milliseconds(600));
  EXPECT_EQ(config->metrics_listen, "");  // metrics off

  // No file: flags alone, as scripts/run-local-cluster.sh starts it.
  config = FromCommandLine("", {"--worker_binary=/bin/true", "--token_source=env:T"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->token_source, "env:T");
}

TEST(SupervisorFlagsTest, BadKeysAndValuesAreRefusedNamingThem) {
  const BadCase cases[] = {
      {"--set=worker.binay=x",
       "--set=worker.binay=x: unknown key 'binay' in section 'worker' (did you mean 'binary'?)"},
      {"--worker_binay=x", "unknown flag --worker_binay (did you mean --worker_binary?)"},
      {"--set=grace=5", "--set=grace=5: unknown top-level key 'grace'; valid keys: shepherd, supervisor_id"},
      {"--worker_grace_ms=soon", "--worker_grace_ms=soon: worker.grace_ms: expected an integer, got 'soon'"},
      {"--backoff_jitter=-1e400", "--backoff_jitter=-1e400: worker.backoff.jitter: expected a (finite) number"},
      {"--supervisor_id=bad id!", "--supervisor_id=bad id!: supervisor_id: supervisor id 'bad id!'"},
      // Checks across keys, after every override, name the flag that set the key.
      {"--backoff_max_ms=1", "--backoff_max_ms=1: worker.backoff.max_ms"},
      {"--worker_grace_ms=0", "--worker_grace_ms=0: worker.grace_ms: must be > 0"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<SupervisorConfig> config = FromCommandLine("", {"--worker_binary=/bin/true", c.yaml});
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.expected)) << c.yaml;
  }
}

TEST(SupervisorFlagsTest, TheBinaryRefusesABadKeyWithExitCode2) {
  const std::string command =
      absl::StrCat(supervisor_testing::kSupervisorPath, " --worker_binary=/bin/true --set worker.binay=x 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status << " " << output;
  EXPECT_THAT(output, HasSubstr("pcp-supervisor: --set worker.binay=x: unknown key 'binay' in section 'worker'"));
}

TEST(SupervisorIdTest, ConfiguredIdWinsAndIsValidated) {
  auto id = ResolveSupervisorId("node-1", "", "host");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "node-1");
  EXPECT_EQ(ResolveSupervisorId("no spaces", "", "host").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveSupervisorId(std::string(129, 'a'), "", "host").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateSupervisorId(std::string(128, 'a')).ok());
  EXPECT_TRUE(ValidateSupervisorId("a.b_c:d-9").ok());
}

TEST(SupervisorIdTest, GeneratedIdIsKeptInTheStateDir) {
  const std::string dir = supervisor_testing::MakeTempDir("supervisor_id") + "/nested/state";
  auto first = ResolveSupervisorId("", dir, "my host.local");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(ValidateSupervisorId(*first).ok()) << *first;
  EXPECT_EQ(first->rfind("my-host.local-", 0), 0u) << *first;
  auto second = ResolveSupervisorId("", dir, "other-host");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, *first);
  // Another state dir: another id.
  auto other = ResolveSupervisorId("", dir + "2", "my host.local");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *first);
}

TEST(SupervisorIdTest, NeitherIdNorStateDirIsAnError) {
  absl::Status s = ResolveSupervisorId("", "", "host").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("state_dir"));
}

TEST(SupervisorIdTest, ACorruptStateFileIsAnErrorNamingIt) {
  const std::string dir = supervisor_testing::MakeTempDir("supervisor_id_bad");
  ASSERT_TRUE(ResolveSupervisorId("", dir, "h").ok());
  FILE* f = std::fopen((dir + "/supervisor_id").c_str(), "w");
  std::fputs("not a valid id\n", f);
  std::fclose(f);
  absl::Status s = ResolveSupervisorId("", dir, "h").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(dir + "/supervisor_id"));
}

}  // namespace
}  // namespace pcp::supervisor
