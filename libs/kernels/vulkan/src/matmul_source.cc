// dot_general as a batched, tiled matmul: C[b, m, n] = sum_k A(b, m, k) * B(b, k, n), where
// b runs over the batch dims, m over lhs free dims, n over rhs free dims and k over the
// contracting dims (each flattened row-major), so the row-major result is C itself.
// A and B are read through generated loader functions: transposed, sliced, broadcast or
// reshaped operands cost no copy. Each 256-invocation work group computes a 64x64 tile
// (4x4 per invocation) over 16-deep shared-memory tiles of A and B, or for large products
// (DotTileFor) a 128x128 tile (8x8 per invocation: twice the multiply-adds per shared-memory
// read) over 8-deep ones; every element is the same chain of fma in k order either way, so the
// two tiles give the same bits. Tiles are loaded along the operand's contiguous extent
// (TileLoad): an operand that is a buffer laid out [batch..., free..., contract...] or
// [batch..., contract..., free...] with that extent a multiple of 4 as vec4 (x @ W and x @ W^T
// alike); others through the loader functions, along the last dimension's extent. The steps
// are software-pipelined (PipelinedSteps): the next step's tiles are read into registers while
// this step's multiply-adds run.
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

// Where an operand's contracted elements lie in its buffer: kFreeMajor [batch..., free...,
// contract...] (k contiguous: A of x @ W, B of x @ W^T), kContractMajor [batch..., contract...,
// free...] (free contiguous: B of x @ W, A of x^T @ y), both only for a materialized operand
// (a buffer of its own shape); kOther: anything read through index expressions.
enum class OperandLayout { kFreeMajor, kContractMajor, kOther };

OperandLayout LayoutOf(const KernelPlan& plan, const Shape& shape, ValueId v, const std::vector<int64_t>& batch,
                       const std::vector<int64_t>& contract) {
  if (!plan.materialized[static_cast<size_t>(v)] || !Consecutive(batch, 0)) return OperandLayout::kOther;
  const auto nb = static_cast<int64_t>(batch.size()), nk = static_cast<int64_t>(contract.size());
  if (Consecutive(contract, static_cast<int64_t>(shape.size()) - nk)) return OperandLayout::kFreeMajor;
  if (Consecutive(contract, nb)) return OperandLayout::kContractMajor;
  return OperandLayout::kOther;
}

// One operand of a tile step, as TileLoad reads it.
struct OperandTile {
  bool is_a = true;  // A (m, read by loadA(b, m, k), tile at m0) or B (n, loadB(b, k, n), at n0)
  OperandLayout layout = OperandLayout::kOther;
  bool last_is_contract = true;   // the operand's last dimension is contracted (kOther's order)
  int64_t free = 0, k = 0;        // the operand's free and contracted extents (m or n, and k)
  int tile_free = 0, tile_k = 0;  // the tile's
  // The dtype of the buffer the vec4 paths read: f32, or (the operand widens a bf16 / f16
  // buffer: half buffers, kernel_plan.h) the 16-bit type, read four elements at a time.
  DType stored = DType::kF32;
  int binding = -1;  // the vec4 (or uvec2) view's binding (vec4 paths)

  const char* free0() const { return is_a ? "m0" : "n0"; }
};

// GLSL setting vec4 x to the operand's four elements from position `index` (a multiple of 4).
std::string QuadLoad(const OperandTile& t, const std::string& index) {
  if (t.stored == DType::kF32) return absl::StrCat("x = in", t.binding, ".d[(", index, ") >> 2];");
  auto widen = [&](const char* bits) { return ExprCodegen::ConvertValue(t.stored, DType::kF32, bits); };
  return absl::StrCat("{ uvec2 u = in", t.binding, ".d[(", index, ") >> 2]; x = vec4(", widen("(u.x & 0xffffu)"), ", ",
                      widen("(u.x >> 16)"), ", ", widen("(u.y & 0xffffu)"), ", ", widen("(u.y >> 16)"), "); }");
}

