// Flags generated from a config table (pcp/config/command_line.h): --KEY=VALUE and --set
// for every key, aliases, bools and lists, and the file's messages for a bad key or value.
#include "pcp/config/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pcp::yaml_fields {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Retry {
  absl::Duration initial = absl::Seconds(1);
  double multiplier = 2;
};

struct Settings {
  std::string listen = "127.0.0.1:1";
  int64_t max_jobs = 10;
  bool insecure = false;
  std::vector<std::string> roots = {"data"};
  Retry retry;
};

const std::vector<Field<Retry>>& RetryFields() {
  static const auto* fields = new std::vector<Field<Retry>>{
      MillisField("initial_ms", &Retry::initial, kAtLeast0),
      RealField("multiplier", &Retry::multiplier, RealRange{1.0}),
  };
  return *fields;
}

const std::vector<Field<Settings>>& Fields() {
  static const auto* fields = new std::vector<Field<Settings>>{
      StringField("listen", &Settings::listen, /*allow_empty=*/false),
      IntField("max_jobs", &Settings::max_jobs, kAtLeast1),
      BoolField("insecure", &Settings::insecure),
      StringListField("roots", &Settings::roots),
      SectionField("retry", &Settings::retry, &RetryFields()),
  };
  return *fields;
}

constexpr Alias kAliases[] = {{"initial_ms", "retry.initial_ms"}};

bool IsOther(absl::string_view name) { return name == "config" || name == "help"; }

// Runs argv (without argv[0]) through Extract, then the file text, then every override.
absl::StatusOr<Settings> Parse(std::vector<std::string> args, absl::string_view file = "",
                               std::vector<std::string>* rest_out = nullptr) {
  PCP_ASSIGN_OR_RETURN(KeyFlags flags, KeyFlags::Create(LeavesOf(Fields()), kAliases));
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<char*> rest;
  std::vector<Override> overrides;
  PCP_RETURN_IF_ERROR(flags.Extract(static_cast<int>(argv.size()), argv.data(), IsOther, rest, overrides));
  if (rest_out != nullptr) rest_out->assign(rest.begin(), rest.end());
  Context ctx("test.yaml");
  Settings settings;
  PCP_RETURN_IF_ERROR(ParseDocument(file, Fields(), ctx, settings));
  for (const Override& o : overrides) PCP_RETURN_IF_ERROR(ApplyOverride(Fields(), o, settings));
  return settings;
}

TEST(KeyFlags, EveryKeyOfTheTableIsAFlag) {
  absl::StatusOr<KeyFlags> flags = KeyFlags::Create(LeavesOf(Fields()), kAliases);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->KeyOf("listen"), "listen");
  EXPECT_EQ(flags->KeyOf("retry_initial_ms"), "retry.initial_ms");
  EXPECT_EQ(flags->KeyOf("retry_multiplier"), "retry.multiplier");
  EXPECT_EQ(flags->KeyOf("initial_ms"), "retry.initial_ms");  // the alias
  EXPECT_EQ(flags->KeyOf("config"), "");
  EXPECT_THAT(flags->Help(), HasSubstr("--retry_initial_ms sets retry.initial_ms; also --initial_ms"));
}

TEST(KeyFlags, AnAliasOfNoKeyOrANameTwiceIsRefused) {
  constexpr Alias kBad[] = {{"old", "retry.initial"}};
  EXPECT_THAT(KeyFlags::Create(LeavesOf(Fields()), kBad).status().message(), HasSubstr("names no key 'retry.initial'"));
  constexpr Alias kTwice[] = {{"listen", "max_jobs"}};
  EXPECT_THAT(KeyFlags::Create(LeavesOf(Fields()), kTwice).status().message(), HasSubstr("--listen"));
}

TEST(KeyFlags, FlagsOverrideTheFileInCommandLineOrder) {
  const std::string file = "listen: 10.0.0.1:7\nmax_jobs: 5\nretry: {initial_ms: 20}\n";
  absl::StatusOr<Settings> s = Parse({}, file);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->max_jobs, 5);
  EXPECT_EQ(s->retry.initial, absl::Milliseconds(20));

  s = Parse({"--max_jobs=7", "--set", "retry.initial_ms=30", "--listen", "10.0.0.2:8"}, file);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->max_jobs, 7);
  EXPECT_EQ(s->retry.initial, absl::Milliseconds(30));
  EXPECT_EQ(s->listen, "10.0.0.2:8");

  // Later wins; --set=K=V, the generated nested name and the alias set the same key.
  s = Parse({"--set=max_jobs=8", "--max_jobs=9", "--retry_initial_ms=40", "--initial_ms=50"}, file);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->max_jobs, 9);
  EXPECT_EQ(s->retry.initial, absl::Milliseconds(50));
  EXPECT_DOUBLE_EQ(s->retry.multiplier, 2.0);  // the section's other keys stay
}

