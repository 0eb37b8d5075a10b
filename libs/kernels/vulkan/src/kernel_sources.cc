#include "kernel_sources.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "expr_codegen.h"
#include "glsl_prelude.h"
#include "pcp/autodiff/mixed_precision.h"
#include "row_kernel_source.h"

namespace pcp::vulkan {
namespace {

absl::string_view ShortName(Op op) {
  absl::string_view n = OpName(op);
  return n.substr(n.rfind('.') + 1);
}

std::string Assemble(const ExprCodegen& gen, DType out, int local_x, const std::string& shared,
                     const std::string& main_body) {
  const std::string rest = absl::StrCat("\nlayout(local_size_x = ", local_x, ") in;\n", gen.BufferDeclarations(out),
                                        shared, "\nvoid main() {\n", main_body, "}\n");
  return GlslPreludeFor(rest) + rest;
}

}  // namespace

uint32_t GroupsFor(int64_t n, int64_t per_group) {
  const int64_t g = (n + per_group - 1) / per_group;
  return static_cast<uint32_t>(std::clamp<int64_t>(g, 1, 65535));
}

KernelSource MapKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst) {
  const TensorType& rt = f.type(inst.result);
  const int64_t n = rt.num_elements();
  ExprCodegen gen(f, plan);
  std::string body;
  const std::vector<std::string> idx = gen.Delinearize("gid", rt.shape, &body);
  const std::string v = gen.EmitInstruction(inst, idx, &body);
  absl::StrAppend(&body, ExprCodegen::Store(rt.dtype, "gid", v));
  const std::string main_body = absl::StrCat("  for (int gid = int(gl_GlobalInvocationID.x); gid < ", n,
                                             "; gid += int(gl_NumWorkGroups.x) * 256) {\n", body, "  }\n");
  KernelSource k;
  k.name = absl::StrCat("map_", ShortName(inst.op), "_", inst.result);
  k.glsl = Assemble(gen, rt.dtype, 256, "", main_body);
  k.inputs = gen.inputs();
  k.groups[0] = GroupsFor(n, 256);
  k.empty = n == 0;
  return k;
}

KernelSource MapGroupSource(const Function& f, const KernelPlan& plan, const PlannedKernel& k) {
  // Every member has the shape of its outputs (row_kernel_plan.h).
  const Shape& shape = f.type(k.outputs[0]).shape;
  const int64_t n = NumElements(shape);
  ExprCodegen gen(f, plan);
  absl::flat_hash_map<ValueId, int> member;  // value -> its instruction
  for (int m : k.members) member[f.instructions[static_cast<size_t>(m)].result] = m;
  // Members read each other at the element being computed: each is emitted once per element.
  absl::flat_hash_map<ValueId, std::string> computed;
  gen.set_resolver([&](ValueId v, const std::vector<std::string>& idx, std::string* body) -> std::string {
    const auto it = member.find(v);
    if (it == member.end()) return "";
    if (auto c = computed.find(v); c != computed.end()) return c->second;
    const std::string x = gen.EmitInstruction(f.instructions[static_cast<size_t>(it->second)], idx, body);
    computed[v] = x;
    return x;
  });
  std::string body;
  const std::vector<std::string> idx = gen.Delinearize("gid", shape, &body);
  std::string stores;
  for (size_t i = 0; i < k.outputs.size(); ++i) {
    const ValueId v = k.outputs[i];
    const std::string x = gen.Emit(v, idx, &body);
    absl::StrAppend(&stores, ExprCodegen::StoreTo(absl::StrCat("out", i, "_"), f.type(v).dtype, "gid", x));
  }
  const std::string main_body = absl::StrCat("  for (int gid = int(gl_GlobalInvocationID.x); gid < ", n,
                                             "; gid += int(gl_NumWorkGroups.x) * 256) {\n", body, stores, "  }\n");
  const std::string rest = absl::StrCat("\nlayout(local_size_x = 256) in;\n", gen.InputDeclarations(),
                                        gen.OutputDeclarations(k.outputs), "\nvoid main() {\n", main_body, "}\n");
  KernelSource src;
  src.name = absl::StrCat("group_", k.value);
  src.glsl = GlslPreludeFor(rest) + rest;
  src.inputs = gen.inputs();
  src.groups[0] = GroupsFor(n, 256);
  src.empty = n == 0;
  return src;
}

