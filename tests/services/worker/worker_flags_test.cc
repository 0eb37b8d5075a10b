// pcp-worker's command line: every flag is one row of its table (worker_flags.cc), set as
// --KEY=VALUE or --set KEY=VALUE; the old spellings keep working; bad keys and values are
// refused naming the flag.
#include "worker_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <string>
#include <vector>

#include "pcp/base/status_macros.h"

namespace pcp::worker {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<WorkerSettings> FromCommandLine(std::vector<std::string> args) {
  args.insert(args.begin(), "pcp-worker");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<char*> rest;
  std::vector<yaml_fields::Override> overrides;
  PCP_RETURN_IF_ERROR(WorkerKeyFlags().Extract(
      static_cast<int>(argv.size()), argv.data(), [](absl::string_view) { return false; }, rest, overrides));
  return WorkerSettingsFromOverrides(overrides);
}

TEST(WorkerFlagsTest, EveryFlagTheSupervisorAndTestsPassSetsItsOption) {
  unsetenv("PCP_WORKER_INCARNATION");
  absl::StatusOr<WorkerSettings> s = FromCommandLine({"--shepherd=10.0.0.5:7070",
                                                      "--supervisor_id=node-1",
                                                      "--incarnation=3",
                                                      "--backend=auto",
                                                      "--threads=2",
                                                      "--cache_dir=/tmp/c",
                                                      "--tls_ca=ca.pem",
                                                      "--tls_cert=n.pem",
                                                      "--tls_key=n.key",
                                                      "--tls_refresh_s=7",
                                                      "--token_source=env:T",
                                                      "--backoff_initial_ms=100",
                                                      "--backoff_max_ms=1000",
                                                      "--data_roots=/a,/b",
                                                      "--max_data_file_bytes=99",
                                                      "--log_level=debug",
                                                      "--metrics_listen=127.0.0.1:0",
                                                      "--metrics_address_file=m",
                                                      "--link_up_mbit=1",
                                                      "--link_down_mbit=100",
                                                      "--link_rtt_ms=50",
                                                      "--fault_delta=scale:2",
                                                      "--fault_slow_factor=3",
                                                      "--fault_init"});
  ASSERT_TRUE(s.ok()) << s.status();
  const WorkerOptions& o = s->options;
  EXPECT_EQ(o.shepherd, "10.0.0.5:7070");
  EXPECT_EQ(o.supervisor_id, "node-1");
  EXPECT_EQ(o.incarnation, 3u);
  EXPECT_EQ(o.backend, "auto");
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.cache_dir, "/tmp/c");
  EXPECT_EQ(o.credentials.tls.ca, "ca.pem");
  EXPECT_EQ(o.credentials.tls.cert, "n.pem");
  EXPECT_EQ(o.credentials.tls.key, "n.key");
  EXPECT_EQ(o.credentials.tls.refresh_interval_s, 7);
  EXPECT_EQ(s->token_source, "env:T");
  EXPECT_EQ(o.backoff.initial, absl::Milliseconds(100));
  EXPECT_EQ(o.backoff.max, absl::Seconds(1));
  EXPECT_EQ(o.data_roots, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(o.max_data_file_bytes, 99);
  EXPECT_EQ(s->log_level, "debug");
  EXPECT_EQ(s->metrics_listen, "127.0.0.1:0");
  EXPECT_EQ(s->metrics_address_file, "m");
  EXPECT_DOUBLE_EQ(o.link.up_mbit, 1);
  EXPECT_DOUBLE_EQ(o.link.down_mbit, 100);
  EXPECT_DOUBLE_EQ(o.link.rtt_ms, 50);
  EXPECT_EQ(o.fault_delta, "scale:2");
  EXPECT_DOUBLE_EQ(o.fault_slow_factor, 3);
  EXPECT_TRUE(o.fault_init);
}

TEST(WorkerFlagsTest, DefaultsLaterFlagsAndSet) {
  setenv("PCP_WORKER_INCARNATION", "5", 1);
  absl::StatusOr<WorkerSettings> s = FromCommandLine({});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->options.incarnation, 5u);  // from the supervisor's environment
  EXPECT_EQ(s->options.shepherd, "127.0.0.1:7070");
  EXPECT_EQ(s->options.backoff.initial, absl::Milliseconds(500));
  EXPECT_EQ(s->metrics_listen, "");
  unsetenv("PCP_WORKER_INCARNATION");

  s = FromCommandLine({"--threads=2", "--set", "threads=3", "--set", "link.rtt_ms=20",
                       "--data_roots=", "--backoff_max_ms=1", "--set", "join_timeout_ms=700"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->options.threads, 3);
  EXPECT_DOUBLE_EQ(s->options.link.rtt_ms, 20);
  EXPECT_TRUE(s->options.data_roots.empty());
  EXPECT_EQ(s->options.backoff.max, s->options.backoff.initial);  // never below the first delay
  EXPECT_EQ(s->options.join_timeout_ms, 700);
}

TEST(WorkerFlagsTest, BadKeysAndValuesAreRefusedNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"--thread=2", "unknown flag --thread (did you mean --threads?)"},
      {"--set=link.rtt_m=5", "--set=link.rtt_m=5: unknown key 'rtt_m' in section 'link' (did you mean 'rtt_ms'?)"},
      {"--threads=many", "--threads=many: threads: expected an integer, got 'many'"},
      {"--threads=-1", "--threads=-1: threads: must be in [0, 2147483647], got -1"},
      {"--threads=4294967296", "--threads=4294967296: threads: must be in [0, 2147483647]"},
      {"--incarnation=0", "--incarnation=0: incarnation: must be >= 1, got 0"},
      {"--link_up_mbit=fast", "--link_up_mbit=fast: link.up_mbit: expected a (finite) number"},
      {"--shepherd=", "--shepherd=: shepherd: must not be empty"},
      {"--fault_slow_factor=0.5", "--fault_slow_factor=0.5: fault_slow_factor: must be in [1.0, 1000.0], got 0.5"},
  };
  for (const auto& [flag, expected] : cases) {
    absl::StatusOr<WorkerSettings> s = FromCommandLine({flag});
    ASSERT_FALSE(s.ok()) << flag;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << flag;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(expected)) << flag;
  }
  EXPECT_THAT(WorkerFlagsHelp(), HasSubstr("--link_up_mbit sets link.up_mbit"));
}

}  // namespace
}  // namespace pcp::worker
