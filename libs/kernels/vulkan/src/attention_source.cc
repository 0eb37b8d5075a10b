// Fused attention's kernels (KernelKind::kAttention; pcp/autodiff/attention.h): FlashAttention
// with one row per invocation. A work group of 64 owns 64 consecutive rows of one batch
// element: query rows for pcp.attention, attention_lse and attention_grad_q, key rows for
// attention_grad_k and attention_grad_v. Each invocation keeps its row's vectors (q and do,
// or k and v) and its accumulator in registers; the group walks the other side in tiles that
// it loads into shared memory together, recomputing the scores s = scale q·k and
// probabilities P = exp(s - lse) as it goes, so no T x S tensor is ever stored. The forward
// keeps an online softmax (a running max and sum per row, rescaled once per tile). A causal
// group stops at its last row's keys (queries) and skips masked pairs. Operands are read
// through ExprCodegen, so slices and transposes of q, k, v (a GPT's heads) cost nothing;
// exp and log are PCP's own (glsl_prelude.h), the same on every device. An attention group
// (kernel_groups.h) is the forward's kernel also storing each row's lse = m + log(l), the
// value the lse kernel computes the same way.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "expr_codegen.h"
#include "kernel_sources.h"

namespace pcp::vulkan {
namespace {

constexpr int kRowsPerGroup = 64;
// Shared memory for the tiles, in floats: 16 KiB, Vulkan's guaranteed minimum.
constexpr int64_t kSharedFloats = 4096;
constexpr int64_t kMaxTile = 32;

// One operand of the walked side, loaded a tile at a time into shared array `name`.
struct TileOperand {
  ValueId value;
  std::string name;
  int64_t width;  // elements per row (D or E; 1 for lse and delta)
};

class AttentionSource {
 public:
  // `outputs`: the kernel's values (an attention group's o and lse, else `inst`'s result).
  AttentionSource(const Function& f, const KernelPlan& plan, const Instruction& inst, std::vector<ValueId> outputs)
      : f_(f), inst_(inst), gen_(f, plan), op_(inst.op), outputs_(std::move(outputs)) {
    const TensorType& q = f.type(inst.operands[0]);
    const int64_t r = q.rank();
    batch_.assign(q.shape.begin(), q.shape.end() - 2);
    t_ = q.shape[static_cast<size_t>(r - 2)];
    d_ = q.shape[static_cast<size_t>(r - 1)];
    s_ = f.type(inst.operands[1]).shape[static_cast<size_t>(r - 2)];
    const std::vector<ValueId>& in = inst.operands;
    e_ = op_ == Op::kAttentionLse ? 0 : f.type(in[op_ == Op::kAttentionGradV ? 3 : 2]).shape.back();
    const TensorType& out = f.type(inst.result);
    cols_ = out.rank() == r ? out.shape.back() : 1;
    by_keys_ = op_ == Op::kAttentionGradK || op_ == Op::kAttentionGradV;
    rows_ = by_keys_ ? s_ : t_;
    walked_ = by_keys_ ? t_ : s_;
    lanes_ = d_ % 4 == 0 && e_ % 4 == 0 ? 4 : 1;
  }

