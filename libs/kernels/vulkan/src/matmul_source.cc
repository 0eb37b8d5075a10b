// dot_general as a batched, tiled matmul: C[b, m, n] = sum_k A(b, m, k) * B(b, k, n), where
// b runs over the batch dims, m over lhs free dims, n over rhs free dims and k over the
// contracting dims (each flattened row-major), so the row-major result is C itself.
// A and B are read through generated loader functions: transposed, sliced, broadcast or
// reshaped operands cost no copy. Each 256-invocation work group computes a 64x64 tile
// (4x4 per invocation) over 16-deep shared-memory tiles of A and B, or for large products
// (DotTileFor) a 128x128 tile (8x8 per invocation: twice the multiply-adds per shared-memory
// read) over 8-deep ones; every element is the same chain of fma in k order either way, so the
// two tiles give the same bits. An operand that is a plain buffer laid out [batch..., free...,
// contract...] (A) or [batch..., contract..., free...] (B) with the contiguous extent a
// multiple of 4 is loaded as vec4 (one per invocation per tile); others go through the loader
// functions (A's tile k-fastest, B's n-fastest, which coalesces for row-major x @ W).
#include <string>

#include "absl/strings/str_cat.h"
#include "expr_codegen.h"
#include "glsl_prelude.h"
#include "kernel_sources.h"

namespace pcp::vulkan {
namespace {

// Coordinates of an operand from flattened (batch, free, contract) positions.
std::vector<std::string> OperandIndex(ExprCodegen& gen, const Shape& shape, const std::vector<int64_t>& batch,
                                      const std::vector<int64_t>& contract, const std::string& b,
                                      const std::string& free, const std::string& k, std::string* body) {
  std::vector<bool> is_free(shape.size(), true);
  Shape bshape, fshape, kshape;
  for (int64_t d : batch) {
    is_free[static_cast<size_t>(d)] = false;
    bshape.push_back(shape[static_cast<size_t>(d)]);
  }
  for (int64_t d : contract) {
    is_free[static_cast<size_t>(d)] = false;
    kshape.push_back(shape[static_cast<size_t>(d)]);
  }
  std::vector<int64_t> free_dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (is_free[d]) {
      free_dims.push_back(static_cast<int64_t>(d));
      fshape.push_back(shape[d]);
    }
  }
  const std::vector<std::string> bi = gen.Delinearize(b, bshape, body);
  const std::vector<std::string> fi = gen.Delinearize(free, fshape, body);
  const std::vector<std::string> ki = gen.Delinearize(k, kshape, body);
  std::vector<std::string> idx(shape.size());
  for (size_t i = 0; i < batch.size(); ++i) idx[static_cast<size_t>(batch[i])] = bi[i];
  for (size_t i = 0; i < contract.size(); ++i) idx[static_cast<size_t>(contract[i])] = ki[i];
  for (size_t i = 0; i < free_dims.size(); ++i) idx[static_cast<size_t>(free_dims[i])] = fi[i];
  return idx;
}

// dims == [first, first + 1, ...].
bool Consecutive(const std::vector<int64_t>& dims, int64_t first) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != first + static_cast<int64_t>(i)) return false;
  }
  return true;
}

}  // namespace

// batch, m, n and k of a dot_general (see the top of the file).
struct DotSizes {
  int64_t batch = 1, m = 1, n = 1, k = 1;
};

