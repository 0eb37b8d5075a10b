#include "pcp/autodiff/verifier.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/type_inference.h"

namespace pcp {
namespace {

absl::Status Fail(const Function& f, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("function @", f.name, ": ", what));
}

}  // namespace

absl::Status Verify(const Function& f) {
  const int64_t n = f.num_values();
  if (f.param_names.size() != f.params.size()) return Fail(f, "one name per parameter expected");
  if (f.result_names.size() != f.results.size()) return Fail(f, "one name per result expected");
  // defined[v]: v has been defined by a parameter or an earlier instruction.
  std::vector<bool> defined(static_cast<size_t>(n), false);
  auto define = [&](ValueId v, absl::string_view by) -> absl::Status {
    if (v < 0 || v >= n) return Fail(f, absl::StrCat(by, " defines value %", v, " which has no type"));
    if (defined[v]) return Fail(f, absl::StrCat(by, " redefines value %", v));
    defined[v] = true;
    return absl::OkStatus();
  };
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (auto s = define(f.params[i], absl::StrCat("parameter ", i)); !s.ok()) return s;
  }
  std::vector<TensorType> operand_types;
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    std::string where = absl::StrCat("instruction ", i, " (", OpName(inst.op), ")");
    operand_types.clear();
    for (ValueId v : inst.operands) {
      if (v < 0 || v >= n || !defined[v]) {
        return Fail(f, absl::StrCat(where, " uses value %", v, " before it is defined"));
      }
      operand_types.push_back(f.type(v));
    }
    if (auto s = define(inst.result, where); !s.ok()) return s;
    absl::StatusOr<TensorType> t = InferResultType(inst.op, operand_types, inst.attrs, &f.type(inst.result));
    if (!t.ok()) return Fail(f, absl::StrCat(where, ": ", t.status().message()));
  }
  for (size_t i = 0; i < f.results.size(); ++i) {
    ValueId v = f.results[i];
    if (v < 0 || v >= n || !defined[v]) return Fail(f, absl::StrCat("result ", i, " is not a defined value"));
  }
  return absl::OkStatus();
}

absl::Status Verify(const Module& m) {
  std::set<std::string> names;
  for (const Function& f : m.functions) {
    if (f.name.empty()) return absl::InvalidArgumentError("module: a function has no name");
    if (!names.insert(f.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("module: function @", f.name, " is defined twice"));
    }
    if (auto s = Verify(f); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace pcp