  KernelSource Build() {
    const std::vector<ValueId>& in = inst_.operands;
    const ValueId q = in[0], k = in[1];
    // Row side: the registers each invocation fills; walked side: the shared tiles.
    std::vector<TileOperand> tiles;
    std::string row_loads, tile_code;
    switch (op_) {
      case Op::kAttention:
        RowVector(q, "qr", d_, /*scaled=*/true, &row_loads);
        tiles = {{k, "Ks", d_}, {in[2], "Vs", e_}};
        tile_code = ForwardTile(/*values=*/true);
        break;
      case Op::kAttentionLse:
        RowVector(q, "qr", d_, /*scaled=*/true, &row_loads);
        tiles = {{k, "Ks", d_}};
        tile_code = ForwardTile(/*values=*/false);
        break;
      case Op::kAttentionGradQ:
        RowVector(q, "qr", d_, /*scaled=*/true, &row_loads);
        RowVector(in[5], "dor", e_, /*scaled=*/false, &row_loads);
        RowScalar(in[3], "lse_i", &row_loads);
        RowScalar(in[4], "delta_i", &row_loads);
        tiles = {{k, "Ks", d_}, {in[2], "Vs", e_}};
        tile_code = GradQTile();
        break;
      case Op::kAttentionGradK:
        RowVector(k, "kr", d_, /*scaled=*/true, &row_loads);
        RowVector(in[2], "vr", e_, /*scaled=*/false, &row_loads);
        tiles = {{q, "Qs", d_}, {in[5], "DOs", e_}, {in[3], "Ls", 1}, {in[4], "Ds", 1}};
        tile_code = GradKVTile(/*keys=*/true);
        break;
      default:  // kAttentionGradV(q, k, lse, do)
        RowVector(k, "kr", d_, /*scaled=*/true, &row_loads);
        tiles = {{q, "Qs", d_}, {in[3], "DOs", e_}, {in[2], "Ls", 1}};
        tile_code = GradKVTile(/*keys=*/false);
        break;
    }
    int64_t per_row = 0;
    for (const TileOperand& t : tiles) per_row += t.width;
    tile_ = std::clamp<int64_t>(kSharedFloats / per_row, 1, kMaxTile);
    std::string shared, loads;
    for (const TileOperand& t : tiles) {
      const bool vector = t.width > 1;
      absl::StrAppend(&shared, "shared ", vector ? Type() : "float", " ", t.name, "[",
                      tile_ * (vector ? Packs(t.width) : 1), "];\n");
      loads += TileLoad(t);
    }
    const std::string out_index = absl::StrCat("(bb * ", rows_, " + i) * ", cols_);
    std::string main_body =
        absl::StrCat("  int lid = int(gl_LocalInvocationID.x);\n", "  for (int bb = int(gl_WorkGroupID.y); bb < ",
                     NumElements(batch_), "; bb += int(gl_NumWorkGroups.y)) {\n", batch_decl_,
                     "  for (int rb = int(gl_WorkGroupID.x); rb < ", RowBlocks(),
                     "; rb += int(gl_NumWorkGroups.x)) {\n", "    int i = rb * ", kRowsPerGroup, " + lid;\n",
                     "    bool live = i < ", rows_, ";\n", "    int ic = min(i, ", rows_ - 1, ");\n", row_loads,
                     Accumulators(), "    for (int w0 = ", WalkStart(), "; w0 < ", WalkEnd(), "; w0 += ", tile_,
                     ") {\n", "      barrier();\n", loads, "      barrier();\n", "      int wn = ", WalkCount(), ";\n",
                     "      if (live && wn > 0) {\n", tile_code, "      }\n    }\n", "    if (live) {\n",
                     Finish(out_index), "    }\n  }\n  }\n");
    KernelSource src;
    src.name = absl::StrCat(OpName(op_).substr(4), "_", inst_.result);
    const std::string buffers = outputs_.size() > 1 ? gen_.InputDeclarations() + gen_.OutputDeclarations(outputs_)
                                                    : gen_.BufferDeclarations(DType::kF32);
    src.glsl = ShaderSource(kRowsPerGroup, buffers + shared, main_body);
    src.inputs = gen_.inputs();
    src.groups[0] = GroupsFor(rows_, kRowsPerGroup);
    src.groups[1] = GroupsFor(NumElements(batch_), 1);
    src.empty = f_.type(inst_.result).num_elements() == 0;
    return src;
  }

 private:
  // Vectors (q, k, v, do rows and accumulators) are held as vec4 where D and E are multiples of
  // 4: a shared-memory load then feeds four multiply-adds, not one.
  std::string Type() const { return lanes_ == 4 ? "vec4" : "float"; }
  int64_t Packs(int64_t width) const { return width / lanes_; }
  // Element `j` of pack `c` (a GLSL int expression).
  std::string Element(const std::string& c, int j) const {
    return lanes_ == 1 ? c : absl::StrCat("(", c, " * 4 + ", j, ")");
  }
  // Pack `pack` (a GLSL vector or float expression) built from or split into its elements.
  std::string Component(const std::string& pack, int j) const {
    return lanes_ == 1 ? pack : absl::StrCat(pack, "[", j, "]");
  }
  int64_t RowBlocks() const { return (rows_ + kRowsPerGroup - 1) / kRowsPerGroup; }
  // The scale as the f32 the expansion multiplies by (every digit of it).
  std::string Scale() const { return absl::StrFormat("float(%.9g)", static_cast<float>(inst_.attrs.scale)); }

  // The batch element's coordinates (declared once per bb) followed by `tail`.
  std::vector<std::string> At(std::vector<std::string> tail) {
    if (batch_idx_.empty() && !batch_.empty()) batch_idx_ = gen_.Delinearize("bb", batch_, &batch_decl_);
    std::vector<std::string> idx = batch_.empty() ? std::vector<std::string>{} : batch_idx_;
    idx.insert(idx.end(), tail.begin(), tail.end());
    return idx;
  }