// The operand's vec4 paths: whole vec4 along its contiguous extent (a multiple of 4).
bool Vec4AlongK(const OperandTile& t) { return t.layout == OperandLayout::kFreeMajor && t.k % 4 == 0 && t.k > 0; }
bool Vec4AlongFree(const OperandTile& t) {
  return t.layout == OperandLayout::kContractMajor && t.free % 4 == 0 && t.free > 0;
}

// Stores one element of a tile in shared memory: store(f, k, value) is the GLSL statement
// putting `value` at tile position (f, k) (free, contracted).
using TileStore = std::function<std::string(const std::string&, const std::string&, const std::string&)>;

// Loading an operand's tile_free x tile_k tile of batch b into shared memory in two phases,
// `invocations` invocations (tid) sharing the work evenly: `fetch` reads the tile at contracted
// position `kn` into the registers `reg` (declared by `declaration`), `store` puts them in
// shared memory. Reads go along the buffer's contiguous extent: vec4 where Vec4AlongK /
// Vec4AlongFree, else scalars through the loader, k-fastest unless the free extent is the
// contiguous one. Out-of-range elements are 0. With `half_tile` (the shared tile holds
// float16_t) an f16 buffer's quads move as their bits, unconverted.
struct TileLoadCode {
  std::string declaration, fetch, store;
};

TileLoadCode TileLoad(const OperandTile& t, int invocations, const std::string& reg, const TileStore& store,
                      bool half_tile = false) {
  const bool quads = Vec4AlongK(t) || Vec4AlongFree(t);
  // f16 elements stored into a float16_t tile move as their bits (no conversion at all).
  const bool f16_bits = half_tile && quads && t.stored == DType::kF16;
  const bool along_k = Vec4AlongK(t);
  const int per_row = (along_k ? t.tile_k : t.tile_free) / 4;
  const int items = quads ? t.tile_free * t.tile_k / 4 : t.tile_free * t.tile_k;
  const int per_invocation = items / invocations;  // the tiles are multiples of the work group
  const bool k_fastest =
      t.layout == OperandLayout::kFreeMajor || (t.layout == OperandLayout::kOther && t.last_is_contract);
  // The item's tile position (f, k) from its number i.
  const std::string position = quads       ? absl::StrCat("int ", along_k ? "f" : "k", " = i / ", per_row, ", ",
                                                    along_k ? "k" : "f", " = (i % ", per_row, ") * 4;")
                               : k_fastest ? absl::StrCat("int f = i / ", t.tile_k, ", k = i % ", t.tile_k, ";")
                                           : absl::StrCat("int k = i / ", t.tile_free, ", f = i % ", t.tile_free, ";");
  const std::string loop =
      absl::StrCat("    for (int r = 0; r < ", per_invocation, "; ++r) {\n      int i = tid + r * ", invocations,
                   ";\n      ", position, "\n      ");
  TileLoadCode code;
  code.declaration = absl::StrCat("  ",
                                  f16_bits ? "uvec2 "
                                  : quads  ? "vec4 "
                                           : "float ",
                                  reg, "[", per_invocation, "];\n");
  if (quads) {
    // Four elements along the contiguous extent: (f, k .. k + 3) or (f .. f + 3, k).
    const std::string index = along_k ? absl::StrCat("(b * ", t.free, " + ", t.free0(), " + f) * ", t.k, " + kn + k")
                                      : absl::StrCat("(b * ", t.k, " + kn + k) * ", t.free, " + ", t.free0(), " + f");
    std::string stores;
    for (int j = 0; j < 4; ++j) {
      const std::string step = j == 0 ? "" : absl::StrCat(" + ", j);
      const std::string value =
          f16_bits ? absl::StrCat("unpackFloat2x16(", reg, "[r].", j < 2 ? "x" : "y", ").", j % 2 == 0 ? "x" : "y")
                   : absl::StrCat(reg, "[r].", std::string(1, "xyzw"[j]));
      absl::StrAppend(&stores, j == 0 ? "" : " ", store(along_k ? "f" : "f" + step, along_k ? "k" + step : "k", value));
    }
    const std::string in_range = absl::StrCat("if (", t.free0(), " + f < ", t.free, " && kn + k < ", t.k, ") ");
    code.fetch = f16_bits ? absl::StrCat(loop, "uvec2 u = uvec2(0u);\n      ", in_range, "u = in", t.binding, ".d[(",
                                         index, ") >> 2];\n      ", reg, "[r] = u;\n    }\n")
                          : absl::StrCat(loop, "vec4 x = vec4(0.0);\n      ", in_range, QuadLoad(t, index), "\n      ",
                                         reg, "[r] = x;\n    }\n");
    code.store = absl::StrCat(loop, stores, "\n    }\n");
    return code;
  }
  const std::string fi = absl::StrCat(t.free0(), " + f");
  const std::string call =
      t.is_a ? absl::StrCat("loadA(b, ", fi, ", kn + k)") : absl::StrCat("loadB(b, kn + k, ", fi, ")");
  code.fetch = absl::StrCat(loop, reg, "[r] = ", call, ";\n    }\n");
  code.store = absl::StrCat(loop, store("f", "k", absl::StrCat(reg, "[r]")), "\n    }\n");
  return code;
}

