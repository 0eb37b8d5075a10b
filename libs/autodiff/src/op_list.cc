#include "pcp/autodiff/op_list.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace pcp {
namespace {

struct OpInfo {
  absl::string_view name;
  int arity;
  OpCategory category;
};

constexpr std::array<OpInfo, kNumOps> kOpInfo = {{
#define PCP_OP_INFO_(e, name, arity, category) {name, arity, OpCategory::category},
    PCP_OP_LIST(PCP_OP_INFO_)
#undef PCP_OP_INFO_
}};

constexpr std::array<Op, kNumOps> kAllOps = {{
#define PCP_OP_VALUE_(e, name, arity, category) Op::e,
    PCP_OP_LIST(PCP_OP_VALUE_)
#undef PCP_OP_VALUE_
}};

}  // namespace

absl::string_view OpName(Op op) { return kOpInfo[static_cast<size_t>(op)].name; }
int OpArity(Op op) { return kOpInfo[static_cast<size_t>(op)].arity; }
OpCategory GetOpCategory(Op op) { return kOpInfo[static_cast<size_t>(op)].category; }
const Op* AllOps() { return kAllOps.data(); }

absl::StatusOr<Op> ParseOp(absl::string_view name) {
  for (size_t i = 0; i < kOpInfo.size(); ++i) {
    if (kOpInfo[i].name == name) return static_cast<Op>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown operation '", name, "'"));
}

}  // namespace pcp