  // Type name[width / lanes] = the row's vector (times scale if `scaled`), at row ic.
  void RowVector(ValueId v, const std::string& name, int64_t width, bool scaled, std::string* out) {
    std::string body;
    std::vector<std::string> x;
    for (int j = 0; j < lanes_; ++j) x.push_back(gen_.Emit(v, At({"ic", Element("c", j)}), &body));
    const std::string pack = lanes_ == 1 ? x[0] : absl::StrCat("vec4(", absl::StrJoin(x, ", "), ")");
    absl::StrAppend(out, "    ", Type(), " ", name, "[", Packs(width), "];\n    for (int c = 0; c < ", Packs(width),
                    "; ++c) {\n", body, "      ", name, "[c] = ", scaled ? absl::StrCat(pack, " * ", Scale()) : pack,
                    ";\n    }\n");
  }
  void RowScalar(ValueId v, const std::string& name, std::string* out) {
    std::string body;
    const std::string x = gen_.Emit(v, At({"ic"}), &body);
    absl::StrAppend(out, "    float ", name, ";\n    {\n", body, "      ", name, " = ", x, ";\n    }\n");
  }

  // The group's cooperative load of rows [w0, w0 + tile) of `t` (clamped to the last row).
  std::string TileLoad(const TileOperand& t) {
    std::string body;
    const bool vector = t.width > 1;
    const int64_t packs = vector ? Packs(t.width) : 1;
    std::string value;
    if (!vector) {
      value = gen_.Emit(t.value, At({"wr"}), &body);
    } else {
      std::vector<std::string> x;
      for (int j = 0; j < lanes_; ++j) x.push_back(gen_.Emit(t.value, At({"wr", Element("wc", j)}), &body));
      value = lanes_ == 1 ? x[0] : absl::StrCat("vec4(", absl::StrJoin(x, ", "), ")");
    }
    return absl::StrCat("      for (int x = lid; x < ", tile_ * packs, "; x += ", kRowsPerGroup, ") {\n",
                        "        int wi = x / ", packs, ";\n",
                        vector ? absl::StrCat("        int wc = x - wi * ", packs, ";\n") : "",
                        "        int wr = min(w0 + wi, ", walked_ - 1, ");\n", body, "        ", t.name,
                        "[x] = ", value, ";\n      }\n");
  }

  // Causal: keys j <= i. By queries, the walk ends after the group's last row; by keys it
  // starts at the group's first row.
  std::string WalkStart() const { return inst_.attrs.causal && by_keys_ ? absl::StrCat("rb * ", kRowsPerGroup) : "0"; }
  std::string WalkEnd() const {
    if (!inst_.attrs.causal || by_keys_) return absl::StrCat(walked_);
    return absl::StrCat("min(", walked_, ", rb * ", kRowsPerGroup, " + ", kRowsPerGroup, ")");
  }
  // How many of the tile's rows this invocation visits (by queries, causal: keys up to i; by
  // keys the masked queries i < j are skipped inside the tile).
  std::string WalkCount() const {
    std::string n = absl::StrCat("min(", tile_, ", ", WalkEnd(), " - w0)");
    if (inst_.attrs.causal && !by_keys_) n = absl::StrCat("min(", n, ", i - w0 + 1)");
    return n;
  }

  // `var` = Σ_c reg[c] · tile[row][c], over the packs.
  std::string DotInto(const std::string& var, const std::string& reg, const std::string& tile, int64_t width,
                      const std::string& row) const {
    return absl::StrCat("        float ", var, " = 0.0;\n        for (int c = 0; c < ", Packs(width), "; ++c) ", var,
                        " += dot(", reg, "[c], ", tile, "[", row, " * ", Packs(width), " + c]);\n");
  }
  // acc[c] += `weight` * tile[row][c] over the packs.
  std::string Accumulate(const std::string& weight, const std::string& tile, int64_t width,
                         const std::string& row) const {
    return absl::StrCat("          for (int c = 0; c < ", Packs(width), "; ++c) acc[c] += ", weight, " * ", tile, "[",
                        row, " * ", Packs(width), " + c];\n");
  }

  // The accumulator's width: E for the output and dv, D for dq and dk, none for lse.
  int64_t AccWidth() const {
    return op_ == Op::kAttention || op_ == Op::kAttentionGradV ? e_ : op_ == Op::kAttentionLse ? 0 : d_;
  }

  std::string Accumulators() const {
    std::string s;
    if (op_ == Op::kAttention || op_ == Op::kAttentionLse) s = "    float m = uintBitsToFloat(0xff800000u), l = 0.0;\n";
    if (AccWidth() > 0) {
      absl::StrAppend(&s, "    ", Type(), " acc[", Packs(AccWidth()), "];\n    for (int c = 0; c < ", Packs(AccWidth()),
                      "; ++c) acc[c] = ", Type(), "(0.0);\n");
    }
    return s;
  }