namespace {

DotSizes SizesOf(const Function& f, const Instruction& inst) {
  const DotDims& dd = inst.attrs.dot;
  const Shape& ls = f.type(inst.operands[0]).shape;
  const Shape& rs = f.type(inst.operands[1]).shape;
  int64_t batch = 1, m = 1, n = 1, kk = 1;
  for (int64_t d : dd.lhs_batch) batch *= ls[static_cast<size_t>(d)];
  for (int64_t d : dd.lhs_contract) kk *= ls[static_cast<size_t>(d)];
  m = NumElements(ls) / std::max<int64_t>(1, batch * kk);
  n = NumElements(rs) / std::max<int64_t>(1, batch * kk);
  if (batch * kk == 0) {  // sizes from the shapes when something is empty
    m = 1;
    n = 1;
    for (size_t d = 0; d < ls.size(); ++d) {
      bool free = true;
      for (int64_t x : dd.lhs_batch) free &= x != static_cast<int64_t>(d);
      for (int64_t x : dd.lhs_contract) free &= x != static_cast<int64_t>(d);
      if (free) m *= ls[d];
    }
    for (size_t d = 0; d < rs.size(); ++d) {
      bool free = true;
      for (int64_t x : dd.rhs_batch) free &= x != static_cast<int64_t>(d);
      for (int64_t x : dd.rhs_contract) free &= x != static_cast<int64_t>(d);
      if (free) n *= rs[d];
    }
  }
  return {batch, m, n, kk};
}

// loadA(b, m, k) and loadB(b, k, n): the operands through their fused index expressions,
// 0 outside [0, m) x [0, k) and [0, k) x [0, n).
std::string OperandLoaders(ExprCodegen& gen, const Function& f, const Instruction& inst, const DotSizes& z, bool load_a,
                           bool load_b) {
  const DotDims& dd = inst.attrs.dot;
  std::string loaders;
  if (load_a) {
    std::string body;
    const std::vector<std::string> idx =
        OperandIndex(gen, f.type(inst.operands[0]).shape, dd.lhs_batch, dd.lhs_contract, "b", "m", "k", &body);
    const std::string a = gen.Emit(inst.operands[0], idx, &body);
    absl::StrAppend(&loaders, "float loadA(int b, int m, int k) {\n  if (m >= ", z.m, " || k >= ", z.k,
                    ") return 0.0;\n", body, "  return ", a, ";\n}\n");
  }
  if (load_b) {
    std::string body;
    const std::vector<std::string> idx =
        OperandIndex(gen, f.type(inst.operands[1]).shape, dd.rhs_batch, dd.rhs_contract, "b", "n", "k", &body);
    const std::string b = gen.Emit(inst.operands[1], idx, &body);
    absl::StrAppend(&loaders, "float loadB(int b, int k, int n) {\n  if (n >= ", z.n, " || k >= ", z.k,
                    ") return 0.0;\n", body, "  return ", b, ";\n}\n");
  }
  return loaders;
}

}  // namespace

int DotTileFor(const Function& f, const Instruction& inst, int forced) {
  if (forced == 64 || forced == 128) return forced;
  const DotSizes z = SizesOf(f, inst);
  if (z.m < 128 || z.n < 128) return 64;
  return z.batch * ((z.m + 127) / 128) * ((z.n + 127) / 128) >= kLargeDotTileMinTiles ? 128 : 64;
}