namespace {

// A reduction's kernel: in one dispatch, or split in two (ReduceSplitFor, kernel_plan.h).
KernelSource ReduceSource(const Function& f, const KernelPlan& plan, const Instruction& inst, bool split) {
  const TensorType& rt = f.type(inst.result);
  const TensorType& in = f.type(inst.operands[0]);
  const DType d = rt.dtype;
  const char* type = GlslType(d);
  const bool sum = inst.attrs.reduce_kind == ReduceKind::kSum;
  std::vector<bool> reduced(in.shape.size(), false);
  for (int64_t x : inst.attrs.dims) reduced[static_cast<size_t>(x)] = true;
  Shape kept, red;
  for (size_t i = 0; i < in.shape.size(); ++i) (reduced[i] ? red : kept).push_back(in.shape[i]);
  const int64_t outputs = NumElements(kept), rn = NumElements(red);
  std::string identity, combine_fn;
  if (sum) {
    identity = absl::StrCat(type, "(0)");
  } else if (d == DType::kF32) {
    identity = "uintBitsToFloat(0xff800000u)";
  } else if (d == DType::kI32) {
    identity = "int(0x80000000u)";
  } else {
    identity = "int64_t(0x8000000000000000ul)";
  }
  auto combine = [&](const std::string& a, const std::string& b) {
    if (sum) return absl::StrCat("(", a, " + ", b, ")");
    if (d == DType::kF32) return absl::StrCat("pcp_max(", a, ", ", b, ")");
    return absl::StrCat("(", a, " > ", b, " ? ", a, " : ", b, ")");
  };
  ExprCodegen gen(f, plan);
  // The element at output `o`, reduced position `r`.
  std::string element;
  const std::vector<std::string> oidx = gen.Delinearize("o", kept, &element);
  const std::vector<std::string> ridx = gen.Delinearize("r", red, &element);
  std::vector<std::string> idx;
  for (size_t i = 0, ko = 0, kr = 0; i < in.shape.size(); ++i) idx.push_back(reduced[i] ? ridx[kr++] : oidx[ko++]);
  const std::string x = gen.Emit(inst.operands[0], idx, &element);
  absl::StrAppend(&element, "acc = ", combine("acc", x), ";\n");
  std::string init_body;
  const std::string init = gen.Emit(inst.operands[1], {}, &init_body);
  const std::string finish = absl::StrCat(init_body, ExprCodegen::Store(d, "o", combine(init, "acc")));
  // The work group's 64 accumulators `acc` into partial[0], by a shared-memory tree.
  const std::string shared = absl::StrCat("shared ", type, " partial[64];\n");
  const std::string tree =
      absl::StrCat("    partial[lane] = acc;\n    barrier();\n    for (int s = 32; s > 0; s >>= 1) {\n",
                   "      if (lane < s) partial[lane] = ", combine("partial[lane]", "partial[lane + s]"), ";\n",
                   "      barrier();\n    }\n");

  const ReduceSplit s = ReduceSplitFor(f, inst);
  split = split && s.split();
  KernelSource k;
  k.name = absl::StrCat("reduce_", sum ? "sum_" : "max_", split ? "split_" : "", inst.result);
  k.inputs = {};
  k.empty = outputs == 0;
  if (split) {
    // Pass 1: work group w computes partial w, of output w / slices over slice w % slices.
    const int64_t partials = outputs * s.slices;
    const std::string main_body = absl::StrCat(
        "  int lane = int(gl_LocalInvocationID.x);\n"
        "  for (int w = int(gl_WorkGroupID.x); w < ",
        partials, "; w += int(gl_NumWorkGroups.x)) {\n", "    int o = w / ", s.slices, ";\n", "    int lo = (w - o * ",
        s.slices, ") * ", s.slice, ";\n", "    int hi = min(lo + ", s.slice, ", ", rn, ");\n", "    ", type,
        " acc = ", identity, ";\n", "    for (int r = lo + lane; r < hi; r += 64) {\n", element, "    }\n", tree,
        "    if (lane == 0) scratch_.d[w] = partial[0];\n    barrier();\n  }\n");
    // Pass 2: a work group per output, its partials in slice order.
    const std::string finish_body = absl::StrCat(
        "  int lane = int(gl_LocalInvocationID.x);\n"
        "  for (int o = int(gl_WorkGroupID.x); o < ",
        outputs, "; o += int(gl_NumWorkGroups.x)) {\n", "    ", type, " acc = ", identity, ";\n",
        "    for (int g = lane; g < ", s.slices,
        "; g += 64) acc = ", combine("acc", absl::StrCat("scratch_.d[o * ", s.slices, " + g]")), ";\n", tree,
        "    if (lane == 0) {\n      acc = partial[0];\n", finish, "    }\n    barrier();\n  }\n");
    // Both passes declare the same bindings: the inputs (the init may be one), the output,
    // then the scratch buffer.
    auto scratch = [&](const char* access) {
      return absl::StrCat("layout(std430, set = 0, binding = ", gen.inputs().size() + 1, ") ", access,
                          " buffer Scratch { ", type, " d[]; } scratch_;\n");
    };
    k.glsl = Assemble(gen, d, 64, scratch("writeonly") + shared, main_body);
    k.finish_glsl = Assemble(gen, d, 64, scratch("readonly") + shared, finish_body);
    k.groups[0] = GroupsFor(partials, 1);
    k.finish_groups[0] = GroupsFor(outputs, 1);
    k.scratch_bytes = partials * SizeOf(d);
  } else if (rn >= 64) {
    // Long reductions: one work group of 64 per output with a shared-memory tree; short
    // ones: one invocation per output.
    const std::string main_body = absl::StrCat(
        "  int lane = int(gl_LocalInvocationID.x);\n"
        "  for (int o = int(gl_WorkGroupID.x); o < ",
        outputs, "; o += int(gl_NumWorkGroups.x)) {\n", "    ", type, " acc = ", identity, ";\n",
        "    for (int r = lane; r < ", rn, "; r += 64) {\n", element, "    }\n", tree,
        "    if (lane == 0) {\n      acc = partial[0];\n", finish, "    }\n    barrier();\n  }\n");
    k.glsl = Assemble(gen, d, 64, shared, main_body);
    k.groups[0] = GroupsFor(outputs, 1);
  } else {
    const std::string main_body =
        absl::StrCat("  for (int o = int(gl_GlobalInvocationID.x); o < ", outputs,
                     "; o += int(gl_NumWorkGroups.x) * 64) {\n", "    ", type, " acc = ", identity, ";\n",
                     "    for (int r = 0; r < ", rn, "; ++r) {\n", element, "    }\n", finish, "  }\n");
    k.glsl = Assemble(gen, d, 64, "", main_body);
    k.groups[0] = GroupsFor(outputs, 64);
  }
  k.inputs = gen.inputs();
  return k;
}

}  // namespace