  // Online softmax over the tile's wn keys: scores, the new running max, the rescale of what
  // came before, then the tile's probabilities (and, for the output, P v).
  std::string ForwardTile(bool values) {
    std::string s = absl::StrCat("        float sv[", kMaxTile, "];\n        float mn = m;\n",
                                 "        for (int w = 0; w < wn; ++w) {\n", DotInto("s", "qr", "Ks", d_, "w"),
                                 "          sv[w] = s;\n          mn = max(mn, s);\n        }\n",
                                 "        float r = pcp_exp(m - mn);\n        l *= r;\n");
    if (values) absl::StrAppend(&s, "        for (int c = 0; c < ", Packs(e_), "; ++c) acc[c] *= r;\n");
    absl::StrAppend(&s, "        for (int w = 0; w < wn; ++w) {\n          float p = pcp_exp(sv[w] - mn);\n",
                    "          l += p;\n");
    if (values) absl::StrAppend(&s, Accumulate("p", "Vs", e_, "w"));
    absl::StrAppend(&s, "        }\n        m = mn;\n");
    return s;
  }

  // dq_i += ds_ij k_j over the tile's keys.
  std::string GradQTile() {
    return absl::StrCat("        for (int w = 0; w < wn; ++w) {\n", DotInto("s", "qr", "Ks", d_, "w"), "  ",
                        DotInto("dp", "dor", "Vs", e_, "w"),
                        "          float ds = pcp_exp(s - lse_i) * (dp - delta_i);\n", Accumulate("ds", "Ks", d_, "w"),
                        "        }\n");
  }

  // dk_j += ds_ij q_i (keys) or dv_j += P_ij do_i over the tile's queries, masked ones skipped.
  std::string GradKVTile(bool keys) {
    std::string s = "        for (int w = 0; w < wn; ++w) {\n";
    if (inst_.attrs.causal) absl::StrAppend(&s, "          if (w0 + w < i) continue;\n");
    absl::StrAppend(&s, DotInto("s", "kr", "Qs", d_, "w"), "          float p = pcp_exp(s - Ls[w]);\n");
    if (keys) {
      absl::StrAppend(&s, DotInto("dp", "vr", "DOs", e_, "w"), "          float ds = p * (dp - Ds[w]);\n",
                      Accumulate("ds", "Qs", d_, "w"));
    } else {
      absl::StrAppend(&s, Accumulate("p", "DOs", e_, "w"));
    }
    absl::StrAppend(&s, "        }\n");
    return s;
  }

  // Stores acc's elements, each followed by `suffix` (" / l", " * scale"), into `buffer` from
  // element `base`.
  std::string StoreAcc(const std::string& buffer, const std::string& base, const std::string& suffix) const {
    std::string body;
    for (int j = 0; j < lanes_; ++j) {
      absl::StrAppend(&body, "        ",
                      ExprCodegen::StoreTo(buffer, DType::kF32, absl::StrCat(base, " + ", Element("c", j)),
                                           Component("acc[c]", j) + suffix));
    }
    return absl::StrCat("      for (int c = 0; c < ", Packs(AccWidth()), "; ++c) {\n", body, "      }\n");
  }

  std::string Finish(const std::string& base) const {
    switch (op_) {
      case Op::kAttention: {
        // An attention group also writes the row's lse (at bb * rows + i).
        const bool group = outputs_.size() > 1;
        std::string out = StoreAcc(group ? "out0_" : "out_", base, " / l");
        if (group) {
          absl::StrAppend(&out, "      ",
                          ExprCodegen::StoreTo("out1_", DType::kF32, absl::StrCat("bb * ", rows_, " + i"),
                                               "m + pcp_log(l)"));
        }
        return out;
      }
      case Op::kAttentionLse: return "      " + ExprCodegen::Store(DType::kF32, base, "m + pcp_log(l)");
      case Op::kAttentionGradV: return StoreAcc("out_", base, "");
      default: return StoreAcc("out_", base, " * " + Scale());
    }
  }

  const Function& f_;
  const Instruction& inst_;
  ExprCodegen gen_;
  const Op op_;
  const std::vector<ValueId> outputs_;
  Shape batch_;
  std::vector<std::string> batch_idx_;
  std::string batch_decl_;
  int lanes_ = 1;
  int64_t t_ = 0, d_ = 0, s_ = 0, e_ = 0, cols_ = 1, rows_ = 0, walked_ = 0, tile_ = 1;
  bool by_keys_ = false;
};

}  // namespace

KernelSource AttentionKernelSource(const Function& f, const KernelPlan& plan, const PlannedKernel& k) {
  const Instruction& inst = f.instructions[static_cast<size_t>(k.instruction)];
  return AttentionSource(f, plan, inst, OutputsOf(k)).Build();
}

}  // namespace pcp::vulkan
