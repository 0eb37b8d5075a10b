#include "pcp/autodiff/op_list.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace pcp {
namespace {

constexpr std::array<absl::string_view, kNumOps> kOpNames = {{
#define PCP_OP_NAME_(e, name, arity, category, properties) name,
    PCP_OP_LIST(PCP_OP_NAME_)
#undef PCP_OP_NAME_
}};

constexpr std::array<Op, kNumOps> kAllOps = {{
#define PCP_OP_VALUE_(e, name, arity, category, properties) Op::e,
    PCP_OP_LIST(PCP_OP_VALUE_)
#undef PCP_OP_VALUE_
}};

}  // namespace

absl::string_view OpName(Op op) { return kOpNames[static_cast<size_t>(op)]; }
const Op* AllOps() { return kAllOps.data(); }

absl::StatusOr<Op> ParseOp(absl::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return static_cast<Op>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown operation '", name, "'"));
}

}  // namespace pcp
