// Reductions' kernels (kernel_sources.h): a work group of 64 per output with a shared-memory
// tree, one invocation per output for short ones, or split in two dispatches (ReduceSplitFor,
// kernel_plan.h), alone or as a reduction group's members.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "expr_codegen.h"
#include "kernel_sources.h"

namespace pcp::vulkan {
namespace {

// What a reduce's kernels are made of, around an accumulator `acc` and output index `o`.
struct ReduceParts {
  DType dtype = DType::kF32;
  const char* type = "float";
  bool sum = true;
  int64_t outputs = 0;  // kept elements
  int64_t extent = 0;   // reduced elements per output
  std::string identity;
  std::string element;  // declares output o's and reduced position r's coordinates; acc = acc ⊕ x
  std::string finish;   // stores init ⊕ acc at output o

  std::string Combine(const std::string& a, const std::string& b) const {
    if (sum) return absl::StrCat("(", a, " + ", b, ")");
    if (dtype == DType::kF32) return absl::StrCat("pcp_max(", a, ", ", b, ")");
    return absl::StrCat("(", a, " > ", b, " ? ", a, " : ", b, ")");
  }
  // The work group's 64 accumulators `acc` into partial[0], by a shared-memory tree.
  std::string Tree() const {
    return absl::StrCat("    partial[lane] = acc;\n    barrier();\n    for (int s = 32; s > 0; s >>= 1) {\n",
                        "      if (lane < s) partial[lane] = ", Combine("partial[lane]", "partial[lane + s]"), ";\n",
                        "      barrier();\n    }\n");
  }
  std::string Shared() const { return absl::StrCat("shared ", type, " partial[64];\n"); }
};

// `inst`'s parts, its loads through `gen`, its result stored into the buffer named `buffer`.
ReduceParts PartsOf(ExprCodegen& gen, const Function& f, const Instruction& inst, const std::string& buffer) {
  const TensorType& in = f.type(inst.operands[0]);
  ReduceParts p;
  p.dtype = f.type(inst.result).dtype;
  p.type = GlslType(p.dtype);
  p.sum = inst.attrs.reduce_kind == ReduceKind::kSum;
  std::vector<bool> reduced(in.shape.size(), false);
  for (int64_t x : inst.attrs.dims) reduced[static_cast<size_t>(x)] = true;
  Shape kept, red;
  for (size_t i = 0; i < in.shape.size(); ++i) (reduced[i] ? red : kept).push_back(in.shape[i]);
  p.outputs = NumElements(kept);
  p.extent = NumElements(red);
  if (p.sum) {
    p.identity = absl::StrCat(p.type, "(0)");
  } else if (p.dtype == DType::kF32) {
    p.identity = "uintBitsToFloat(0xff800000u)";
  } else if (p.dtype == DType::kI32) {
    p.identity = "int(0x80000000u)";
  } else {
    p.identity = "int64_t(0x8000000000000000ul)";
  }
  const std::vector<std::string> oidx = gen.Delinearize("o", kept, &p.element);
  const std::vector<std::string> ridx = gen.Delinearize("r", red, &p.element);
  std::vector<std::string> idx;
  for (size_t i = 0, ko = 0, kr = 0; i < in.shape.size(); ++i) idx.push_back(reduced[i] ? ridx[kr++] : oidx[ko++]);
  const std::string x = gen.Emit(inst.operands[0], idx, &p.element);
  absl::StrAppend(&p.element, "acc = ", p.Combine("acc", x), ";\n");
  const std::string init = gen.Emit(inst.operands[1], {}, &p.finish);
  absl::StrAppend(&p.finish, ExprCodegen::StoreTo(buffer, p.dtype, "o", p.Combine(init, "acc")));
  return p;
}

absl::string_view KindName(const ReduceParts& p) { return p.sum ? "sum_" : "max_"; }

}  // namespace

KernelSource ReduceKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst) {
  ExprCodegen gen(f, plan);
  const ReduceParts p = PartsOf(gen, f, inst, "out_");
  KernelSource k;
  k.name = absl::StrCat("reduce_", KindName(p), inst.result);
  k.empty = p.outputs == 0;
  if (p.extent >= 64) {
    // Long reductions: one work group of 64 per output with a shared-memory tree; short
    // ones: one invocation per output.
    const std::string main_body = absl::StrCat(
        "  int lane = int(gl_LocalInvocationID.x);\n"
        "  for (int o = int(gl_WorkGroupID.x); o < ",
        p.outputs, "; o += int(gl_NumWorkGroups.x)) {\n", "    ", p.type, " acc = ", p.identity, ";\n",
        "    for (int r = lane; r < ", p.extent, "; r += 64) {\n", p.element, "    }\n", p.Tree(),
        "    if (lane == 0) {\n      acc = partial[0];\n", p.finish, "    }\n    barrier();\n  }\n");
    k.glsl = ShaderSource(64, gen.BufferDeclarations(p.dtype) + p.Shared(), main_body);
    k.groups[0] = GroupsFor(p.outputs, 1);
  } else {
    const std::string main_body =
        absl::StrCat("  for (int o = int(gl_GlobalInvocationID.x); o < ", p.outputs,
                     "; o += int(gl_NumWorkGroups.x) * 64) {\n", "    ", p.type, " acc = ", p.identity, ";\n",
                     "    for (int r = 0; r < ", p.extent, "; ++r) {\n", p.element, "    }\n", p.finish, "  }\n");
    k.glsl = ShaderSource(64, gen.BufferDeclarations(p.dtype), main_body);
    k.groups[0] = GroupsFor(p.outputs, 64);
  }
  k.inputs = gen.inputs();
  return k;
}