// The contracted loop over tk-deep steps of both operands' tiles, software-pipelined: the next
// step's tiles are fetched into registers before this step's `compute` reads shared memory,
// and stored after it, so their global reads are in flight during the arithmetic.
std::string PipelinedSteps(const TileLoadCode& a, const TileLoadCode& b, int64_t k, int tk,
                           const std::string& compute) {
  return absl::StrCat(a.declaration, b.declaration, "  int kn = 0;\n", a.fetch, b.fetch, a.store, b.store,
                      "  barrier();\n  for (int k0 = 0; k0 < ", k, "; k0 += ", tk, ") {\n    kn = k0 + ", tk,
                      ";\n    if (kn < ", k, ") {\n", a.fetch, b.fetch, "    }\n", compute,
                      "    barrier();\n    if (kn < ", k, ") {\n", a.store, b.store, "      barrier();\n    }\n  }\n");
}

// The two operands' tiles of `inst` (tile_m x tile_k of A, tile_k x tile_n of B), their vec4
// views bound through `gen`, and the loader functions the scalar paths need in *loaders.
std::pair<OperandTile, OperandTile> OperandTiles(ExprCodegen& gen, const Function& f, const KernelPlan& plan,
                                                 const Instruction& inst, const DotSizes& z, int tile_m, int tile_n,
                                                 int tile_k, std::string* loaders) {
  const DotDims& dd = inst.attrs.dot;
  // An operand's tile: its layout in its own buffer, or in the bf16 / f16 buffer it widens
  // (returned in *source: the value the vec4 paths read).
  auto operand = [&](bool is_a, ValueId o, int64_t free, int tile_free, ValueId* source) {
    const Shape& s = f.type(o).shape;
    const std::vector<int64_t>& batch = is_a ? dd.lhs_batch : dd.rhs_batch;
    const std::vector<int64_t>& contract = is_a ? dd.lhs_contract : dd.rhs_contract;
    *source = o;
    const int p = plan.producer[static_cast<size_t>(o)];
    if (!plan.materialized[static_cast<size_t>(o)] && p >= 0) {
      const Instruction& producer = f.instructions[static_cast<size_t>(p)];
      if (WidensHalf(f, producer) && plan.materialized[static_cast<size_t>(producer.operands[0])]) {
        *source = producer.operands[0];
      }
    }
    OperandTile t{.is_a = is_a,
                  .layout = LayoutOf(plan, s, *source, batch, contract),
                  .last_is_contract =
                      std::find(contract.begin(), contract.end(), static_cast<int64_t>(s.size()) - 1) != contract.end(),
                  .free = free,
                  .k = z.k,
                  .tile_free = tile_free,
                  .tile_k = tile_k,
                  .stored = f.type(*source).dtype};
    return t;
  };
  ValueId a_source = kNoValue, b_source = kNoValue;
  OperandTile a = operand(true, inst.operands[0], z.m, tile_m, &a_source);
  OperandTile b = operand(false, inst.operands[1], z.n, tile_n, &b_source);
  const bool a_vec4 = Vec4AlongK(a) || Vec4AlongFree(a), b_vec4 = Vec4AlongK(b) || Vec4AlongFree(b);
  *loaders = OperandLoaders(gen, f, inst, z, !a_vec4, !b_vec4);
  auto bind = [&](OperandTile& t, ValueId source) {
    t.binding = t.stored == DType::kF32 ? gen.Vec4Binding(source) : gen.Quad16Binding(source);
  };
  if (a_vec4) bind(a, a_source);
  if (b_vec4) bind(b, b_source);
  return {a, b};
}

