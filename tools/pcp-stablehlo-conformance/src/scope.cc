// A character-level scan of MLIR text: op names (bare dotted words in operation position, or
// quoted names followed by '(' in the generic form), tensor element types, custom_call targets
// and the bodies of reduce / scatter regions. It needs no parse to succeed, so it can name
// everything a module lacks.
#include "pcp/conformance/scope.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/autodiff/ir.h"
#include "pcp/autodiff/op_list.h"
#include "pcp/autodiff/type_inference.h"

namespace pcp::conformance {
namespace {

// Structure and checks PCP reads besides the ops of its op list.
constexpr absl::string_view kStructureOps[] = {
    "func.func",
    "func.return",
    "func.call",
    "stablehlo.return",
    "arith.constant",
    "stablehlo.dynamic_iota",
    "builtin.module",
    "stablehlo.custom_call",
    "check.expect_eq",
    "check.expect_eq_const",
    "check.expect_almost_eq",
    "check.expect_almost_eq_const",
    "check.expect_close",
    "stablehlo.while",
    "stablehlo.dynamic_slice",
    "stablehlo.dynamic_update_slice",
};
constexpr absl::string_view kCheckTargets[] = {"check.expect_eq", "check.expect_almost_eq", "check.expect_close"};
constexpr absl::string_view kElementTypes[] = {"f32", "i32", "i64", "i1"};
// Read, widened to i32 / i64, for what exports use them for (encodings, indices); the suite's
// cases for them test wraparound, which PCP does not model.
constexpr absl::string_view kWidenedTypes[] = {"i8", "i16", "ui8", "ui16", "ui32"};

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$'; }

struct Op {
  std::string name;
  size_t begin = 0;  // of the name (its quote in the generic form)
  size_t end = 0;    // one past the name (and its closing quote)
  bool generic = false;
};

class Scanner {
 public:
  explicit Scanner(absl::string_view text) : text_(text) {}

  ScopeReport Run() {
    Tokenize();
    bool checks = false;
    for (size_t i = 0; i < ops_.size(); ++i) {
      const Op& op = ops_[i];
      // The op's statement, up to the next op: its attributes and its type.
      const size_t next = i + 1 < ops_.size() ? ops_[i + 1].begin : text_.size();
      CheckOp(op);
      CheckTypeRules(op, text_.substr(op.end, next - op.end));
      checks |= absl::StartsWith(op.name, "check.") || op.name == "stablehlo.custom_call";
    }
    if (!checks) Lack("no checks");
    return std::move(report_);
  }

 private:
  void Lack(std::string what) {
    if (std::find(report_.lacks.begin(), report_.lacks.end(), what) == report_.lacks.end()) {
      report_.lacks.push_back(std::move(what));
    }
  }

  size_t SkipSpace(size_t i) const {
    while (i < text_.size() && std::isspace(static_cast<unsigned char>(text_[i]))) ++i;
    return i;
  }

  // Collects ops and element types.
  void Tokenize() {
    size_t i = 0;
    const size_t n = text_.size();
    while (i < n) {
      const char c = text_[i];
      if (c == '/' && i + 1 < n && text_[i + 1] == '/') {
        while (i < n && text_[i] != '\n') ++i;
      } else if (c == '{' && text_.substr(i, 3) == "{-#") {
        const size_t end = text_.find("#-}", i);
        i = end == absl::string_view::npos ? n : end + 3;
      } else if (c == '"') {
        size_t j = i + 1;
        while (j < n && text_[j] != '"') j += text_[j] == '\\' ? 2 : 1;
        const absl::string_view body = text_.substr(i + 1, std::min(j, n) - i - 1);
        j = std::min(j + 1, n);
        if (j < n && text_[j] == '(' && absl::StrContains(body, '.') && !body.empty() &&
            std::isalpha(static_cast<unsigned char>(body[0]))) {
          ops_.push_back(Op{std::string(body), i, j, true});
        }
        i = j;
      } else if (c == '#' || c == '@' || c == '%' || c == '^') {
        ++i;  // attribute aliases, symbols, values and blocks: skip the name that follows
        if (i < n && text_[i] == '"') continue;
        while (i < n && (IsWordChar(text_[i]) || text_[i] == '-')) ++i;
      } else if (c == '!') {  // a dialect type: !stablehlo.token, !quant.uniform<...>
        size_t j = i + 1;
        while (j < n && IsWordChar(text_[j])) ++j;
        Lack(absl::StrCat("type ", text_.substr(i, j - i)));
        i = j;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < n && IsWordChar(text_[j])) ++j;
        const absl::string_view word = text_.substr(i, j - i);
        if (word == "tensor" && j < n && text_[j] == '<') {
          j = ElementType(j);
        } else if (word == "dense_resource" && j < n && text_[j] == '<') {
          const size_t end = text_.find('>', j);  // a blob's name, not an op
          j = end == absl::string_view::npos ? n : end + 1;
        } else if (absl::StrContains(word, '.') && !absl::EndsWith(word, ".")) {
          const size_t next = SkipSpace(j);
          if (next >= n || text_[next] != '=') ops_.push_back(Op{std::string(word), i, j, false});  // not a key
        }
        i = j;
      } else {
        ++i;
      }
    }
  }

