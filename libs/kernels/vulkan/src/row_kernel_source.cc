#include "row_kernel_source.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "expr_codegen.h"
#include "kernel_groups.h"

namespace pcp::vulkan {
namespace {

enum class Role { kReduction, kElement, kRow };

struct Member {
  int instruction = -1;
  Role role = Role::kElement;
  int level = 0;      // reductions: the pass computing them (1, 2, ...); others: the last pass they need
  int reduction = 0;  // reductions: index of its accumulator and shared array
};

// The largest power of two <= n (n >= 1): every invocation of a row has an element, none idles.
int64_t PowerOfTwoAtMost(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p <<= 1;
  return p;
}

std::string Combine(bool max, const std::string& a, const std::string& b) {
  return max ? absl::StrCat("pcp_max(", a, ", ", b, ")") : absl::StrCat("(", a, " + ", b, ")");
}

}  // namespace

KernelSource RowKernelSource(const Function& f, const KernelPlan& plan, const PlannedKernel& k) {
  int reduced_dims = 0;
  Shape element;
  for (int m : k.members) {
    const Instruction& inst = f.instructions[static_cast<size_t>(m)];
    if (IsRowReduction(f, inst, &reduced_dims)) {
      element = f.type(inst.operands[0]).shape;
      break;
    }
  }
  const auto split = element.end() - reduced_dims;
  const Shape rows(element.begin(), split), row(split, element.end());
  const int64_t num_rows = NumElements(rows), length = NumElements(row);
  const int64_t per_row = std::min<int64_t>(PowerOfTwoAtMost(length), 256);
  const int64_t local = std::max<int64_t>(per_row, 64);
  const int64_t rows_per_group = local / per_row;

  // Members, their roles and levels (in program order: a member's dependencies come first).
  std::vector<Member> members;
  std::vector<int> member_of(static_cast<size_t>(f.num_values()), -1);
  int reductions = 0, passes = 0;
  for (int m : k.members) {
    const Instruction& inst = f.instructions[static_cast<size_t>(m)];
    Member member;
    member.instruction = m;
    int deps = 0;
    std::vector<ValueId> stack(inst.operands);
    std::vector<bool> seen(static_cast<size_t>(f.num_values()), false);
    while (!stack.empty()) {
      const auto v = static_cast<size_t>(stack.back());
      stack.pop_back();
      if (seen[v]) continue;
      seen[v] = true;
      if (member_of[v] >= 0) {
        deps = std::max(deps, members[static_cast<size_t>(member_of[v])].level);
        continue;
      }
      if (plan.materialized[v] || plan.producer[v] < 0) continue;
      for (ValueId o : f.instructions[static_cast<size_t>(plan.producer[v])].operands) stack.push_back(o);
    }
    if (inst.op == Op::kReduce) {
      member.role = Role::kReduction;
      member.level = deps + 1;
      member.reduction = reductions++;
      passes = std::max(passes, member.level);
    } else {
      member.role = f.type(inst.result).shape == element ? Role::kElement : Role::kRow;
      member.level = deps;
    }
    member_of[static_cast<size_t>(inst.result)] = static_cast<int>(members.size());
    members.push_back(member);
  }

  ExprCodegen gen(f, plan);
  // Row values computed so far (their GLSL variables), element values of the current pass.
  absl::flat_hash_map<ValueId, std::string> row_values, pass_values;
  gen.set_resolver([&](ValueId v, const std::vector<std::string>& idx, std::string* body) -> std::string {
    const int m = member_of[static_cast<size_t>(v)];
    if (m < 0) return "";
    if (auto it = row_values.find(v); it != row_values.end()) return it->second;
    if (auto it = pass_values.find(v); it != pass_values.end()) return it->second;
    // An element value (row values are computed before anything reads them): here, at the
    // pass's element, which is where every member reads it (kernel_groups.h).
    const std::string x =
        gen.EmitInstruction(f.instructions[static_cast<size_t>(members[static_cast<size_t>(m)].instruction)], idx,
                            body);
    pass_values[v] = x;
    return x;
  });

  std::string body;
  const std::vector<std::string> row_idx = gen.Delinearize("row", rows, &body);
  // The coordinates of element j of the row, for a pass's body.
  auto element_idx = [&](std::string* pass) {
    std::vector<std::string> idx = row_idx;
    const std::vector<std::string> j = gen.Delinearize("j", row, pass);
    idx.insert(idx.end(), j.begin(), j.end());
    return idx;
  };
  auto row_ops = [&](int level) {
    for (const Member& m : members) {
      if (m.role != Role::kRow || m.level != level) continue;
      const Instruction& inst = f.instructions[static_cast<size_t>(m.instruction)];
      row_values[inst.result] = gen.EmitInstruction(inst, row_idx, &body);
    }
  };
  row_ops(0);
  for (int pass = 1; pass <= passes; ++pass) {
    std::vector<const Member*> reduced;
    for (const Member& m : members) {
      if (m.role == Role::kReduction && m.level == pass) reduced.push_back(&m);
    }
    std::string loop;
    pass_values.clear();
    const std::vector<std::string> idx = element_idx(&loop);
    std::string init, tree;
    for (const Member* m : reduced) {
      const Instruction& inst = f.instructions[static_cast<size_t>(m->instruction)];
      const bool max = inst.attrs.reduce_kind == ReduceKind::kMax;
      const std::string acc = absl::StrCat("acc", m->reduction), red = absl::StrCat("red", m->reduction);
      absl::StrAppend(&init, "float ", acc, " = ", max ? "uintBitsToFloat(0xff800000u)" : "0.0", ";\n");
      const std::string x = gen.Emit(inst.operands[0], idx, &loop);
      absl::StrAppend(&loop, acc, " = ", Combine(max, acc, x), ";\n");
      absl::StrAppend(&tree, red,
                      "[lane] = ", Combine(max, absl::StrCat(red, "[lane]"), absl::StrCat(red, "[lane + s]")), ";\n");
    }
    absl::StrAppend(&body, init, "for (int j = sl; j < ", length, "; j += ", per_row, ") {\n", loop, "}\n");
    for (const Member* m : reduced) absl::StrAppend(&body, "red", m->reduction, "[lane] = acc", m->reduction, ";\n");
    absl::StrAppend(&body, "barrier();\n");
    if (per_row > 1) {
      absl::StrAppend(&body, "for (int s = ", per_row / 2, "; s > 0; s >>= 1) {\nif (sl < s) {\n", tree,
                      "}\nbarrier();\n}\n");
    }
    for (const Member* m : reduced) {
      const Instruction& inst = f.instructions[static_cast<size_t>(m->instruction)];
      const bool max = inst.attrs.reduce_kind == ReduceKind::kMax;
      const std::string init_value = gen.Emit(inst.operands[1], {}, &body);
      const std::string name = gen.NewName("rv");
      absl::StrAppend(&body, "float ", name, " = ",
                      Combine(max, init_value, absl::StrCat("red", m->reduction, "[first]")), ";\n");
      row_values[inst.result] = name;
    }
    row_ops(pass);
  }

  // The outputs: element values in a last pass, row values by the row's first invocation.
  std::string element_stores, row_stores, outputs;
  {
    std::string loop;
    pass_values.clear();
    const std::vector<std::string> idx = element_idx(&loop);
    for (size_t i = 0; i < k.outputs.size(); ++i) {
      const ValueId v = k.outputs[i];
      const std::string buffer = absl::StrCat("out", i, "_");
      const Member& m = members[static_cast<size_t>(member_of[static_cast<size_t>(v)])];
      if (m.role == Role::kElement) {
        const std::string x = gen.Emit(v, idx, &loop);
        absl::StrAppend(&element_stores,
                        ExprCodegen::StoreTo(buffer, f.type(v).dtype, absl::StrCat("row * ", length, " + j"), x));
      } else {
        absl::StrAppend(&row_stores, ExprCodegen::StoreTo(buffer, f.type(v).dtype, "row", row_values.at(v)));
      }
    }
    outputs = gen.OutputDeclarations(k.outputs);  // (bindings after the inputs, all known now)
    if (!element_stores.empty()) {
      absl::StrAppend(&body, "for (int j = sl; j < ", length, "; j += ", per_row, ") {\n", loop, "if (live) {\n",
                      element_stores, "}\n}\n");
    }
    if (!row_stores.empty()) absl::StrAppend(&body, "if (live && sl == 0) {\n", row_stores, "}\n");
  }
  std::string shared;
  for (int r = 0; r < reductions; ++r) absl::StrAppend(&shared, "shared float red", r, "[", local, "];\n");
  const std::string main_body =
      absl::StrCat("  int lane = int(gl_LocalInvocationID.x);\n  int sl = lane % ", per_row,
                   ";\n  int first = lane - sl;\n", "  for (int base = int(gl_WorkGroupID.x) * ", rows_per_group,
                   "; base < ", num_rows, "; base += int(gl_NumWorkGroups.x) * ", rows_per_group, ") {\n",
                   "  bool live = base + lane / ", per_row, " < ", num_rows, ";\n", "  int row = min(base + lane / ",
                   per_row, ", ", num_rows - 1, ");\n", body, "  barrier();\n  }\n");
  KernelSource src;
  src.name = absl::StrCat("row_", k.value);
  src.glsl = ShaderSource(local, gen.InputDeclarations() + outputs + shared, main_body);
  src.inputs = gen.inputs();
  src.groups[0] = GroupsFor(num_rows, rows_per_group);
  src.empty = num_rows == 0;
  return src;
}

}  // namespace pcp::vulkan