TEST(KeyFlags, OtherFlagsAndPositionalsArePassedOn) {
  std::vector<std::string> rest;
  absl::StatusOr<Settings> s =
      Parse({"--config", "x.yaml", "--help", "--max_jobs=3", "pos", "--", "--max_jobs=4"}, "", &rest);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->max_jobs, 3);
  EXPECT_THAT(rest, ElementsAre("prog", "--config", "x.yaml", "--help", "pos", "--", "--max_jobs=4"));
}

TEST(KeyFlags, BoolsAndLists) {
  absl::StatusOr<Settings> s = Parse({"--insecure", "--roots=a,b"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->insecure);
  EXPECT_THAT(s->roots, ElementsAre("a", "b"));
  s = Parse({"--insecure", "--noinsecure", "--set", "roots=[c, d]"});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->insecure);
  EXPECT_THAT(s->roots, ElementsAre("c", "d"));
  s = Parse({"--insecure=yes", "--roots="});  // an empty list, as `roots: []`
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->insecure);
  EXPECT_TRUE(s->roots.empty());
}

TEST(KeyFlags, AnUnknownKeyIsRefusedNamingIt) {
  EXPECT_EQ(Parse({"--max_jbos=3"}).status().message(),
            "unknown flag --max_jbos (did you mean --max_jobs?); --help lists every flag and config key");
  EXPECT_EQ(Parse({"--set", "max_jbos=3"}).status().message(),
            "--set max_jbos=3: unknown top-level key 'max_jbos' (did you mean 'max_jobs'?); valid keys: "
            "listen, max_jobs, insecure, roots, retry");
  EXPECT_EQ(Parse({"--set", "retry.inital_ms=3"}).status().message(),
            "--set retry.inital_ms=3: unknown key 'inital_ms' in section 'retry' (did you mean 'initial_ms'?); "
            "valid keys: initial_ms, multiplier");
  EXPECT_THAT(Parse({"--set", "max_jobs"}).status().message(), HasSubstr("expected --set KEY=VALUE"));
  EXPECT_THAT(Parse({"--max_jobs"}).status().message(), HasSubstr("--max_jobs: expected a value"));
}

TEST(KeyFlags, ABadValueIsRefusedAsInTheFile) {
  EXPECT_EQ(Parse({"--max_jobs=abc"}).status().message(), "--max_jobs=abc: max_jobs: expected an integer, got 'abc'");
  EXPECT_EQ(Parse({"--max_jobs", "0"}).status().message(), "--max_jobs 0: max_jobs: must be >= 1, got 0");
  EXPECT_EQ(Parse({"--set", "retry.multiplier=0.5"}).status().message(),
            "--set retry.multiplier=0.5: retry.multiplier: must be >= 1.0, got 0.5");
  EXPECT_EQ(Parse({"--insecure=maybe"}).status().message(),
            "--insecure=maybe: insecure: expected true or false, got 'maybe'");
  EXPECT_EQ(Parse({"--listen="}).status().message(), "--listen=: listen: must not be empty");
  EXPECT_THAT(Parse({"--roots=[a"}).status().message(), HasSubstr("--roots=[a: YAML syntax error"));
  // The file's own errors keep their position.
  EXPECT_EQ(Parse({}, "max_jobs: x\n").status().message(), "test.yaml:1:11: max_jobs: expected an integer, got 'x'");
}

TEST(KeyFlags, ChecksAfterTheOverridesNameTheFlag) {
  const std::vector<Override> overrides = {{"retry.initial_ms", "5", "--initial_ms=5"},
                                           {"max_jobs", "3", "--max_jobs=3"}};
  EXPECT_EQ(NameOverride(absl::InvalidArgumentError("max_jobs: must be <= 2"), overrides).message(),
            "--max_jobs=3: max_jobs: must be <= 2");
  EXPECT_EQ(NameOverride(absl::InvalidArgumentError("retry: max below initial"), overrides).message(),
            "--initial_ms=5: retry: max below initial");
  EXPECT_EQ(NameOverride(absl::InvalidArgumentError("listen: bad"), overrides).message(), "listen: bad");
}

}  // namespace
}  // namespace pcp::yaml_fields
