// Command-line flags generated from a config file's field table (pcp/config/yaml_fields.h),
// so that a key is declared once, in the table, and is then both a YAML key and a flag:
//
//   --set KEY=VALUE          any key, qualified as in the file: --set worker.backoff.max_ms=5000
//                            (repeatable; also --set=KEY=VALUE)
//   --KEY=VALUE, --KEY VALUE the same, with '_' for '.': --worker_backoff_max_ms=5000
//   --OLD_NAME=VALUE         a legacy spelling kept for compatibility (an Alias of a key)
//
// Values are read as the file reads them, by the same field: "--max_jobs=abc" fails as
// "max_jobs: abc" in the file would. A list is comma-separated (--data_roots=a,b; empty =
// []) or YAML flow ([a, b]); a bool may be bare (--insecure, --noinsecure). Overrides apply
// in command-line order, after the --config file.
//
//   PCP_ASSIGN_OR_RETURN(KeyFlags flags, KeyFlags::Create(LeavesOf(Fields()), kAliases));
//   std::vector<Override> overrides;
//   std::vector<char*> rest;
//   PCP_RETURN_IF_ERROR(flags.Extract(argc, argv, IsAbslFlag, rest, overrides));
//   absl::ParseCommandLine(rest.size(), rest.data());    // --config and the other flags
//   Settings settings = ...the --config file, or defaults...;
//   for (const Override& o : overrides) PCP_RETURN_IF_ERROR(ApplyOverride(Fields(), o, settings));
#ifndef PCP_CONFIG_COMMAND_LINE_H_
#define PCP_CONFIG_COMMAND_LINE_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/config/yaml_fields.h"

namespace pcp::yaml_fields {

// One key set on the command line.
struct Override {
  std::string key;      // qualified, as in the file: "worker.binary"
  std::string value;    // the text after '=' (or the next argument)
  std::string spelled;  // as given, for messages: "--worker_binary=/usr/bin/pcp-worker"
};

// A second flag name for a key (a spelling that scripts and units already use).
struct Alias {
  absl::string_view flag;  // "token_source"
  absl::string_view key;   // "token"
};

class KeyFlags {
 public:
  // Every leaf becomes the flag named by its key with '.' replaced by '_'; each alias must
  // name a leaf. A flag name given twice is an error (a programmer's: tests call Create).
  static absl::StatusOr<KeyFlags> Create(std::vector<Leaf> leaves, absl::Span<const Alias> aliases);

  // Takes every config override out of argv (argv[0] first), in order, into `overrides`;
  // what is left (argv[0], other flags with their values, positional arguments, everything
  // after "--") goes to `rest` for absl::ParseCommandLine. `is_other_flag` says whether a
  // name is some other flag (absl's: --config, --help, ...). A flag that is neither is an
  // error naming it, with the closest key flag when one is near.
  absl::Status Extract(int argc, char** argv, const std::function<bool(absl::string_view)>& is_other_flag,
                       std::vector<char*>& rest, std::vector<Override>& overrides) const;

  // For --help: one line per key, "  --worker_backoff_max_ms sets worker.backoff.max_ms; also
  // --backoff_max_ms" (tests of deploy units look for "--FLAG " in --helpfull).
  std::string Help() const;

  // The key a flag name sets ("" when it sets none).
  std::string KeyOf(absl::string_view flag) const;

 private:
  std::map<std::string, Leaf, std::less<>> by_flag_;  // flag name -> the leaf it sets
  std::vector<Leaf> leaves_;
  std::vector<Alias> aliases_;
};

// Whether `name` is an absl flag of this program (ABSL_FLAG) or one of absl's own (--help,
// --helpfull, --version, --flagfile, ...): the `is_other_flag` of a service's Extract.
bool IsAbslFlag(absl::string_view name);

// The YAML node an override stands for: {a: {b: VALUE}} for key "a.b", VALUE read by the
// key's Form. InvalidArgument naming the flag for bad YAML flow text.
absl::StatusOr<YAML::Node> OverrideNode(absl::Span<const Leaf> leaves, const Override& o);

// Applies one override to `out` with the same table (and messages) as the file:
// "--set max_jobs=abc: max_jobs: expected an integer, got 'abc'", "--set lisen=x: unknown
// top-level key 'lisen' (did you mean 'listen'?); valid keys: ...".
template <typename S>
absl::Status ApplyOverride(const std::vector<Field<S>>& fields, const Override& o, S& out) {
  PCP_ASSIGN_OR_RETURN(YAML::Node root, OverrideNode(LeavesOf(fields), o));
  Context ctx = Context::WithoutPositions(o.spelled);
  return ParseMapping(Value{root, root.Mark(), ""}, "", fields, ctx, out);
}

// For a check made after the overrides (a Validate() whose InvalidArgument message begins
// with a qualified key): the message prefixed with the last override that set that key, so
// the error names the flag; other statuses unchanged.
absl::Status NameOverride(const absl::Status& status, absl::Span<const Override> overrides);

}  // namespace pcp::yaml_fields

#endif  // PCP_CONFIG_COMMAND_LINE_H_