  // `pos` is on the '<' of tensor<...>; records the element type, returns one past the '>'.
  size_t ElementType(size_t pos) {
    int depth = 0;
    size_t end = pos;
    for (; end < text_.size(); ++end) {
      if (text_[end] == '<') ++depth;
      if (text_[end] == '>' && --depth == 0) break;
    }
    absl::string_view inner = text_.substr(pos + 1, std::min(end, text_.size()) - pos - 1);
    // 4x?x8xf32[, encoding]: drop the dimensions, then anything after the element type.
    for (;;) {
      size_t k = 0;
      while (k < inner.size() && (std::isdigit(static_cast<unsigned char>(inner[k])) || inner[k] == '?')) ++k;
      if (k == 0 || k >= inner.size() || inner[k] != 'x') break;
      if (inner[0] == '?') Lack("dynamic shape");
      inner.remove_prefix(k + 1);
    }
    int d = 0;
    size_t k = 0;
    for (; k < inner.size(); ++k) {
      if (inner[k] == '<') ++d;
      if (inner[k] == '>') --d;
      if (d == 0 && (inner[k] == ',' || std::isspace(static_cast<unsigned char>(inner[k])))) break;
    }
    std::string type(inner.substr(0, k));
    if (type[0] == '!') type = type.substr(0, type.find('<'));  // !quant.uniform<i8:f32, 0.5:-128>
    if (std::find(std::begin(kElementTypes), std::end(kElementTypes), type) == std::end(kElementTypes)) {
      const bool widened =
          std::find(std::begin(kWidenedTypes), std::end(kWidenedTypes), type) != std::end(kWidenedTypes);
      Lack(type == "f64" ? "type f64 (PCP computes f64 in f32)"
           : widened     ? absl::StrCat("type ", type, " (read widened; wraparound not modelled)")
                         : absl::StrCat("type ", type));
    }
    return std::min(end + 1, text_.size());
  }

  static bool Known(absl::string_view name) {
    if (std::find(std::begin(kStructureOps), std::end(kStructureOps), name) != std::end(kStructureOps)) return true;
    return ParseOp(name).ok();
  }

  // The ops between the region that starts after `from` and its stablehlo.return.
  std::vector<std::string> RegionOps(size_t from) const {
    std::vector<std::string> ops;
    size_t start = text_.find("^bb0", from);
    const size_t reducer = text_.find("reducer(", from);
    if (reducer < start) start = reducer;
    if (start == absl::string_view::npos) return ops;
    for (const Op& op : ops_) {
      if (op.begin <= start) continue;
      if (op.name == "stablehlo.return") break;
      ops.push_back(op.name);
    }
    return ops;
  }

  static std::string Short(absl::string_view name) {
    const size_t dot = name.find('.');
    return std::string(dot == absl::string_view::npos ? name : name.substr(dot + 1));
  }

  // "stablehlo.scatter with a multiply region" unless the region is one of `allowed` (an
  // empty region returns its second argument: assign).
  void CheckRegion(const Op& op, absl::string_view what, const std::vector<std::string>& allowed, bool assign) {
    const std::vector<std::string> body = RegionOps(op.end);
    if (body.empty() && assign) return;
    if (body.size() == 1 && std::find(allowed.begin(), allowed.end(), body[0]) != allowed.end()) return;
    std::vector<std::string> names;
    for (const std::string& b : body) names.push_back(Short(b));
    Lack(absl::StrCat(what, " with a", names.empty() ? "n assign" : absl::StrCat(" ", absl::StrJoin(names, "+")),
                      " region"));
  }

  // The number of operands of a generic op ("name"(%a, %b)) or of a pretty reduce's
  // `(%a init: %b), (%c init: %d)` groups, counting top-level commas.
  size_t GenericOperandCount(size_t paren) const {
    int depth = 0;
    size_t count = 1;
    for (size_t k = paren; k < text_.size(); ++k) {
      if (text_[k] == '(') ++depth;
      if (text_[k] == ')' && --depth == 0) return k == paren + 1 ? 0 : count;
      if (text_[k] == ',' && depth == 1) ++count;
    }
    return count;
  }

