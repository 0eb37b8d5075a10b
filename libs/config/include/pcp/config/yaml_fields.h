// Table-driven parsing and emitting of YAML configuration files: job files
// (libs/training/job_config), shepherd.yaml and supervisor.yaml. One parser, so a mistake in
// any of them gets the same treatment: unknown keys with "did you mean", duplicate keys,
// wrong types and out-of-range values, each one line "FILE:LINE:COL: section.key: problem"
// (1-based line and column).
//
// A section is a table of Field<S>; each Field names its key once and says how to parse the
// value into S and how to print it back, so the parser, the unknown-key message and the
// printer all read the same table:
//
//   const std::vector<Field<Settings>> fields = {
//       StringField("listen", &Settings::listen, /*allow_empty=*/false),
//       MillisField("timeout_ms", &Settings::timeout, kAtLeast1),
//       StringListField("roots", &Settings::roots),
//       SectionField("backoff", &Settings::backoff, &BackoffFields())};
//   Context ctx("shepherd.yaml");
//   Settings settings;
//   PCP_RETURN_IF_ERROR(ParseDocument(yaml_text, fields, ctx, settings));
//   // Checks across keys report where the offending key was written:
//   PCP_RETURN_IF_ERROR(ctx.Locate(settings.Validate()));   // "shepherd.yaml:3:7: timeout_ms: ..."
//   std::string text = EmitMapping(fields, settings, /*indent=*/0);
#ifndef PCP_CONFIG_YAML_FIELDS_H_
#define PCP_CONFIG_YAML_FIELDS_H_

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "pcp/base/enum_names.h"
#include "pcp/base/status_macros.h"

namespace pcp::yaml_fields {

// Where errors are reported, and which keys were seen (with their marks).
class Context {
 public:
  // `file` starts every message; `document` names the top level in messages about it
  // ("job file: expected a mapping ...").
  explicit Context(absl::string_view file, absl::string_view document = "file") : file_(file), document_(document) {}
  // For text that did not come from a file (a command-line flag): messages begin with
  // `source` ("--set tls.ca=x: ...") and carry no line and column.
  static Context WithoutPositions(absl::string_view source) {
    Context ctx(source);
    ctx.positions_ = false;
    return ctx;
  }
  const std::string& document() const { return document_; }

  // InvalidArgument "file:line:col: message"; a null mark reads as 1:1.
  absl::Status Error(const YAML::Mark& mark, absl::string_view message) const;

  void Record(const std::string& qkey, const YAML::Mark& key_mark, const YAML::Mark& value_mark) {
    key_marks_[qkey] = key_mark;
    value_marks_[qkey] = value_mark;
  }
  bool Has(const std::string& qkey) const { return value_marks_.count(qkey) > 0; }
  // The mark of the value of the first key present among `qkeys` (else of the first present
  // section key among them, else the null mark).
  YAML::Mark ValueMark(std::initializer_list<std::string> qkeys) const;
  YAML::Mark KeyMark(const std::string& qkey) const;

  // For a check made after parsing (a Validate() whose InvalidArgument message begins with
  // a qualified key, "worker.grace_ms: must be > 0"): the same status, prefixed with the
  // file and the position of that key's value when the file set it, else with the file name
  // alone. OK and other codes pass through unchanged.
  absl::Status Locate(const absl::Status& status) const;

 private:
  std::string file_;
  std::string document_;
  bool positions_ = true;
  std::map<std::string, YAML::Mark> key_marks_;
  std::map<std::string, YAML::Mark> value_marks_;
};

// One key's value while parsing: its node, where it is and its qualified name.
struct Value {
  const YAML::Node& node;
  YAML::Mark mark;   // of the value, or of the key when the value is empty
  std::string qkey;  // "optimizer.lr"
};

// How a key takes its value from one command-line string (pcp/config/command_line.h):
// kScalar as written; kBool also bare (`--insecure`, `--noinsecure`); kList comma-separated
// (or YAML flow, "[a, b]"); kSection is a nested section, whose keys are set one by one.
enum class Form { kScalar, kBool, kList, kSection };

// A key that can be set by itself: qualified ("worker.backoff.initial_ms") and its Form.
struct Leaf {
  std::string key;
  Form form = Form::kScalar;
};

template <typename S>
struct Field {
  absl::string_view key;
  std::function<absl::Status(const Value& value, Context& ctx, S& out)> parse;
  // The YAML text that follows "key:" when printing `in` at `indent` (a scalar with a
  // leading space, or a newline and a nested, indented block).
  std::function<std::string(const S& in, int indent)> emit;
  // A nested section's keys, in order, those of sections within it qualified
  // ("norm_k", "screening.norm_k"); empty for a scalar key.
  std::vector<std::string> subkeys = {};
  Form form = Form::kScalar;
  // A section's settable keys, qualified within it; empty for any other key.
  std::vector<Leaf> leaves = {};
};

// Closed integer interval.
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};
inline constexpr IntRange kAtLeast0{0};
inline constexpr IntRange kAtLeast1{1};

