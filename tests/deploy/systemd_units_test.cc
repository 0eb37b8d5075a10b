// The systemd units and sysusers entry of deploy/systemd, checked as installed:
// `cmake --install --component deploy` into a temporary prefix (the units are generated for
// that prefix), the build tree's binaries symlinked into <prefix>/bin, then
// `systemd-analyze verify` on the installed units. systemd is not PID 1 here, so nothing is
// started; verify loads each unit as the manager would and checks its settings, specifiers
// (%i, %S) and that ExecStart names an executable file.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "process_harness.h"
#include "run_command.h"
#include "yaml-cpp/yaml.h"

namespace pcp::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kSystemdAnalyze[] = "/usr/bin/systemd-analyze";
constexpr char kSysusers[] = "/usr/bin/systemd-sysusers";

#if defined(PCP_SHEPHERD_BINARY) && defined(PCP_SUPERVISOR_BINARY) && defined(PCP_WORKER_BINARY)
constexpr bool kHaveBinaries = true;
const char* const kBinaries[][2] = {{"pcp-shepherd", PCP_SHEPHERD_BINARY},
                                    {"pcp-supervisor", PCP_SUPERVISOR_BINARY},
                                    {"pcp-worker", PCP_WORKER_BINARY}};
#else
constexpr bool kHaveBinaries = false;
const char* const kBinaries[][2] = {{"", ""}};
#endif

// The value of the first `key=` line of a unit (no section awareness needed for ours).
std::string UnitValue(const std::string& unit_text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(unit_text, '\n')) {
    if (absl::ConsumePrefix(&line, absl::StrCat(key, "="))) return std::string(line);
  }
  return "";
}

// "15s", "1min", "60" -> seconds.
double Seconds(absl::string_view value) {
  double n = 0;
  if (absl::ConsumeSuffix(&value, "min")) return absl::SimpleAtod(value, &n) ? n * 60 : -1;
  absl::ConsumeSuffix(&value, "s");
  return absl::SimpleAtod(value, &n) ? n : -1;
}

class SystemdUnitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<TempDir> dir = TempDir::Create("pcp-deploy-systemd");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = new TempDir(*std::move(dir));
    prefix_ = dir_->path() + "/prefix";
    // Installs only deploy/ (component "deploy"): units, sysusers, configs, dashboards.
    absl::StatusOr<CommandOutput> install =
        RunCommand(CMAKE_COMMAND, {"--install", PCP_BINARY_DIR, "--component", "deploy", "--prefix", prefix_},
                   dir_->path() + "/install.log");
    ASSERT_TRUE(install.ok()) << install.status();
    ASSERT_EQ(install->exit_code, 0) << install->output;
    install_log_ = install->output;
    unit_dir_ = prefix_ + "/lib/systemd/system";
    if (kHaveBinaries) {
      fs::create_directories(prefix_ + "/" PCP_INSTALL_BINDIR);
      for (const auto& [name, path] : kBinaries) {
        fs::create_symlink(path, absl::StrCat(prefix_, "/" PCP_INSTALL_BINDIR "/", name));
      }
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (access(kSystemdAnalyze, X_OK) != 0) GTEST_SKIP() << kSystemdAnalyze << " is not installed (package systemd)";
  }

  static std::string Unit(const std::string& name) {
    absl::StatusOr<std::string> text = ReadFile(unit_dir_ + "/" + name);
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : "";
  }

  static TempDir* dir_;
  static std::string prefix_;
  static std::string unit_dir_;
  static std::string install_log_;
};
TempDir* SystemdUnitsTest::dir_ = nullptr;
std::string SystemdUnitsTest::prefix_;
std::string SystemdUnitsTest::unit_dir_;
std::string SystemdUnitsTest::install_log_;