KernelSource DotKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst, int tile) {
  const DotDims& dd = inst.attrs.dot;
  const Shape& ls = f.type(inst.operands[0]).shape;
  const DotSizes z = SizesOf(f, inst);
  const int64_t batch = z.batch, m = z.m, n = z.n, kk = z.k;
  // The tile: tm x tn outputs per work group of 16 x 16 invocations, each computing r x c of
  // them (rows ty + 16 i, columns tx + 16 j), over tk-deep steps. Both tiles load 1024
  // elements of each operand per step: 4 scalars or one vec4 per invocation.
  const int tm = tile == 128 ? 128 : 64, tn = tm, tk = 1024 / tm, r = tm / 16, c = tn / 16;
  // vec4 fast paths (see the top of the file).
  const auto nb = static_cast<int64_t>(dd.lhs_batch.size());
  const bool a_vec4 = plan.materialized[static_cast<size_t>(inst.operands[0])] && kk % 4 == 0 && kk > 0 &&
                      Consecutive(dd.lhs_batch, 0) &&
                      Consecutive(dd.lhs_contract, static_cast<int64_t>(ls.size() - dd.lhs_contract.size()));
  const bool b_vec4 = plan.materialized[static_cast<size_t>(inst.operands[1])] && n % 4 == 0 && n > 0 &&
                      Consecutive(dd.rhs_batch, 0) && Consecutive(dd.rhs_contract, nb);
  ExprCodegen gen(f, plan);
  std::string loaders = OperandLoaders(gen, f, inst, z, !a_vec4, !b_vec4);
  absl::StrAppend(&loaders, "shared float As[", tk, "][", tm + 1, "];\nshared float Bs[", tk, "][", tn + 1, "];\n");

  std::string a_tile =
      absl::StrCat("      As[e % ", tk, "][e / ", tk, "] = loadA(b, m0 + e / ", tk, ", k0 + e % ", tk, ");\n");
  std::string b_tile =
      absl::StrCat("      Bs[e / ", tn, "][e % ", tn, "] = loadB(b, k0 + e / ", tn, ", n0 + e % ", tn, ");\n");
  std::string a_vec_load, b_vec_load;
  if (a_vec4) {
    const int bind = gen.Vec4Binding(inst.operands[0]);
    a_vec_load = absl::StrCat(
        "    {\n      int am = tid / ", tk / 4, ", ak = (tid % ", tk / 4, ") * 4;\n      vec4 v = vec4(0.0);\n",
        "      if (m0 + am < ", m, " && k0 + ak < ", kk, ") v = in", bind, ".d[((b * ", m, " + m0 + am) * ", kk,
        " + k0 + ak) >> 2];\n",
        "      As[ak][am] = v.x; As[ak + 1][am] = v.y; As[ak + 2][am] = v.z; As[ak + 3][am] = v.w;\n    }\n");
    a_tile.clear();
  }
  if (b_vec4) {
    const int bind = gen.Vec4Binding(inst.operands[1]);
    b_vec_load = absl::StrCat(
        "    {\n      int bk = tid / ", tn / 4, ", bn = (tid % ", tn / 4, ") * 4;\n      vec4 v = vec4(0.0);\n",
        "      if (k0 + bk < ", kk, " && n0 + bn < ", n, ") v = in", bind, ".d[((b * ", kk, " + k0 + bk) * ", n,
        " + n0 + bn) >> 2];\n",
        "      Bs[bk][bn] = v.x; Bs[bk][bn + 1] = v.y; Bs[bk][bn + 2] = v.z; Bs[bk][bn + 3] = v.w;\n    }\n");
    b_tile.clear();
  }
  const std::string main_body =
      absl::StrCat("  for (int b = int(gl_WorkGroupID.z); b < ", batch,
                   "; b += int(gl_NumWorkGroups.z)) {\n"
                   "  int m0 = int(gl_WorkGroupID.y) * ",
                   tm, ", n0 = int(gl_WorkGroupID.x) * ", tn,
                   ";\n"
                   "  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);\n"
                   "  int tid = ty * 16 + tx;\n"
                   "  float acc[",
                   r, "][", c, "];\n  for (int i = 0; i < ", r, "; ++i) for (int j = 0; j < ", c,
                   "; ++j) acc[i][j] = 0.0;\n"
                   "  for (int k0 = 0; k0 < ",
                   kk, "; k0 += ", tk, ") {\n", a_vec_load, b_vec_load,
                   a_tile.empty() && b_tile.empty()
                       ? ""
                       : "    for (int i = 0; i < 4; ++i) {\n      int e = tid + i * 256;\n",
                   a_tile, b_tile, a_tile.empty() && b_tile.empty() ? "" : "    }\n",
                   "    barrier();\n"
                   "    for (int k = 0; k < ",
                   tk,
                   "; ++k) {\n"
                   "      float av[",
                   r, "], bv[", c, "];\n      for (int i = 0; i < ", r, "; ++i) av[i] = As[k][ty + 16 * i];\n",
                   "      for (int j = 0; j < ", c, "; ++j) bv[j] = Bs[k][tx + 16 * j];\n",
                   "      for (int i = 0; i < ", r, "; ++i) for (int j = 0; j < ", c,
                   "; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);\n"
                   "    }\n"
                   "    barrier();\n"
                   "  }\n"
                   "  for (int i = 0; i < ",
                   r, "; ++i) for (int j = 0; j < ", c,
                   "; ++j) {\n"
                   "    int mm = m0 + ty + 16 * i, nn = n0 + tx + 16 * j;\n"
                   "    if (mm < ",
                   m, " && nn < ", n, ") out_.d[(b * ", m, " + mm) * ", n,
                   " + nn] = acc[i][j];\n"
                   "  }\n"
                   "  }\n");
  KernelSource k;
  k.name = absl::StrCat("dot_", m, "x", n, "x", kk, (batch > 1 ? absl::StrCat("_b", batch) : ""),
                        (tm == 128 ? "_t128" : ""), "_", inst.result);
  const std::string rest =
      absl::StrCat("\nlayout(local_size_x = 16, local_size_y = 16) in;\n", gen.BufferDeclarations(DType::kF32), loaders,
                   "\nvoid main() {\n", main_body, "}\n");
  k.glsl = GlslPreludeFor(rest) + rest;
  k.inputs = gen.inputs();
  k.groups[0] = static_cast<uint32_t>((n + tn - 1) / tn);
  k.groups[1] = static_cast<uint32_t>((m + tm - 1) / tm);
  k.groups[2] = GroupsFor(batch, 1);
  k.empty = batch * m * n == 0;
  return k;
}