// Real interval; either end may be open.
struct RealRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
};
inline constexpr RealRange kPositive{0.0, std::numeric_limits<double>::infinity(), true, false};
inline constexpr RealRange kNonNegative{0.0, std::numeric_limits<double>::infinity(), false, false};
inline constexpr RealRange kUnitHalfOpen{0.0, 1.0, false, true};  // [0, 1)

// Scalar readers: the error names v.qkey and what was expected ("expected an integer, got
// 'abc'").
absl::StatusOr<std::string> ReadScalar(const Value& v, const Context& ctx, absl::string_view expected);
absl::StatusOr<int64_t> ReadInt(const Value& v, const Context& ctx, IntRange range);
absl::StatusOr<double> ReadReal(const Value& v, const Context& ctx, RealRange range);
absl::StatusOr<bool> ReadBool(const Value& v, const Context& ctx);

// Scalar printers whose output reads back to the same value.
std::string EmitReal(double x);               // shortest round-trip form, e.g. "0.001", "600.0"
std::string EmitString(absl::string_view s);  // double-quoted with escapes

// Levenshtein distance (for "did you mean").
int EditDistance(absl::string_view a, absl::string_view b);
// "unknown key 'lrr' in section 'optimizer' (did you mean 'lr'?); valid keys: lr, ..."
std::string UnknownKeyMessage(absl::string_view key, absl::string_view section,
                              absl::Span<const absl::string_view> valid);
// "a mapping", "a sequence", "nothing" or "'text'".
std::string Describe(const YAML::Node& node);

// ---------------------------------------------------------------------------- field makers

// Any integer member (int64_t, int, uint64_t, ...); `range` is narrowed to what it holds.
template <typename S, typename I>
Field<S> IntField(absl::string_view key, I S::*member, IntRange range) {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>);
  range.min = std::max<int64_t>(range.min, std::numeric_limits<I>::min());
  if constexpr (sizeof(I) < sizeof(int64_t) || std::is_signed_v<I>) {
    range.max = std::min<int64_t>(range.max, std::numeric_limits<I>::max());
  }
  return {key,
          [member, range](const Value& v, Context& ctx, S& out) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(int64_t value, ReadInt(v, ctx, range));
            out.*member = static_cast<I>(value);
            return absl::OkStatus();
          },
          [member](const S& in, int) { return absl::StrCat(" ", in.*member); }};
}

template <typename S>
Field<S> RealField(absl::string_view key, double S::*member, RealRange range) {
  return {key,
          [member, range](const Value& v, Context& ctx, S& out) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(out.*member, ReadReal(v, ctx, range));
            return absl::OkStatus();
          },
          [member](const S& in, int) { return absl::StrCat(" ", EmitReal(in.*member)); }};
}

template <typename S>
Field<S> BoolField(absl::string_view key, bool S::*member) {
  return {key,
          [member](const Value& v, Context& ctx, S& out) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(out.*member, ReadBool(v, ctx));
            return absl::OkStatus();
          },
          [member](const S& in, int) { return std::string(in.*member ? " true" : " false"); },
          {},
          Form::kBool};
}

template <typename S>
Field<S> StringField(absl::string_view key, std::string S::*member, bool allow_empty) {
  return {key,
          [member, allow_empty](const Value& v, Context& ctx, S& out) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(std::string s, ReadScalar(v, ctx, "a string"));
            if (s.empty() && !allow_empty) {
              return ctx.Error(v.mark, absl::StrCat(v.qkey, ": must not be empty"));
            }
            out.*member = std::move(s);
            return absl::OkStatus();
          },
          [member](const S& in, int) { return absl::StrCat(" ", EmitString(in.*member)); }};
}

// An enum spelled by the names in `names` (one of the k...Names tables).
template <typename S, typename E>
Field<S> EnumField(absl::string_view key, E S::*member, absl::Span<const std::pair<E, absl::string_view>> names) {
  return {key,
          [member, names](const Value& v, Context& ctx, S& out) -> absl::Status {
            std::string choices;
            for (const auto& [e, name] : names) {
              absl::StrAppend(&choices, choices.empty() ? "" : ", ", name);
            }
            PCP_ASSIGN_OR_RETURN(std::string s, ReadScalar(v, ctx, absl::StrCat("one of ", choices)));
            for (const auto& [e, name] : names) {
              if (s == name) {
                out.*member = e;
                return absl::OkStatus();
              }
            }
            return ctx.Error(v.mark, absl::StrCat(v.qkey, ": expected one of ", choices, ", got ", Describe(v.node)));
          },
          [member, names](const S& in, int) { return absl::StrCat(" ", NameOf(names, in.*member)); }};
}

