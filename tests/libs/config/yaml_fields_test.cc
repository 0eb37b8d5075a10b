// The shared YAML field tables: list fields, millisecond fields, nested sections' qualified
// names, and errors of checks made after parsing located at the key that caused them.
#include "pcp/config/yaml_fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pcp::yaml_fields {
namespace {

using ::testing::HasSubstr;

struct Token {
  std::string name;
  std::vector<std::string> roles;
};

struct Retry {
  absl::Duration initial = absl::Seconds(1);
  double multiplier = 2;
};

struct Settings {
  std::string listen = "127.0.0.1:1";
  std::vector<std::string> roots = {"data"};
  absl::Duration timeout = absl::Seconds(3);
  Retry retry;
  std::vector<Token> tokens;

  // Messages begin with the qualified key, as Context::Locate expects.
  absl::Status Validate() const {
    if (timeout < retry.initial) return absl::InvalidArgumentError("timeout_ms: must be >= retry.initial_ms");
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i].roles.empty()) return absl::InvalidArgumentError(absl::StrCat("tokens[", i, "]: no roles"));
    }
    return absl::OkStatus();
  }
};

const std::vector<Field<Retry>>& RetryFields() {
  static const auto* fields = new std::vector<Field<Retry>>{
      MillisField("initial_ms", &Retry::initial, kAtLeast1),
      RealField("multiplier", &Retry::multiplier, RealRange{1.0}),
  };
  return *fields;
}

const std::vector<Field<Token>>& TokenFields() {
  static const auto* fields = new std::vector<Field<Token>>{
      StringField("name", &Token::name, /*allow_empty=*/false),
      StringListField("roles", &Token::roles),
  };
  return *fields;
}

const std::vector<Field<Settings>>& SettingsFields() {
  static const auto* fields = new std::vector<Field<Settings>>{
      StringField("listen", &Settings::listen, /*allow_empty=*/false),
      StringListField("roots", &Settings::roots),
      MillisField("timeout_ms", &Settings::timeout, kAtLeast0),
      SectionField("retry", &Settings::retry, &RetryFields()),
      ListField("tokens", &Settings::tokens, &TokenFields()),
  };
  return *fields;
}

absl::StatusOr<Settings> Parse(const std::string& yaml) {
  Context ctx("s.yaml", "settings file");
  Settings settings;
  PCP_RETURN_IF_ERROR(ParseDocument(yaml, SettingsFields(), ctx, settings));
  PCP_RETURN_IF_ERROR(ctx.Locate(settings.Validate()));
  return settings;
}

TEST(YamlFieldsTest, ReadsListsDurationsSectionsAndListsOfMappings) {
  absl::StatusOr<Settings> s = Parse(
      "listen: 0.0.0.0:9\n"
      "roots: [a, \"/b c\"]\n"
      "timeout_ms: 2500\n"
      "retry: {initial_ms: 20, multiplier: 1.5}\n"
      "tokens:\n"
      "  - {name: ops, roles: [admin, viewer]}\n"
      "  - name: node-1\n"
      "    roles: [node]\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->roots, (std::vector<std::string>{"a", "/b c"}));
  EXPECT_EQ(s->timeout, absl::Milliseconds(2500));
  EXPECT_EQ(s->retry.initial, absl::Milliseconds(20));
  EXPECT_EQ(s->retry.multiplier, 1.5);
  ASSERT_EQ(s->tokens.size(), 2u);
  EXPECT_EQ(s->tokens[1].name, "node-1");
  EXPECT_EQ(s->tokens[0].roles, (std::vector<std::string>{"admin", "viewer"}));
}

TEST(YamlFieldsTest, EmptyDocumentKeepsDefaults) {
  absl::StatusOr<Settings> s = Parse("# nothing set\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->roots, (std::vector<std::string>{"data"}));
  EXPECT_EQ(s->timeout, absl::Seconds(3));
}

TEST(YamlFieldsTest, EmittedTextParsesBackToTheSameSettings) {
  absl::StatusOr<Settings> s = Parse(
      "roots: [x]\ntimeout_ms: 70\nretry: {initial_ms: 10}\ntokens:\n  - {name: a, roles: [r1]}\n  - {name: b, roles: [r2, r3]}\n");
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string text = EmitMapping(SettingsFields(), *s, 0);
  absl::StatusOr<Settings> back = Parse(text);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_EQ(back->roots, s->roots);
  EXPECT_EQ(back->timeout, s->timeout);
  EXPECT_EQ(back->retry.initial, s->retry.initial);
  ASSERT_EQ(back->tokens.size(), 2u);
  EXPECT_EQ(back->tokens[1].roles, s->tokens[1].roles);
}

TEST(YamlFieldsTest, MistakesNameFileLineColumnAndQualifiedKey) {
  struct Case {
    const char* yaml;
    const char* expected;
  };
  const Case cases[] = {
      {"retry: {initail_ms: 5}\n",
       "s.yaml:1:9: unknown key 'initail_ms' in section 'retry' (did you mean 'initial_ms'?)"},
      {"retry:\n  initial_ms: 0\n", "s.yaml:2:15: retry.initial_ms: must be >= 1, got 0"},
      {"timeout_ms: soon\n", "s.yaml:1:13: timeout_ms: expected an integer"},
      {"roots: data\n", "s.yaml:1:8: roots: expected a list of strings, got 'data'"},
      {"roots: [[a]]\n", "s.yaml:1:9: roots: expected a list of strings, got a sequence as an item"},
      {"tokens: {name: a}\n", "s.yaml:1:9: tokens: expected a list, got a mapping"},
      {"tokens:\n  - {name: a, role: [x]}\n",
       "s.yaml:2:15: unknown key 'role' in section 'tokens[0]' (did you mean 'roles'?)"},
      {"listen: a\nlisten: b\n", "s.yaml:2:1: listen: duplicate key (first given at line 1)"},
      {"- a\n", "s.yaml:1:1: settings file: expected a mapping"},
      {"listen: [\n", "s.yaml:2:1: YAML syntax error"},
      // Checks after parsing point at the key they name...
      {"retry: {initial_ms: 5000}\ntimeout_ms: 100\n", "s.yaml:2:13: timeout_ms: must be >= retry.initial_ms"},
      {"tokens:\n  - {name: a, roles: [x]}\n  - {name: b}\n", "s.yaml:3:5: tokens[1]: no roles"},
      // ...or at the file when the key was not in it.
      {"retry: {initial_ms: 5000}\n", "s.yaml: timeout_ms: must be >= retry.initial_ms"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Settings> s = Parse(c.yaml);
    ASSERT_FALSE(s.ok()) << c.yaml;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.expected)) << c.yaml;
  }
}

}  // namespace
}  // namespace pcp::yaml_fields