  // PCP's own type rules (type_inference.h) for the op on its first operand's element type:
  // "stablehlo.maximum on i1", "stablehlo.dot_general on i64". Layout and indexing ops work
  // on every type PCP has.
  void CheckTypeRules(const Op& op, absl::string_view statement) {
    absl::StatusOr<pcp::Op> parsed = ParseOp(op.name);
    if (!parsed.ok()) return;
    const pcp::Op o = *parsed;
    if (o == pcp::Op::kDotGeneral && absl::StrContains(statement, "algorithm")) Lack("dot_general with an algorithm");
    if (!(IsElementwise(o) || o == pcp::Op::kDotGeneral || o == pcp::Op::kReduce) || o == pcp::Op::kConvert) return;
    const size_t colon = statement.rfind(" : ");
    if (colon == absl::string_view::npos) return;
    // The first operand's element type (select: the second's; its first is the predicate).
    std::vector<absl::string_view> types;
    for (absl::string_view rest = statement.substr(colon);;) {
      const size_t t = rest.find("tensor<");
      if (t == absl::string_view::npos) break;
      rest = rest.substr(t + 7);
      types.push_back(rest);
    }
    if (types.empty()) return;
    absl::string_view type = types[o == pcp::Op::kSelect && types.size() > 1 ? 1 : 0];
    while (!type.empty() && (std::isdigit(static_cast<unsigned char>(type[0])) || type[0] == 'x'))
      type.remove_prefix(1);
    const absl::string_view name = type.substr(0, type.find_first_of(">,"));
    DType dtype;
    if (name == "f32") {
      dtype = DType::kF32;
    } else if (name == "i32") {
      dtype = DType::kI32;
    } else if (name == "i64") {
      dtype = DType::kI64;
    } else if (name == "i1") {
      dtype = DType::kBool;
    } else {
      return;  // a type out of scope anyway
    }
    const TensorType scalar{dtype, {}};
    std::vector<TensorType> operands;
    if (o == pcp::Op::kSelect) {
      operands = {TensorType{DType::kBool, {}}, scalar, scalar};
    } else {
      operands.assign(OpArity(o) == kVariadic ? 2 : static_cast<size_t>(OpArity(o)), scalar);
    }
    if (!InferResultType(o, operands, Attributes{}).ok()) Lack(absl::StrCat(op.name, " on ", name));
  }

  void CheckOp(const Op& op) {
    if (!Known(op.name)) {
      Lack(absl::StrCat("op ", op.name));
      return;
    }
    if (op.name == "stablehlo.custom_call") {
      std::string target;
      const size_t next = SkipSpace(op.end);
      if (next < text_.size() && text_[next] == '@') {
        size_t j = next + 1;
        while (j < text_.size() && IsWordChar(text_[j])) ++j;
        target = std::string(text_.substr(next + 1, j - next - 1));
      } else if (const size_t key = text_.find("call_target_name = \"", op.end); key != absl::string_view::npos) {
        const size_t b = key + 20;
        target = std::string(text_.substr(b, text_.find('"', b) - b));
      }
      if (std::find(std::begin(kCheckTargets), std::end(kCheckTargets), target) == std::end(kCheckTargets)) {
        Lack(absl::StrCat("custom_call @", target));
      }
    } else if (op.name == "stablehlo.reduce") {
      const size_t paren = SkipSpace(op.end);
      if (paren >= text_.size() || text_[paren] != '(') return;
      if (op.generic) {
        if (GenericOperandCount(paren) > 2) Lack("reduce with several inputs");
      } else {
        int depth = 0;
        size_t k = paren;
        for (; k < text_.size(); ++k) {
          if (text_[k] == '(') ++depth;
          if (text_[k] == ')' && --depth == 0) break;
        }
        const size_t after = SkipSpace(k + 1);
        if (after < text_.size() && text_[after] == ',') {
          Lack("reduce with several inputs");
          return;
        }
        if (text_.substr(after, 7) == "applies") {
          const size_t b = SkipSpace(after + 7);
          size_t e = b;
          while (e < text_.size() && IsWordChar(text_[e])) ++e;
          const absl::string_view body = text_.substr(b, e - b);
          if (body != "stablehlo.add" && body != "stablehlo.maximum") {
            Lack(absl::StrCat("reduce with a ", Short(body), " region"));
          }
          return;
        }
      }
      CheckRegion(op, "reduce", {"stablehlo.add", "stablehlo.maximum"}, /*assign=*/false);
    } else if (op.name == "stablehlo.scatter") {
      const size_t paren = SkipSpace(op.end);
      if (op.generic && paren < text_.size() && text_[paren] == '(' && GenericOperandCount(paren) > 3) {
        Lack("scatter with several inputs");
        return;
      }
      CheckRegion(op, "scatter", {"stablehlo.add"}, /*assign=*/true);
    }
  }

  absl::string_view text_;
  std::vector<Op> ops_;
  ScopeReport report_;
};

}  // namespace

ScopeReport ScanScope(absl::string_view text) { return Scanner(text).Run(); }

}  // namespace pcp::conformance