TEST_F(SystemdUnitsTest, InstallLaysOutEveryDeployFile) {
  for (const char* path : {
           "lib/systemd/system/pcp-shepherd.service",
           "lib/systemd/system/pcp-supervisor@.service",
           "lib/sysusers.d/pcp.conf",
           "share/pcp/config/shepherd.yaml",
           "share/pcp/config/supervisor.yaml",
           "share/pcp/jobs/shakespeare_char.yaml",
           "share/pcp/jobs/tiny.yaml",
           "share/pcp/prometheus/prometheus.yml",
           "share/pcp/prometheus/pcp-alerts.yml",
           "share/pcp/prometheus/pcp-alerts_test.yml",
           "share/pcp/prometheus/targets/pcp-shepherd.yml",
           "share/pcp/prometheus/targets/pcp-supervisor.yml",
           "share/pcp/prometheus/targets/pcp-worker.yml",
           "share/pcp/grafana/dashboards/pcp-cluster.json",
           "share/pcp/grafana/provisioning/datasources/pcp.yaml",
           "share/pcp/grafana/provisioning/dashboards/pcp.yaml",
           "share/doc/pcp/README.md",
           "share/doc/pcp/docs/operations.md",
       }) {
    EXPECT_TRUE(fs::is_regular_file(prefix_ + "/" + path)) << path << " not installed; install log:\n" << install_log_;
  }
  // Generated for the prefix installed to, not the configure-time one.
  EXPECT_THAT(Unit("pcp-shepherd.service"),
              ::testing::HasSubstr(absl::StrCat("ExecStart=", prefix_, "/" PCP_INSTALL_BINDIR "/pcp-shepherd ")));
  absl::StatusOr<std::string> provider = ReadFile(prefix_ + "/share/pcp/grafana/provisioning/dashboards/pcp.yaml");
  ASSERT_TRUE(provider.ok());
  EXPECT_THAT(*provider, ::testing::HasSubstr(absl::StrCat("path: ", prefix_, "/share/pcp/grafana/dashboards")));
}

TEST_F(SystemdUnitsTest, VerifyPassesOnEveryInstalledUnit) {
  if (!kHaveBinaries) GTEST_SKIP() << "pcp-shepherd/-supervisor/-worker are not built in this tree";
  // A template is verified through an instance; verify finds pcp-supervisor@.service for it.
  for (const std::string unit : {"pcp-shepherd.service", "pcp-supervisor@1.service", "pcp-supervisor@gpu0.service"}) {
    absl::StatusOr<CommandOutput> r =
        RunCommand(kSystemdAnalyze, {"verify", "--man=no", unit_dir_ + "/" + unit}, dir_->path() + "/verify.log");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 0) << unit << ":\n" << r->output;
    // verify exits 0 on warnings such as an unknown key ("ignoring"): any output is a finding.
    EXPECT_EQ(r->output, "") << unit;
  }
}

// Guards the test above: verify must see ExecStart problems and unknown keys, or a silent
// verify would prove nothing.
TEST_F(SystemdUnitsTest, VerifyReportsABrokenUnit) {
  std::string text = Unit("pcp-shepherd.service");
  absl::StrReplaceAll({{"UMask=0027", "UMask=0027\nProtectSystem=strictly\nNotARealSetting=yes"},
                       {"/pcp-shepherd ", "/pcp-shepherd-missing "}},
                      &text);
  const std::string path = dir_->path() + "/broken.service";
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
  absl::StatusOr<CommandOutput> r =
      RunCommand(kSystemdAnalyze, {"verify", "--man=no", path}, dir_->path() + "/broken.log");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->exit_code, 0) << r->output;
  EXPECT_THAT(r->output, ::testing::HasSubstr("pcp-shepherd-missing"));
  EXPECT_THAT(r->output, ::testing::HasSubstr("strictly"));
  EXPECT_THAT(r->output, ::testing::HasSubstr("Unknown key"));
}