// A product kernel's inputs, dispatch (a work group per tile x tile block of C, per batch
// entry) and emptiness.
void SetDotDispatch(const ExprCodegen& gen, const DotSizes& z, int tile, KernelSource* k) {
  k->inputs = gen.inputs();
  k->groups[0] = static_cast<uint32_t>((z.n + tile - 1) / tile);
  k->groups[1] = static_cast<uint32_t>((z.m + tile - 1) / tile);
  k->groups[2] = GroupsFor(z.batch, 1);
  k->empty = z.batch * z.m * z.n == 0;
}

}  // namespace

int DotTileFor(const Function& f, const Instruction& inst, int forced) {
  if (forced == 64 || forced == 128) return forced;
  const DotSizes z = SizesOf(f, inst);
  if (z.m < 128 || z.n < 128) return 64;
  return z.batch * ((z.m + 127) / 128) * ((z.n + 127) / 128) >= kLargeDotTileMinTiles ? 128 : 64;
}

KernelSource DotKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst, ValueId out,
                             int tile) {
  const DType out_dtype = f.type(out).dtype;
  const DotSizes z = SizesOf(f, inst);
  const int64_t batch = z.batch, m = z.m, n = z.n, kk = z.k;
  // The tile: tm x tn outputs per work group of 16 x 16 invocations, each computing r x c of
  // them (rows ty + 16 i, columns tx + 16 j), over tk-deep steps. Both tiles load 1024
  // elements of each operand per step: 4 scalars or one vec4 per invocation.
  const int tm = tile == 128 ? 128 : 64, tn = tm, tk = 1024 / tm, r = tm / 16, c = tn / 16;
  ExprCodegen gen(f, plan);
  std::string loaders;
  const auto [a, b] = OperandTiles(gen, f, plan, inst, z, tm, tn, tk, &loaders);
  absl::StrAppend(&loaders, "shared float As[", tk, "][", tm + 1, "];\nshared float Bs[", tk, "][", tn + 1, "];\n");
  const TileLoadCode a_load =
      TileLoad(a, 256, "ra", [](const std::string& mi, const std::string& ki, const std::string& v) {
        return absl::StrCat("As[", ki, "][", mi, "] = ", v, ";");
      });
  const TileLoadCode b_load =
      TileLoad(b, 256, "rb", [](const std::string& ni, const std::string& ki, const std::string& v) {
        return absl::StrCat("Bs[", ki, "][", ni, "] = ", v, ";");
      });
  const std::string compute = absl::StrCat("    for (int k = 0; k < ", tk, "; ++k) {\n",  //
                                           "      float av[", r, "], bv[", c, "];\n",     //
                                           "      for (int i = 0; i < ", r, "; ++i) av[i] = As[k][ty + 16 * i];\n",
                                           "      for (int j = 0; j < ", c, "; ++j) bv[j] = Bs[k][tx + 16 * j];\n",
                                           "      for (int i = 0; i < ", r, "; ++i) for (int j = 0; j < ", c,
                                           "; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);\n",  //
                                           "    }\n");
  const std::string main_body =
      absl::StrCat("  for (int b = int(gl_WorkGroupID.z); b < ", batch, "; b += int(gl_NumWorkGroups.z)) {\n",
                   "  int m0 = int(gl_WorkGroupID.y) * ", tm, ", n0 = int(gl_WorkGroupID.x) * ", tn, ";\n",
                   "  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);\n",
                   "  int tid = ty * 16 + tx;\n",  //
                   "  float acc[", r, "][", c, "];\n", "  for (int i = 0; i < ", r, "; ++i) for (int j = 0; j < ", c,
                   "; ++j) acc[i][j] = 0.0;\n", PipelinedSteps(a_load, b_load, kk, tk, compute),
                   "  for (int i = 0; i < ", r, "; ++i) for (int j = 0; j < ", c, "; ++j) {\n",
                   "    int mm = m0 + ty + 16 * i, nn = n0 + tx + 16 * j;\n",  //
                   "    if (mm < ", m, " && nn < ", n, ") ",
                   ExprCodegen::Store(out_dtype, absl::StrCat("(b * ", m, " + mm) * ", n, " + nn"),
                                      ExprCodegen::ConvertValue(DType::kF32, out_dtype, "acc[i][j]")),
                   "  }\n",  //
                   "  }\n");
  KernelSource k;
  k.name = absl::StrCat("dot_", m, "x", n, "x", kk, (batch > 1 ? absl::StrCat("_b", batch) : ""),
                        (tm == 128 ? "_t128" : ""), "_", inst.result);
  const std::string rest =
      absl::StrCat("\nlayout(local_size_x = 16, local_size_y = 16) in;\n", gen.BufferDeclarations(out_dtype), loaders,
                   "\nvoid main() {\n", main_body, "}\n");
  k.glsl = GlslPreludeFor(rest) + rest;
  SetDotDispatch(gen, z, tm, &k);
  return k;
}

