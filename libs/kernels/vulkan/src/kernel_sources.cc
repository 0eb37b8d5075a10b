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

// A kernel with one output (`out_`, after the inputs).
std::string Assemble(const ExprCodegen& gen, DType out, int local_x, const std::string& shared,
                     const std::string& main_body) {
  return ShaderSource(local_x, gen.BufferDeclarations(out) + shared, main_body);
}

}  // namespace

std::string ShaderSource(int64_t local_x, const std::string& declarations, const std::string& main_body) {
  const std::string rest =
      absl::StrCat("\nlayout(local_size_x = ", local_x, ") in;\n", declarations, "\nvoid main() {\n", main_body, "}\n");
  return GlslPreludeFor(rest) + rest;
}

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
  // Every member has the shape of its outputs (kernel_groups.h).
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
  KernelSource src;
  src.name = absl::StrCat("group_", k.value);
  src.glsl = ShaderSource(256, gen.InputDeclarations() + gen.OutputDeclarations(k.outputs), main_body);
  src.inputs = gen.inputs();
  src.groups[0] = GroupsFor(n, 256);
  src.empty = n == 0;
  return src;
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

bool UsesCooperativeMatrix(const Function& f, const Instruction& inst, const KernelSourceOptions& options) {
  if (!options.cooperative_matrix_f16 || inst.op != Op::kDotGeneral || f.type(inst.result).dtype != DType::kF32) {
    return false;
  }
  for (ValueId o : inst.operands) {
    DType half = DType::kF32;
    if (!IsRoundedThroughHalf(f, o, &half) || half != DType::kF16) return false;
  }
  return true;
}

absl::StatusOr<KernelSource> KernelSourceFor(const Function& f, const KernelPlan& plan, const PlannedKernel& k,
                                             const KernelSourceOptions& options) {
  const Instruction& inst = f.instructions[static_cast<size_t>(k.instruction)];
  switch (k.kind) {
    case KernelKind::kMap: return MapKernelSource(f, plan, inst);
    case KernelKind::kReduce: return ReduceKernelSource(f, plan, inst);
    case KernelKind::kSplitReduce: return SplitReduceKernelSource(f, plan, k);
    case KernelKind::kScatter: return ScatterKernelSource(f, plan, inst);
    case KernelKind::kRow: return RowKernelSource(f, plan, k);
    case KernelKind::kMapGroup: return MapGroupSource(f, plan, k);
    case KernelKind::kAttention: return AttentionKernelSource(f, plan, k);
    case KernelKind::kDot:
      return UsesCooperativeMatrix(f, inst, options)
                 ? CoopDotKernelSource(f, plan, inst, k.value, DotTileFor(f, inst, options.dot_tile),
                                       options.emulate_cooperative_matrix)
                 : DotKernelSource(f, plan, inst, k.value, DotTileFor(f, inst, options.dot_tile));
  }
  return absl::InternalError("unknown kernel kind");
}

}  // namespace pcp::vulkan
