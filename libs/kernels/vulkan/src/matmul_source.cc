// dot_general as a batched, tiled matmul: C[b, m, n] = sum_k A(b, m, k) * B(b, k, n), where
// b runs over the batch dims, m over lhs free dims, n over rhs free dims and k over the
// contracting dims (each flattened row-major), so the row-major result is C itself.
// A and B are read through generated loader functions: transposed, sliced, broadcast or
// reshaped operands cost no copy. Each 256-invocation work group computes a 64x64 tile
// (4x4 per invocation) over 16-deep shared-memory tiles of A and B. An operand that is a
// plain buffer laid out [batch..., free..., contract...] (A) or [batch..., contract...,
// free...] (B) with the contiguous extent a multiple of 4 is loaded as vec4 (one per
// invocation per tile); others go through the loader functions (A's tile k-fastest, B's
// n-fastest, which coalesces for row-major x @ W).
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

KernelSource DotKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst) {
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
  // vec4 fast paths (see the top of the file).
  const auto nb = static_cast<int64_t>(dd.lhs_batch.size());
  const bool a_vec4 = plan.materialized[static_cast<size_t>(inst.operands[0])] && kk % 4 == 0 && kk > 0 &&
                      Consecutive(dd.lhs_batch, 0) &&
                      Consecutive(dd.lhs_contract, static_cast<int64_t>(ls.size() - dd.lhs_contract.size()));
  const bool b_vec4 = plan.materialized[static_cast<size_t>(inst.operands[1])] && n % 4 == 0 && n > 0 &&
                      Consecutive(dd.rhs_batch, 0) && Consecutive(dd.rhs_contract, nb);
  ExprCodegen gen(f, plan);
  std::string loaders;
  if (!a_vec4) {
    std::string body;
    const std::vector<std::string> idx = OperandIndex(gen, ls, dd.lhs_batch, dd.lhs_contract, "b", "m", "k", &body);
    const std::string a = gen.Emit(inst.operands[0], idx, &body);
    absl::StrAppend(&loaders, "float loadA(int b, int m, int k) {\n  if (m >= ", m, " || k >= ", kk, ") return 0.0;\n",
                    body, "  return ", a, ";\n}\n");
  }
  if (!b_vec4) {
    std::string body;
    const std::vector<std::string> idx = OperandIndex(gen, rs, dd.rhs_batch, dd.rhs_contract, "b", "n", "k", &body);
    const std::string b = gen.Emit(inst.operands[1], idx, &body);
    absl::StrAppend(&loaders, "float loadB(int b, int k, int n) {\n  if (n >= ", n, " || k >= ", kk, ") return 0.0;\n",
                    body, "  return ", b, ";\n}\n");
  }
  absl::StrAppend(&loaders, "shared float As[16][65];\nshared float Bs[16][65];\n");

  std::string a_tile = absl::StrCat("      As[e & 15][e >> 4] = loadA(b, m0 + (e >> 4), k0 + (e & 15));\n");
  std::string b_tile = absl::StrCat("      Bs[e >> 6][e & 63] = loadB(b, k0 + (e >> 6), n0 + (e & 63));\n");
  std::string a_vec_load, b_vec_load;
  if (a_vec4) {
    const int bind = gen.Vec4Binding(inst.operands[0]);
    a_vec_load = absl::StrCat(
        "    {\n      int am = tid >> 2, ak = (tid & 3) * 4;\n      vec4 v = vec4(0.0);\n", "      if (m0 + am < ", m,
        " && k0 + ak < ", kk, ") v = in", bind, ".d[((b * ", m, " + m0 + am) * ", kk, " + k0 + ak) >> 2];\n",
        "      As[ak][am] = v.x; As[ak + 1][am] = v.y; As[ak + 2][am] = v.z; As[ak + 3][am] = v.w;\n    }\n");
    a_tile.clear();
  }
  if (b_vec4) {
    const int bind = gen.Vec4Binding(inst.operands[1]);
    b_vec_load = absl::StrCat(
        "    {\n      int bk = tid >> 4, bn = (tid & 15) * 4;\n      vec4 v = vec4(0.0);\n", "      if (k0 + bk < ", kk,
        " && n0 + bn < ", n, ") v = in", bind, ".d[((b * ", kk, " + k0 + bk) * ", n, " + n0 + bn) >> 2];\n",
        "      Bs[bk][bn] = v.x; Bs[bk][bn + 1] = v.y; Bs[bk][bn + 2] = v.z; Bs[bk][bn + 3] = v.w;\n    }\n");
    b_tile.clear();
  }
  const std::string main_body = absl::StrCat(
      "  for (int b = int(gl_WorkGroupID.z); b < ", batch,
      "; b += int(gl_NumWorkGroups.z)) {\n"
      "  int m0 = int(gl_WorkGroupID.y) * 64, n0 = int(gl_WorkGroupID.x) * 64;\n"
      "  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);\n"
      "  int tid = ty * 16 + tx;\n"
      "  float acc[4][4];\n"
      "  for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;\n"
      "  for (int k0 = 0; k0 < ",
      kk, "; k0 += 16) {\n", a_vec_load, b_vec_load,
      a_tile.empty() && b_tile.empty() ? "" : "    for (int i = 0; i < 4; ++i) {\n      int e = tid + i * 256;\n",
      a_tile, b_tile, a_tile.empty() && b_tile.empty() ? "" : "    }\n",
      "    barrier();\n"
      "    for (int k = 0; k < 16; ++k) {\n"
      "      float av[4], bv[4];\n"
      "      for (int i = 0; i < 4; ++i) av[i] = As[k][ty + 16 * i];\n"
      "      for (int j = 0; j < 4; ++j) bv[j] = Bs[k][tx + 16 * j];\n"
      "      for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);\n"
      "    }\n"
      "    barrier();\n"
      "  }\n"
      "  for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) {\n"
      "    int mm = m0 + ty + 16 * i, nn = n0 + tx + 16 * j;\n"
      "    if (mm < ",
      m, " && nn < ", n, ") out_.d[(b * ", m, " + mm) * ", n,
      " + nn] = acc[i][j];\n"
      "  }\n"
      "  }\n");
  KernelSource k;
  k.name = absl::StrCat("dot_", m, "x", n, "x", kk, (batch > 1 ? absl::StrCat("_b", batch) : ""), "_", inst.result);
  const std::string rest =
      absl::StrCat("\nlayout(local_size_x = 16, local_size_y = 16) in;\n", gen.BufferDeclarations(DType::kF32), loaders,
                   "\nvoid main() {\n", main_body, "}\n");
  k.glsl = GlslPreludeFor(rest) + rest;
  k.inputs = gen.inputs();
  k.groups[0] = static_cast<uint32_t>((n + 63) / 64);
  k.groups[1] = static_cast<uint32_t>((m + 63) / 64);
  k.groups[2] = GroupsFor(batch, 1);
  k.empty = batch * m * n == 0;
  return k;
}

}  // namespace pcp::vulkan