template <typename S>
absl::Status ParseMapping(const Value& v, absl::string_view section, const std::vector<Field<S>>& fields, Context& ctx,
                          S& out);

template <typename S>
std::vector<absl::string_view> KeysOf(const std::vector<Field<S>>& fields) {
  std::vector<absl::string_view> keys;
  for (const Field<S>& f : fields) keys.push_back(f.key);
  return keys;
}
template <typename S>
std::string EmitMapping(const std::vector<Field<S>>& fields, const S& in, int indent);

// Every key of `fields`, nested sections' keys qualified by their section ("a", "b.c").
template <typename S>
std::vector<std::string> LeafKeysOf(const std::vector<Field<S>>& fields) {
  std::vector<std::string> keys;
  for (const Field<S>& f : fields) {
    if (f.subkeys.empty()) keys.emplace_back(f.key);
    for (const std::string& sub : f.subkeys) keys.push_back(absl::StrCat(f.key, ".", sub));
  }
  return keys;
}

// Every key of `fields` that can be set by itself, nested sections' keys qualified
// ("listen", "tls.ca"); a list of mappings is one key, set whole.
template <typename S>
std::vector<Leaf> LeavesOf(const std::vector<Field<S>>& fields) {
  std::vector<Leaf> leaves;
  for (const Field<S>& f : fields) {
    if (f.form != Form::kSection) {
      leaves.push_back(Leaf{std::string(f.key), f.form});
      continue;
    }
    for (const Leaf& sub : f.leaves) leaves.push_back(Leaf{absl::StrCat(f.key, ".", sub.key), sub.form});
  }
  return leaves;
}

// `field` of the struct `Sub` held in `S::*member`, as a key of S: a table over a struct
// that holds another (the worker's flags over its WorkerOptions) names each key once.
template <typename S, typename Sub>
Field<S> Lift(Sub S::*member, Field<Sub> field) {
  return {field.key,
          [member, parse = field.parse](const Value& v, Context& ctx, S& out) { return parse(v, ctx, out.*member); },
          [member, emit = field.emit](const S& in, int indent) { return emit(in.*member, indent); },
          field.subkeys,
          field.form,
          field.leaves};
}

// A nested section: `key:` followed by a mapping parsed with `fields` into `in.*member`.
template <typename S, typename Sub>
Field<S> SectionField(absl::string_view key, Sub S::*member, const std::vector<Field<Sub>>* fields) {
  return {key,
          [member, fields](const Value& v, Context& ctx, S& out) -> absl::Status {
            // v.qkey is the section's qualified name ("diloco.screening" when nested).
            return ParseMapping(v, v.qkey, *fields, ctx, out.*member);
          },
          [member, fields](const S& in, int indent) {
            return absl::StrCat("\n", EmitMapping(*fields, in.*member, indent + 2));
          },
          LeafKeysOf(*fields),
          Form::kSection,
          LeavesOf(*fields)};
}

// A whole number of milliseconds in `range`, stored as an absl::Duration.
template <typename S>
Field<S> MillisField(absl::string_view key, absl::Duration S::*member, IntRange range) {
  return {key,
          [member, range](const Value& v, Context& ctx, S& out) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(int64_t ms, ReadInt(v, ctx, range));
            out.*member = absl::Milliseconds(ms);
            return absl::OkStatus();
          },
          [member](const S& in, int) { return absl::StrCat(" ", absl::ToInt64Milliseconds(in.*member)); }};
}

// A sequence of strings, e.g. `roots: [data, /srv/pcp]`; null reads as empty.
absl::StatusOr<std::vector<std::string>> ReadStringList(const Value& v, const Context& ctx);
std::string EmitStringList(absl::Span<const std::string> items);  // " [\"a\", \"b\"]"

template <typename S>
Field<S> StringListField(absl::string_view key, std::vector<std::string> S::*member) {
  return {key,
          [member](const Value& v, Context& ctx, S& out) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(out.*member, ReadStringList(v, ctx));
            return absl::OkStatus();
          },
          [member](const S& in, int) { return EmitStringList(in.*member); },
          {},
          Form::kList};
}

// A sequence of mappings, each parsed with `fields` into one Item; items are named
// "key[i]" in messages ("auth.tokens[1].sha256: ...").
template <typename S, typename Item>
Field<S> ListField(absl::string_view key, std::vector<Item> S::*member, const std::vector<Field<Item>>* fields);

// ----------------------------------------------------------------------- mapping walker

