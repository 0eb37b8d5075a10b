#include "pcp/config/command_line.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pcp::yaml_fields {

absl::StatusOr<KeyFlags> KeyFlags::Create(std::vector<Leaf> leaves, absl::Span<const Alias> aliases) {
  KeyFlags flags;
  auto add = [&flags](std::string flag, const Leaf& leaf) -> absl::Status {
    if (flag == "set" || !flags.by_flag_.emplace(flag, leaf).second) {
      return absl::InternalError(absl::StrCat("flag --", flag, " (key ", leaf.key, ") is declared twice"));
    }
    return absl::OkStatus();
  };
  for (const Leaf& leaf : leaves) {
    PCP_RETURN_IF_ERROR(add(absl::StrReplaceAll(leaf.key, {{".", "_"}}), leaf));
  }
  for (const Alias& alias : aliases) {
    const Leaf* target = nullptr;
    for (const Leaf& leaf : leaves) {
      if (leaf.key == alias.key) target = &leaf;
    }
    if (target == nullptr) {
      return absl::InternalError(absl::StrCat("flag --", alias.flag, " names no key '", alias.key, "'"));
    }
    PCP_RETURN_IF_ERROR(add(std::string(alias.flag), *target));
  }
  flags.leaves_ = std::move(leaves);
  flags.aliases_.assign(aliases.begin(), aliases.end());
  return flags;
}

std::string KeyFlags::KeyOf(absl::string_view flag) const {
  auto it = by_flag_.find(flag);
  return it == by_flag_.end() ? "" : it->second.key;
}

absl::Status KeyFlags::Extract(int argc, char** argv, const std::function<bool(absl::string_view)>& is_other_flag,
                               std::vector<char*>& rest, std::vector<Override>& overrides) const {
  if (argc > 0) rest.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") {  // the rest is positional, for absl to see as such
      for (; i < argc; ++i) rest.push_back(argv[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      rest.push_back(argv[i]);
      continue;
    }
    absl::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    const absl::string_view name = body.substr(0, eq);
    const bool has_value = eq != absl::string_view::npos;
    const absl::string_view inline_value = has_value ? body.substr(eq + 1) : absl::string_view();
    // The value of a flag that needs one and was given without '=': the next argument.
    auto value_of = [&](absl::string_view flag, std::string* spelled) -> absl::StatusOr<std::string> {
      *spelled = std::string(arg);
      if (has_value) return std::string(inline_value);
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": expected a value"));
      ++i;
      absl::StrAppend(spelled, " ", argv[i]);
      return std::string(argv[i]);
    };
    if (name == "set") {
      std::string spelled;
      PCP_ASSIGN_OR_RETURN(std::string kv, value_of("set", &spelled));
      const size_t kv_eq = kv.find('=');
      if (kv_eq == std::string::npos || kv_eq == 0) {
        return absl::InvalidArgumentError(absl::StrCat(spelled, ": expected --set KEY=VALUE"));
      }
      overrides.push_back(Override{kv.substr(0, kv_eq), kv.substr(kv_eq + 1), spelled});
      continue;
    }
    if (auto it = by_flag_.find(name); it != by_flag_.end()) {
      const Leaf& leaf = it->second;
      if (leaf.form == Form::kBool && !has_value) {
        overrides.push_back(Override{leaf.key, "true", std::string(arg)});
        continue;
      }
      std::string spelled;
      PCP_ASSIGN_OR_RETURN(std::string value, value_of(name, &spelled));
      overrides.push_back(Override{leaf.key, std::move(value), std::move(spelled)});
      continue;
    }
    if (absl::ConsumePrefix(&body, "no") && !has_value) {
      if (auto it = by_flag_.find(body); it != by_flag_.end() && it->second.form == Form::kBool) {
        overrides.push_back(Override{it->second.key, "false", std::string(arg)});
        continue;
      }
    }
    if (is_other_flag(name) || (absl::StartsWith(name, "no") && !has_value && is_other_flag(name.substr(2)))) {
      rest.push_back(argv[i]);
      continue;
    }
    std::string message = absl::StrCat("unknown flag --", name);
    int best = 3;
    absl::string_view suggestion;
    for (const auto& [flag, leaf] : by_flag_) {
      if (const int d = EditDistance(name, flag); d < best) {
        best = d;
        suggestion = flag;
      }
    }
    if (!suggestion.empty()) absl::StrAppend(&message, " (did you mean --", suggestion, "?)");
    absl::StrAppend(&message, "; --help lists every flag and config key");
    return absl::InvalidArgumentError(message);
  }
  return absl::OkStatus();
}

std::string KeyFlags::Help() const {
  std::string text;
  for (const Leaf& leaf : leaves_) {
    const std::string flag = absl::StrReplaceAll(leaf.key, {{".", "_"}});
    absl::StrAppend(&text, "  --", flag, " sets ", leaf.key);
    for (const Alias& alias : aliases_) {
      if (alias.key == leaf.key) absl::StrAppend(&text, "; also --", alias.flag);
    }
    if (leaf.form == Form::kList) absl::StrAppend(&text, " (a list: A,B,... or YAML [...])");
    if (leaf.form == Form::kBool) absl::StrAppend(&text, " (bare = true; --no", flag, " = false)");
    absl::StrAppend(&text, "\n");
  }
  return text;
}

bool IsAbslFlag(absl::string_view name) {
  // absl::ParseCommandLine handles these itself; they are not in its registry.
  static constexpr absl::string_view kBuiltin[] = {"help",     "helpfull",  "helpshort",  "helppackage",
                                                   "helpon",   "helpmatch", "version",    "only_check_args",
                                                   "flagfile", "fromenv",   "tryfromenv", "undefok"};
  for (absl::string_view builtin : kBuiltin) {
    if (name == builtin) return true;
  }
  return absl::FindCommandLineFlag(name) != nullptr;
}

absl::StatusOr<YAML::Node> OverrideNode(absl::Span<const Leaf> leaves, const Override& o) {
  const Leaf* leaf = nullptr;
  for (const Leaf& l : leaves) {
    if (l.key == o.key) leaf = &l;
  }
  const bool scalar = leaf != nullptr && (leaf->form == Form::kScalar || leaf->form == Form::kBool);
  YAML::Node value;
  if (!scalar && !o.value.empty() && (o.value[0] == '[' || o.value[0] == '{')) {
    try {
      value = YAML::Load(o.value);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(o.spelled, ": YAML syntax error: ", e.msg));
    }
  } else if (leaf != nullptr && leaf->form == Form::kList) {
    value = YAML::Node(YAML::NodeType::Sequence);
    if (!o.value.empty()) {
      for (absl::string_view item : absl::StrSplit(o.value, ',')) value.push_back(std::string(item));
    }
  } else {
    value = YAML::Node(o.value);
  }
  std::vector<std::string> parts = absl::StrSplit(o.key, '.');
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    YAML::Node section(YAML::NodeType::Map);
    section[*it] = value;
    value = section;
  }
  return value;
}

absl::Status NameOverride(const absl::Status& status, absl::Span<const Override> overrides) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  const absl::string_view message = status.message();
  const absl::string_view key = message.substr(0, message.find(':'));
  for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
    if (it->key == key || absl::StartsWith(it->key, absl::StrCat(key, "."))) {
      return absl::InvalidArgumentError(absl::StrCat(it->spelled, ": ", message));
    }
  }
  return status;
}

}  // namespace pcp::yaml_fields