// Every --flag in ExecStart is one the binary defines (its --helpfull lists it).
TEST_F(SystemdUnitsTest, ExecStartFlagsExistInTheBinaries) {
  if (!kHaveBinaries) GTEST_SKIP() << "binaries not built";
  for (const std::string unit : {"pcp-shepherd.service", "pcp-supervisor@.service"}) {
    const std::vector<std::string> argv = absl::StrSplit(UnitValue(Unit(unit), "ExecStart"), ' ', absl::SkipEmpty());
    ASSERT_FALSE(argv.empty()) << unit;
    absl::StatusOr<CommandOutput> help = RunCommand(argv[0], {"--helpfull"}, dir_->path() + "/help.log");
    ASSERT_TRUE(help.ok()) << help.status();
    for (size_t i = 1; i < argv.size(); ++i) {
      ASSERT_TRUE(absl::StartsWith(argv[i], "--")) << unit << ": " << argv[i];
      const std::string flag(absl::string_view(argv[i]).substr(0, argv[i].find('=')));
      EXPECT_THAT(help->output, ::testing::HasSubstr(flag + " ")) << unit << " passes " << flag;
    }
  }
}

// systemd's stop timeout outlasts the supervisor's own SIGTERM -> SIGKILL grace for its
// worker, so a graceful stop is never cut short.
TEST_F(SystemdUnitsTest, StopTimeoutCoversTheSupervisorGrace) {
  YAML::Node config = YAML::LoadFile(PCP_SOURCE_DIR "/config/supervisor.yaml");
  const double grace_s = config["grace_ms"].as<double>(10000) / 1000;
  const std::string unit = Unit("pcp-supervisor@.service");
  EXPECT_GT(Seconds(UnitValue(unit, "TimeoutStopSec")), grace_s);
  EXPECT_EQ(UnitValue(unit, "KillMode"), "mixed");  // SIGTERM to the supervisor only
  for (const std::string name : {"pcp-shepherd.service", "pcp-supervisor@.service"}) {
    const std::string text = Unit(name);
    EXPECT_EQ(UnitValue(text, "Restart"), "on-failure") << name;
    EXPECT_EQ(UnitValue(text, "User"), "pcp") << name;
    EXPECT_EQ(UnitValue(text, "ProtectSystem"), "strict") << name;
    EXPECT_EQ(UnitValue(text, "NoNewPrivileges"), "yes") << name;
    EXPECT_FALSE(UnitValue(text, "StateDirectory").empty()) << name;
    EXPECT_GT(Seconds(UnitValue(text, "TimeoutStopSec")), 0) << name;
  }
  EXPECT_THAT(UnitValue(unit, "ExecStart"), ::testing::HasSubstr("--config=/etc/pcp/supervisor-%i.yaml"));
}

TEST_F(SystemdUnitsTest, SysusersCreatesThePcpUser) {
  if (access(kSysusers, X_OK) != 0) GTEST_SKIP() << kSysusers << " is not installed";
  const std::string root = dir_->path() + "/sysroot";
  fs::create_directories(root);
  absl::StatusOr<CommandOutput> r =
      RunCommand(kSysusers, {"--dry-run", absl::StrCat("--root=", root), prefix_ + "/lib/sysusers.d/pcp.conf"},
                 dir_->path() + "/sysusers.log");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_THAT(r->output, ::testing::HasSubstr("Creating user 'pcp'"));
  EXPECT_THAT(r->output, ::testing::HasSubstr("'render'"));
}

// Prints systemd's own exposure score of each unit's sandbox (0 = locked down, 10 = none).
TEST_F(SystemdUnitsTest, SecurityExposureIsReported) {
  if (!kHaveBinaries) GTEST_SKIP() << "binaries not built";
  for (const std::string unit : {"pcp-shepherd.service", "pcp-supervisor@1.service"}) {
    absl::StatusOr<CommandOutput> r =
        RunCommand(kSystemdAnalyze, {"security", "--offline=true", "--no-pager", unit_dir_ + "/" + unit},
                   dir_->path() + "/security.log");
    ASSERT_TRUE(r.ok()) << r.status();
    const size_t at = r->output.find("Overall exposure level");
    ASSERT_NE(at, std::string::npos) << r->output;
    std::printf("%s\n", r->output.substr(at, r->output.find('\n', at) - at).c_str());
  }
}

}  // namespace
}  // namespace pcp::testing