// Parses the mapping `v.node` (null reads as empty) with `fields`; keys of a nested section
// are recorded in `ctx` as "section.key", top-level ones (section "") as "key".
template <typename S>
absl::Status ParseMapping(const Value& v, absl::string_view section, const std::vector<Field<S>>& fields, Context& ctx,
                          S& out) {
  const std::vector<absl::string_view> valid = KeysOf(fields);
  if (v.node.IsNull()) return absl::OkStatus();
  if (!v.node.IsMap()) {
    std::string keys;
    for (absl::string_view k : valid) absl::StrAppend(&keys, keys.empty() ? "" : ", ", k);
    return ctx.Error(v.mark, absl::StrCat(section.empty() ? ctx.document() : section, ": expected a mapping with keys ",
                                          keys, "; got ", Describe(v.node)));
  }
  std::map<std::string, YAML::Mark> seen;
  for (const auto& kv : v.node) {
    const YAML::Node& key = kv.first;
    const YAML::Node& value = kv.second;
    if (!key.IsScalar()) {
      return ctx.Error(key.Mark(), absl::StrCat(section.empty() ? ctx.document() : section,
                                                ": expected a key name, got ", Describe(key)));
    }
    const std::string& name = key.Scalar();
    const Field<S>* field = nullptr;
    for (const Field<S>& f : fields) {
      if (f.key == name) field = &f;
    }
    if (field == nullptr) {
      return ctx.Error(key.Mark(), UnknownKeyMessage(name, section, valid));
    }
    std::string qkey = section.empty() ? name : absl::StrCat(section, ".", name);
    if (auto it = seen.find(name); it != seen.end()) {
      return ctx.Error(key.Mark(),
                       absl::StrCat(qkey, ": duplicate key (first given at line ", it->second.line + 1, ")"));
    }
    seen[name] = key.Mark();
    Value field_value{value, value.IsNull() ? key.Mark() : value.Mark(), qkey};
    ctx.Record(qkey, key.Mark(), field_value.mark);
    PCP_RETURN_IF_ERROR(field->parse(field_value, ctx, out));
  }
  return absl::OkStatus();
}

// "key: value" lines at `indent`, joined by newlines (no trailing newline).
template <typename S>
std::string EmitMapping(const std::vector<Field<S>>& fields, const S& in, int indent) {
  std::string text;
  for (const Field<S>& f : fields) {
    absl::StrAppend(&text, text.empty() ? "" : "\n", std::string(indent, ' '), f.key, ":", f.emit(in, indent));
  }
  return text;
}

template <typename S, typename Item>
Field<S> ListField(absl::string_view key, std::vector<Item> S::*member, const std::vector<Field<Item>>* fields) {
  return {
      key,
      [member, fields](const Value& v, Context& ctx, S& out) -> absl::Status {
        std::vector<Item> items;
        if (!v.node.IsNull()) {
          if (!v.node.IsSequence()) {
            return ctx.Error(v.mark, absl::StrCat(v.qkey, ": expected a list, got ", Describe(v.node)));
          }
          for (size_t i = 0; i < v.node.size(); ++i) {
            const YAML::Node item = v.node[i];
            const std::string qkey = absl::StrCat(v.qkey, "[", i, "]");
            ctx.Record(qkey, item.Mark(), item.Mark());
            PCP_RETURN_IF_ERROR(ParseMapping(Value{item, item.Mark(), qkey}, qkey, *fields, ctx, items.emplace_back()));
          }
        }
        out.*member = std::move(items);
        return absl::OkStatus();
      },
      [member, fields](const S& in, int indent) {
        if ((in.*member).empty()) return std::string(" []");
        std::string text;
        for (const Item& item : in.*member) {
          // "- " then the item's keys, the first on the dash's line.
          std::string body = EmitMapping(*fields, item, indent + 4);
          body.replace(0, indent + 4, std::string(indent + 2, ' ') + "- ");
          absl::StrAppend(&text, "\n", body);
        }
        return text;
      },
      LeafKeysOf(*fields), Form::kList};
}

// Loads a whole YAML document and parses its top-level mapping with `fields` into `out`
// (an empty document leaves `out` as it is). Syntax errors come back as InvalidArgument
// "FILE:LINE:COL: YAML syntax error: ..."; yaml-cpp's exceptions never escape.
template <typename S>
absl::Status ParseDocument(absl::string_view yaml_text, const std::vector<Field<S>>& fields, Context& ctx, S& out) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    return ParseMapping(Value{root, root.Mark(), ""}, "", fields, ctx, out);
  } catch (const YAML::ParserException& e) {
    return ctx.Error(e.mark, absl::StrCat("YAML syntax error: ", e.msg));
  } catch (const YAML::Exception& e) {
    return ctx.Error(e.mark, absl::StrCat("YAML error: ", e.msg));
  }
}

}  // namespace pcp::yaml_fields

#endif  // PCP_CONFIG_YAML_FIELDS_H_
