// Fused attention's conformance cases (pcp/autodiff/attention.h): each pcp.attention* op on
// every backend against the interpreter's definitions; the CPU backend runs their StableHLO
// expansion, the Vulkan backend its attention kernels. Row counts cross the kernels' blocks of
// 64 rows and their tiles; q, k and v are also read as a GPT's heads (slices and transposes
// of one qkv tensor), and the backward's lse and delta are computed by the case itself.
#include "absl/strings/str_cat.h"
#include "conformance_cases.h"

namespace pcp::conformance {
namespace {

Attributes Attrs(bool causal, double scale) {
  Attributes a;
  a.causal = causal;
  a.scale = scale;
  return a;
}

struct Shapes {
  std::string name;
  Shape batch;
  int64_t t, s, d, e;
  bool causal;
};

Shape With(Shape batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

}  // namespace

std::vector<Case> AttentionCases() {
  using P = const std::vector<ValueId>&;
  std::vector<Case> cases;
  const std::vector<Shapes> shapes = {
      {"causal", {2, 2}, 70, 70, 8, 8, true},
      {"cross", {3}, 5, 37, 4, 6, false},
  };
  for (const Shapes& x : shapes) {
    const Attributes a = Attrs(x.causal, 0.35);
    const int64_t rank = static_cast<int64_t>(x.batch.size()) + 2;
    const std::vector<TensorType> qkvo = {F32(With(x.batch, {x.t, x.d})), F32(With(x.batch, {x.s, x.d})),
                                          F32(With(x.batch, {x.s, x.e})), F32(With(x.batch, {x.t, x.e}))};
    cases.push_back({absl::StrCat("attention_", x.name),
                     Op::kAttention,
                     {qkvo[0], qkvo[1], qkvo[2]},
                     [a](FunctionBuilder& b, P p) {
                       return b.Emit(Op::kAttention, {p[0], p[1], p[2]}, a);
                     },
                     1e-4,
                     1e-5});
    cases.push_back({absl::StrCat("attention_lse_", x.name),
                     Op::kAttentionLse,
                     {qkvo[0], qkvo[1]},
                     [a](FunctionBuilder& b, P p) {
                       return b.Emit(Op::kAttentionLse, {p[0], p[1]}, a);
                     },
                     1e-5,
                     1e-5});
    // The backward's ops on the lse and delta of the forward they differentiate.
    for (Op op : {Op::kAttentionGradQ, Op::kAttentionGradK, Op::kAttentionGradV}) {
      cases.push_back({absl::StrCat(Short(op), "_", x.name), op, qkvo,
                       [a, op, rank](FunctionBuilder& b, P p) {
                         ValueId lse = b.Emit(Op::kAttentionLse, {p[0], p[1]}, a);
                         if (op == Op::kAttentionGradV) return b.Emit(op, {p[0], p[1], lse, p[3]}, a);
                         ValueId o = b.Emit(Op::kAttention, {p[0], p[1], p[2]}, a);
                         ValueId delta = b.ReduceSum(b.Mul(p[3], o), {rank - 1});
                         return b.Emit(op, {p[0], p[1], p[2], lse, delta, p[3]}, a);
                       },
                       1e-4, 1e-5});
    }
  }
  // A GPT's heads: q, k, v are slices of one [B, T, 3C] tensor, reshaped to [B, T, H, D] and
  // transposed to [B, H, T, D]; the output is read back the same way.
  cases.push_back({"attention_gpt_heads",
                   Op::kAttention,
                   {F32({2, 67, 3 * 2 * 8})},
                   [](FunctionBuilder& b, P p) {
                     auto head = [&](int64_t part) {
                       ValueId s = b.Slice(p[0], {0, 0, part * 16}, {2, 67, (part + 1) * 16});
                       return b.Transpose(b.Reshape(s, {2, 67, 2, 8}), {0, 2, 1, 3});
                     };
                     ValueId y = b.Emit(Op::kAttention, {head(0), head(1), head(2)}, Attrs(true, 0.3535533905932738));
                     return b.Reshape(b.Transpose(y, {0, 2, 1, 3}), {2, 67, 16});
                   },
                   1e-4,
                   1e-5});
  return cases;
}

}  // namespace pcp::conformance