// Tensor cores: each 128-invocation work group (4 subgroups of 32) computes a 64x64 tile of
// C; each subgroup a 32x32 quarter as 2x2 16x16 f32 accumulators. Per 32-deep step the group
// loads A's 64x32 and B's 32x64 tiles through the loaders into shared memory as f16 (exact:
// UsesCooperativeMatrix admits only f16-rounded operands), then each subgroup multiplies
// 2 x 2 x 2 16x16x16 pieces. The accumulators go through shared memory to the output, so
// edges need no special case. Row strides 40, 72 and 68 elements keep every matrix load and
// store 16-byte aligned and spread the rows over shared-memory banks.
KernelSource CoopDotKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst) {
  const DotSizes z = SizesOf(f, inst);
  ExprCodegen gen(f, plan);
  std::string loaders = OperandLoaders(gen, f, inst, z, true, true);
  absl::StrAppend(&loaders,
                  "shared float16_t As[64 * 40];\n"
                  "shared float16_t Bs[32 * 72];\n"
                  "shared float Cs[64 * 68];\n");
  const std::string main_body = absl::StrCat(
      "  const int tid = int(gl_LocalInvocationID.x);\n"
      "  const int wm = int(gl_SubgroupID >> 1) * 32, wn = int(gl_SubgroupID & 1u) * 32;\n"
      "  for (int b = int(gl_WorkGroupID.z); b < ",
      z.batch,
      "; b += int(gl_NumWorkGroups.z)) {\n"
      "  const int m0 = int(gl_WorkGroupID.y) * 64, n0 = int(gl_WorkGroupID.x) * 64;\n"
      "  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][2];\n"
      "  for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j)\n"
      "    acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);\n"
      "  for (int k0 = 0; k0 < ",
      z.k,
      "; k0 += 32) {\n"
      "    for (int e = tid; e < 2048; e += 128) {\n"
      "      As[(e >> 5) * 40 + (e & 31)] = float16_t(loadA(b, m0 + (e >> 5), k0 + (e & 31)));\n"
      "      Bs[(e >> 6) * 72 + (e & 63)] = float16_t(loadB(b, k0 + (e >> 6), n0 + (e & 63)));\n"
      "    }\n"
      "    barrier();\n"
      "    for (int kk = 0; kk < 32; kk += 16) {\n"
      "      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[2];\n"
      "      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> bm[2];\n"
      "      for (int i = 0; i < 2; ++i) coopMatLoadNV(a[i], As, uint((wm + 16 * i) * 40 + kk), 40u, false);\n"
      "      for (int j = 0; j < 2; ++j) coopMatLoadNV(bm[j], Bs, uint(kk * 72 + wn + 16 * j), 72u, false);\n"
      "      for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j)\n"
      "        acc[i][j] = coopMatMulAddNV(a[i], bm[j], acc[i][j]);\n"
      "    }\n"
      "    barrier();\n"
      "  }\n"
      "  for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j)\n"
      "    coopMatStoreNV(acc[i][j], Cs, uint((wm + 16 * i) * 68 + wn + 16 * j), 68u, false);\n"
      "  barrier();\n"
      "  for (int e = tid; e < 4096; e += 128) {\n"
      "    const int mm = m0 + (e >> 6), nn = n0 + (e & 63);\n"
      "    if (mm < ",
      z.m, " && nn < ", z.n, ") out_.d[(b * ", z.m, " + mm) * ", z.n,
      " + nn] = Cs[(e >> 6) * 68 + (e & 63)];\n"
      "  }\n"
      "  barrier();\n"
      "  }\n");
  KernelSource k;
  k.name = absl::StrCat("dot_coopmat_", z.m, "x", z.n, "x", z.k, (z.batch > 1 ? absl::StrCat("_b", z.batch) : ""), "_",
                        inst.result);
  const std::string rest = absl::StrCat("\nlayout(local_size_x = 128) in;\n", gen.BufferDeclarations(DType::kF32),
                                        loaders, "\nvoid main() {\n", main_body, "}\n");
  // The extensions go right after the header, before the prelude's functions.
  std::string prelude = GlslPreludeFor(rest);
  prelude.insert(GlslHeader().size(),
                 "#extension GL_KHR_memory_scope_semantics : require\n"
                 "#extension GL_NV_cooperative_matrix : require\n"
                 "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
                 "#extension GL_KHR_shader_subgroup_basic : require\n");
  k.glsl = prelude + rest;
  k.inputs = gen.inputs();
  k.groups[0] = static_cast<uint32_t>((z.n + 63) / 64);
  k.groups[1] = static_cast<uint32_t>((z.m + 63) / 64);
  k.groups[2] = GroupsFor(z.batch, 1);
  k.empty = z.batch * z.m * z.n == 0;
  return k;
}

}  // namespace pcp::vulkan