KernelSource ReduceKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst) {
  return ReduceSource(f, plan, inst, /*split=*/false);
}

KernelSource SplitReduceKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst) {
  return ReduceSource(f, plan, inst, /*split=*/true);
}

KernelSource ScatterKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst) {
  // out[v, d] = operand[v, d] + sum over i in order with indices[i] == v of updates[i, d]:
  // each output element is owned by one invocation, so the sums are deterministic and in
  // the interpreter's order. O(V * D * I): meant for embedding-sized tables.
  const TensorType& rt = f.type(inst.result);
  const TensorType& indices = f.type(inst.operands[1]);
  const int64_t n = rt.num_elements(), ni = indices.num_elements();
  ExprCodegen gen(f, plan);
  std::string body;
  const std::vector<std::string> idx = gen.Delinearize("gid", rt.shape, &body);
  const std::string base = gen.Emit(inst.operands[0], idx, &body);
  absl::StrAppend(&body, GlslType(rt.dtype), " acc = ", base, ";\n");
  std::string loop;
  const std::vector<std::string> iidx = gen.Delinearize("i", indices.shape, &loop);
  const std::string k = gen.Emit(inst.operands[1], iidx, &loop);
  std::string add;
  std::vector<std::string> uidx = iidx;
  uidx.insert(uidx.end(), idx.begin() + 1, idx.end());
  const std::string u = gen.Emit(inst.operands[2], uidx, &add);
  absl::StrAppend(&body, "for (int i = 0; i < ", ni, "; ++i) {\n", loop, "if (", k, " == ", GlslType(indices.dtype),
                  "(", idx[0], ")) {\n", add, "acc += ", u, ";\n}\n}\n", ExprCodegen::Store(rt.dtype, "gid", "acc"));
  KernelSource ks;
  ks.name = absl::StrCat("scatter_", inst.result);
  ks.glsl = Assemble(gen, rt.dtype, 64, "",
                     absl::StrCat("  for (int gid = int(gl_GlobalInvocationID.x); gid < ", n,
                                  "; gid += int(gl_NumWorkGroups.x) * 64) {\n", body, "  }\n"));
  ks.inputs = gen.inputs();
  ks.groups[0] = GroupsFor(n, 64);
  ks.empty = n == 0;
  return ks;
}

bool UsesCooperativeMatrix(const Function& f, const Instruction& inst, const DeviceKernelOptions& device) {
  if (!device.cooperative_matrix_f16 || inst.op != Op::kDotGeneral || f.type(inst.result).dtype != DType::kF32) {
    return false;
  }
  for (ValueId o : inst.operands) {
    DType half = DType::kF32;
    if (!IsRoundedThroughHalf(f, o, &half) || half != DType::kF16) return false;
  }
  return true;
}

absl::StatusOr<KernelSource> KernelSourceFor(const Function& f, const KernelPlan& plan, const PlannedKernel& k,
                                             const DeviceKernelOptions& device) {
  const Instruction& inst = f.instructions[static_cast<size_t>(k.instruction)];
  switch (k.kind) {
    case KernelKind::kMap: return MapKernelSource(f, plan, inst);
    case KernelKind::kReduce: return ReduceKernelSource(f, plan, inst);
    case KernelKind::kSplitReduce: return SplitReduceKernelSource(f, plan, inst);
    case KernelKind::kScatter: return ScatterKernelSource(f, plan, inst);
    case KernelKind::kRow: return RowKernelSource(f, plan, k);
    case KernelKind::kMapGroup: return MapGroupSource(f, plan, k);
    case KernelKind::kDot:
      return UsesCooperativeMatrix(f, inst, device) ? CoopDotKernelSource(f, plan, inst)
                                                    : DotKernelSource(f, plan, inst);
  }
  return absl::InternalError("unknown kernel kind");
}

}  // namespace pcp::vulkan