// Tensor cores: a work group of 4 (64x64 tile) or 8 (128x128) subgroups of 32 computes a tile of
// C, each subgroup a 32x32 or 32x64 part as 2x2 or 2x4 16x16 f32 accumulators. Per 32-deep step
// the group loads A's and B's tiles (TileLoad) into shared memory as f16 (exact:
// UsesCooperativeMatrix admits only f16-rounded operands), then each subgroup multiplies its
// 16x16x16 pieces. Each accumulator goes out through the subgroup's own 16x16 block of shared
// memory, so edges need no special case. Row strides of TK + 8 and TN + 8 elements keep every
// matrix load 16-byte aligned and spread rows over shared-memory banks.
//
// The matrices are used through CM_* macros: GL_NV_cooperative_matrix, or (`emulate`) plain
// GLSL where a 16x16 operand is its place in shared memory and each of the subgroup's 32 lanes
// holds 8 accumulator elements, so the kernel's tiling runs and is tested on any device.
KernelSource CoopDotKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst, ValueId out,
                                 int tile, bool emulate) {
  const DType out_dtype = f.type(out).dtype;
  const DotSizes z = SizesOf(f, inst);
  const bool large = tile == 128;
  const int tm = large ? 128 : 64, tn = tm, tk = 32, subgroups = large ? 8 : 4, sgn = 2;
  const int wm = tm / (subgroups / sgn), wn = tn / sgn, fm = wm / 16, fn = wn / 16;
  const int a_stride = tk + 8, b_stride = tn + 8, invocations = 32 * subgroups;
  ExprCodegen gen(f, plan);
  std::string loaders;
  const auto [a, b] = OperandTiles(gen, f, plan, inst, z, tm, tn, tk, &loaders);
  absl::StrAppend(&loaders, "shared HALF As[", tm * a_stride, "];\nshared HALF Bs[", tk * b_stride,
                  "];\nshared float Cs[", subgroups * 256, "];\n");
  const TileLoadCode a_load = TileLoad(
      a, invocations, "ra",
      [&](const std::string& mi, const std::string& ki, const std::string& v) {
        return absl::StrCat("As[(", mi, ") * ", a_stride, " + ", ki, "] = HALF(", v, ");");
      },
      /*half_tile=*/true);
  const TileLoadCode b_load = TileLoad(
      b, invocations, "rb",
      [&](const std::string& ni, const std::string& ki, const std::string& v) {
        return absl::StrCat("Bs[(", ki, ") * ", b_stride, " + ", ni, "] = HALF(", v, ");");
      },
      /*half_tile=*/true);
  const std::string compute =
      absl::StrCat("    for (int kk = 0; kk < ", tk, "; kk += 16) {\n",    //
                   "      CM_A a[", fm, "];\n      CM_A bm[", fn, "];\n",  //
                   "      for (int i = 0; i < ", fm, "; ++i) CM_LOAD_A(a[i], (wm + 16 * i) * ", a_stride, " + kk, ",
                   a_stride,
                   ");\n",  //
                   "      for (int j = 0; j < ", fn, "; ++j) CM_LOAD_B(bm[j], kk * ", b_stride, " + wn + 16 * j, ",
                   b_stride,
                   ");\n",  //
                   "      CM_LOOP for (int i = 0; i < ", fm, "; ++i) CM_LOOP for (int j = 0; j < ", fn,
                   "; ++j) acc[i][j] = CM_MULADD(a[i], bm[j], acc[i][j]);\n",  //
                   "    }\n");
  const std::string main_body =
      absl::StrCat("  const int tid = int(gl_LocalInvocationID.x), lane = LANE, sg = SUBGROUP;\n",
                   "  const int wm = (sg / ", sgn, ") * ", wm, ", wn = (sg % ", sgn, ") * ", wn, ";\n",
                   "  for (int b = int(gl_WorkGroupID.z); b < ", z.batch, "; b += int(gl_NumWorkGroups.z)) {\n",
                   "  const int m0 = int(gl_WorkGroupID.y) * ", tm, ", n0 = int(gl_WorkGroupID.x) * ", tn, ";\n",
                   "  CM_ACC acc[", fm, "][", fn, "];\n", "  for (int i = 0; i < ", fm, "; ++i) for (int j = 0; j < ",
                   fn, "; ++j) acc[i][j] = CM_ZERO;\n", PipelinedSteps(a_load, b_load, z.k, tk, compute),
                   "  for (int i = 0; i < ", fm, "; ++i) for (int j = 0; j < ", fn, "; ++j) {\n",
                   "    CM_STORE(acc[i][j], sg * 256);\n",  //
                   "    barrier();\n",                      //
                   "    for (int e = lane; e < 256; e += 32) {\n",
                   "      const int mm = m0 + wm + 16 * i + (e >> 4), nn = n0 + wn + 16 * j + (e & 15);\n",
                   "      if (mm < ", z.m, " && nn < ", z.n, ") ",
                   ExprCodegen::Store(out_dtype, absl::StrCat("(b * ", z.m, " + mm) * ", z.n, " + nn"),
                                      ExprCodegen::ConvertValue(DType::kF32, out_dtype, "Cs[sg * 256 + e]")),
                   "    }\n",           //
                   "    barrier();\n",  //
                   "  }\n",             //
                   "  }\n");
  KernelSource k;
  k.name = absl::StrCat("dot_coopmat_", z.m, "x", z.n, "x", z.k, (z.batch > 1 ? absl::StrCat("_b", z.batch) : ""),
                        large ? "_t128" : "", emulate ? "_emulated" : "", "_", inst.result);
  // The matrices (see above); the emulation's functions read As, Bs and Cs, so they follow them.
  const std::string real =
      "#define SUBGROUP int(gl_SubgroupID)\n"
      "#define LANE int(gl_SubgroupInvocationID)\n"
      "#define CM_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>\n"
      "#define CM_ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>\n"
      "#define CM_ZERO CM_ACC(0.0)\n"
      "#define CM_LOAD_A(x, off, stride) coopMatLoadNV(x, As, uint(off), uint(stride), false)\n"
      "#define CM_LOAD_B(x, off, stride) coopMatLoadNV(x, Bs, uint(off), uint(stride), false)\n"
      "#define CM_MULADD(a, b, c) coopMatMulAddNV(a, b, c)\n"
      "#define CM_STORE(c, off) coopMatStoreNV(c, Cs, uint(off), 16u, false)\n"
      "#define CM_LOOP\n";
  const std::string emulated_types =
      "#define SUBGROUP (int(gl_LocalInvocationID.x) >> 5)\n"
      "#define LANE (int(gl_LocalInvocationID.x) & 31)\n"
      "struct CM_A { int off; int stride; };\n"
      "struct CM_ACC { float v[8]; };\n"
      "#define CM_ZERO CM_ACC(float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))\n"
      "#define CM_LOAD_A(x, o, s) x = CM_A(o, s)\n"
      "#define CM_LOAD_B(x, o, s) x = CM_A(o, s)\n"
      "#define CM_MULADD(a, b, c) cmMulAdd(a, b, c)\n"
      "#define CM_STORE(c, off) cmStore(c, off)\n"
      "#define CM_LOOP [[dont_unroll]]\n";  // unrolled, lavapipe's compiler takes seconds a kernel
  const std::string emulated_functions =
      "// Lane l holds elements 8 l .. 8 l + 7 of a 16x16 accumulator (row-major).\n"
      "CM_ACC cmMulAdd(CM_A a, CM_A b, CM_ACC c) {\n"
      "  CM_LOOP for (int i = 0; i < 8; ++i) {\n"
      "    const int r = (LANE * 8 + i) >> 4, col = (LANE * 8 + i) & 15;\n"
      "    float s = c.v[i];\n"
      "    CM_LOOP for (int k = 0; k < 16; ++k)\n"
      "      s = fma(float(As[a.off + r * a.stride + k]), float(Bs[b.off + k * b.stride + col]), s);\n"
      "    c.v[i] = s;\n"
      "  }\n"
      "  return c;\n"
      "}\n"
      "void cmStore(CM_ACC c, int off) {\n"
      "  for (int i = 0; i < 8; ++i) Cs[off + LANE * 8 + i] = c.v[i];\n"
      "}\n";
  const std::string rest = absl::StrCat("\nlayout(local_size_x = ", invocations, ") in;\n#define HALF float16_t\n",
                                        emulate ? emulated_types : real, gen.BufferDeclarations(out_dtype), loaders,
                                        emulate ? emulated_functions : "", "\nvoid main() {\n", main_body, "}\n");
  // The extensions go right after the header, before the prelude's functions.
  std::string prelude = GlslPreludeFor(rest);
  prelude.insert(GlslHeader().size(),
                 absl::StrCat("#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n",
                              emulate ? "#extension GL_EXT_control_flow_attributes : require\n"
                                      : "#extension GL_KHR_memory_scope_semantics : require\n"
                                        "#extension GL_NV_cooperative_matrix : require\n"
                                        "#extension GL_KHR_shader_subgroup_basic : require\n"));
  k.glsl = prelude + rest;
  SetDotDispatch(gen, z, tm, &k);
  return k;
}

}  // namespace pcp::vulkan