KernelSource SplitReduceKernelSource(const Function& f, const KernelPlan& plan, const PlannedKernel& k) {
  const std::vector<int> members = k.members.empty() ? std::vector<int>{k.instruction} : k.members;
  const std::vector<ValueId> outputs = OutputsOf(k);
  ExprCodegen gen(f, plan);
  // Pass 1: work group w computes the partial w; the members' partials follow each other, a
  // member's partial w' (from its first) being of its output w' / slices over slice w' % slices.
  // Pass 2: work group g finishes output g; the members' outputs follow each other.
  std::string pass1, pass2;
  int64_t partials = 0, finished = 0;
  ReduceParts p;
  for (size_t i = 0; i < members.size(); ++i) {
    const Instruction& inst = f.instructions[static_cast<size_t>(members[i])];
    p = PartsOf(gen, f, inst, absl::StrCat("out", i, "_"));  // (members share the dtype)
    const ReduceSplit s = ReduceSplitFor(f, inst);
    const char* branch = i == 0 ? "    if" : "    } else if";
    absl::StrAppend(&pass1, branch, " (w < ", partials + p.outputs * s.slices, ") {\n", "    int o = (w - ", partials,
                    ") / ", s.slices, ";\n", "    int lo = (w - ", partials, " - o * ", s.slices, ") * ", s.slice,
                    ";\n", "    int hi = min(lo + ", s.slice, ", ", p.extent, ");\n", "    ", p.type,
                    " acc = ", p.identity, ";\n", "    for (int r = lo + lane; r < hi; r += 64) {\n", p.element,
                    "    }\n", p.Tree(), "    if (lane == 0) scratch_.d[w] = partial[0];\n");
    absl::StrAppend(&pass2, branch, " (g < ", finished + p.outputs, ") {\n", "    int o = g - ", finished, ";\n",
                    "    ", p.type, " acc = ", p.identity, ";\n", "    for (int q = lane; q < ", s.slices,
                    "; q += 64) acc = ",
                    p.Combine("acc", absl::StrCat("scratch_.d[", partials, " + o * ", s.slices, " + q]")), ";\n",
                    p.Tree(), "    if (lane == 0) {\n      acc = partial[0];\n", p.finish, "    }\n");
    partials += p.outputs * s.slices;
    finished += p.outputs;
  }
  const std::string lane = "  int lane = int(gl_LocalInvocationID.x);\n";
  const std::string main_body =
      absl::StrCat(lane, "  for (int w = int(gl_WorkGroupID.x); w < ", partials, "; w += int(gl_NumWorkGroups.x)) {\n",
                   pass1, "    }\n    barrier();\n  }\n");
  const std::string finish_body =
      absl::StrCat(lane, "  for (int g = int(gl_WorkGroupID.x); g < ", finished, "; g += int(gl_NumWorkGroups.x)) {\n",
                   pass2, "    }\n    barrier();\n  }\n");
  // Both passes declare the same bindings: the inputs (an init may be one), the outputs, then
  // the scratch buffer.
  auto declarations = [&](const char* access) {
    return absl::StrCat(gen.InputDeclarations(), gen.OutputDeclarations(outputs),
                        "layout(std430, set = 0, binding = ", gen.inputs().size() + outputs.size(), ") ", access,
                        " buffer Scratch { ", p.type, " d[]; } scratch_;\n", p.Shared());
  };
  KernelSource src;
  // (A group's members may mix sums and maxima.)
  src.name = members.size() > 1 ? absl::StrCat("reduce_split_group_", k.value)
                                : absl::StrCat("reduce_", KindName(p), "split_", k.value);
  src.glsl = ShaderSource(64, declarations("writeonly"), main_body);
  src.finish_glsl = ShaderSource(64, declarations("readonly"), finish_body);
  src.groups[0] = GroupsFor(partials, 1);
  src.finish_groups[0] = GroupsFor(finished, 1);
  src.scratch_bytes = partials * SizeOf(p.dtype);
  src.inputs = gen.inputs();
  src.empty = finished == 0;
  return src;
}

}  // namespace pcp::vulkan
